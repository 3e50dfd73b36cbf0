"""`inert audit`: rebuild a turn's dispatched and accepted streams from a
trace and name every divergence between them."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

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
    dispatched: list[DispatchRecord] = field(default_factory=list)
    accepted: list[AcceptedCall] = field(default_factory=list)

    @property
    def findings(self) -> list[Violation]:
        return self.report.violations


def audit(path: str | os.PathLike[str]) -> list[TurnAudit]:
    """Audits every turn in a trace file.

    Raises:
        InertValueError: the file is not an ``inert.trace/1`` trace.
    """
    turns: dict[str, dict[str, Any]] = {}
    for row in read_trace(path):
        turn = turns.setdefault(str(row.get("turn", "")), {"dispatch": {}, "order": [], "closed": {}, "accepted": []})
        event = row.get("event")
        try:
            if event == "dispatch":
                record = record_from_json({**row, "started": float(row["t"]), "finished": None})
                turn["order"].append(record)
                turn["dispatch"].setdefault(record.commit_key, []).append(record)
            elif event == "discard":
                for record in turn["dispatch"].get(row["commit_key"], []):
                    record.discarded = True
            elif event == "result":
                for record in turn["dispatch"].get(row["commit_key"], []):
                    if record.finished is None:
                        record.finished = float(row["t"])
                        record.replayed = bool(row.get("replayed", False))
                        break
            elif event == "block":
                kind, block = row["kind"], row["block"]
                if kind == "closed":
                    turn["closed"].setdefault(block, []).append(row)
                elif kind == "malformed":
                    turn["closed"][block] = []
                elif kind == "retracted":
                    turn["closed"].pop(block, None)
                elif kind == "accepted":
                    turn["accepted"] += [accepted_from_json(c) for c in turn["closed"].pop(block, [])]
        except (KeyError, TypeError, ValueError) as e:
            raise InertValueError(f"{os.fspath(path)}: a {event!r} event of turn {row.get('turn')!r} lacks a field or has a bad one: {e}") from None
    out = []
    for name, turn in turns.items():
        report = reconcile(turn["order"], turn["accepted"])
        out.append(TurnAudit(name, report, turn["order"], turn["accepted"]))
    return out
