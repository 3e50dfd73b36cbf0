"""`inert audit`: rebuild a turn's dispatched and accepted streams from a
trace and name every divergence between them."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .errors import InertValueError
from .reconcile import accepted_from_json, reconcile, record_from_json
from .report import AcceptedCall, DispatchRecord, Report, Violation
from .trace import read_trace

__all__ = ["TurnAudit", "audit"]


@dataclass
class TurnAudit:
    """One turn of a trace, reconciled."""

    turn: str
    report: Report

    @property
    def dispatched(self) -> list[DispatchRecord]:
        """The dispatched stream's calls, in the order they started."""
        return self.report.dispatch_log

    @property
    def accepted(self) -> list[AcceptedCall]:
        """The accepted stream's calls, in stream order."""
        return self.report.accepted

    @property
    def findings(self) -> list[Violation]:
        return self.report.violations


@dataclass
class _TurnEvents:
    """What a trace says of one turn, gathered as its events are read."""

    name: str
    order: list[DispatchRecord] = field(default_factory=list)
    by_key: dict[str, list[DispatchRecord]] = field(default_factory=dict)
    accepted: list[AcceptedCall] = field(default_factory=list)


def audit(path: str | os.PathLike[str]) -> list[TurnAudit]:
    """Audits every turn in a trace file. The accepted stream of a turn is its
    ``call_committed`` events: the core has already folded each call's life.
    A ``turn_start`` for a turn key seen before starts a new run of it (traces
    appended by several runs), audited apart as ``KEY#2``, ``KEY#3``, ...

    Raises:
        InertValueError: the file is not an ``inert.trace/2`` trace.
    """
    turns: list[_TurnEvents] = []
    current: dict[str, _TurnEvents] = {}
    for row in read_trace(path):
        key = str(row.get("turn", ""))
        event = row.get("event")
        if key not in current or (event == "turn_start" and current[key].order + current[key].accepted):
            runs = sum(t.name.split("#")[0] == key for t in turns)
            current[key] = _TurnEvents(key if runs == 0 else f"{key}#{runs + 1}")
            turns.append(current[key])
        turn = current[key]
        try:
            if event == "dispatch":
                record = record_from_json({**row, "started": float(row["t"]), "finished": None})
                turn.order.append(record)
                turn.by_key.setdefault(record.commit_key, []).append(record)
            elif event == "discard":
                for record in turn.by_key.get(row["commit_key"], []):
                    record.discarded = True
            elif event == "result":
                for record in turn.by_key.get(row["commit_key"], []):
                    if record.finished is None:
                        record.finished = float(row["t"])
                        record.replayed = bool(row.get("replayed", False))
                        break
            elif event == "call_committed":
                turn.accepted.append(accepted_from_json(row))
        except (KeyError, TypeError, ValueError) as e:
            raise InertValueError(f"{os.fspath(path)}: a {event!r} event of turn {row.get('turn')!r} lacks a field "
                                  f"or has a bad one: {e}") from None
    return [TurnAudit(t.name, reconcile(t.order, t.accepted)) for t in turns]
