"""What ran against what was accepted: reconciliation, traces (``inert.trace/2``)
and ``inert audit``."""

from .order import out_of_order
from .reconcile import accepted_from_json, reconcile, record_from_json
from .trace import SCHEMA, TraceWriter, read_trace
from .turns import TurnAudit, audit

__all__ = [
    "SCHEMA",
    "TraceWriter",
    "TurnAudit",
    "accepted_from_json",
    "audit",
    "out_of_order",
    "read_trace",
    "reconcile",
    "record_from_json",
]
