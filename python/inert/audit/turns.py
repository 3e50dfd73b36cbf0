"""`inert audit`: rebuild a turn's dispatched and accepted streams from a
trace and name every divergence between them."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import InertValueError, describe
from ..report import AcceptedCall, DispatchRecord, Report, Violation
from .reconcile import accepted_from_json, reconcile, record_from_json, result_from_json
from .schema import EVENTS, check_event
from .trace import SCHEMA, read_trace

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
        """Where what ran diverges from the accepted stream (orphans, missed calls...): empty when clean."""
        return self.report.violations


@dataclass
class _KeyDispatches:
    """The dispatches of one commit key, in order. A result goes to the first one not
    finished and a discard marks every one so far; both only move forward, so each keeps
    where it got to and a key drafted again and again costs linear time, not quadratic."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    finished: int = 0  # rows[:finished] have their result
    discarded: int = 0  # rows[:discarded] are marked discarded

    def result(self, result: dict[str, Any]) -> None:
        if self.finished < len(self.rows):
            self.rows[self.finished].update(result)
            self.finished += 1

    def discard(self) -> None:
        for row in self.rows[self.discarded :]:
            row["discarded"] = True
        self.discarded = len(self.rows)


@dataclass
class _TurnEvents:
    """What a trace says of one turn, gathered as its events are read. Dispatches
    stay JSON rows until the turn is read whole: records are immutable."""

    name: str
    order: list[dict[str, Any]] = field(default_factory=list)
    by_key: dict[str, _KeyDispatches] = field(default_factory=dict)
    accepted: list[AcceptedCall] = field(default_factory=list)

    def report(self) -> Report:
        return reconcile([record_from_json(r) for r in self.order], self.accepted)


def audit(path: str | os.PathLike[str]) -> list[TurnAudit]:
    """Audits every turn in a trace file. The accepted stream of a turn is its
    ``call_committed`` events: the core has already folded each call's life.
    A ``turn_start`` for a turn key seen before starts a new run of it (traces
    appended by several runs), audited apart as ``KEY#2``, ``KEY#3``, ...

    Raises:
        InertValueError: the file is not an ``inert.trace/2`` trace, or an event lacks
            a field or has one of the wrong type (the message names the line).
    """
    turns: list[_TurnEvents] = []
    current: dict[str, _TurnEvents] = {}
    runs: dict[str, int] = {}
    names: set[str] = set()
    where = os.fspath(path)
    for n, row in read_trace(path):
        key, event = row.get("turn"), row.get("event")
        if not isinstance(key, str) or not isinstance(event, str):
            raise InertValueError(
                f'{where}:{n}: an event needs a "turn" (the turn key) and an "event", both '
                f"strings; got {key!r} and {event!r}"[:300]
            )
        if (shape := EVENTS.get(event)) is None:
            raise InertValueError(f"{where}:{n}: {event[:100]!r} is no {SCHEMA} event (one of {', '.join(EVENTS)})")
        try:
            check_event(shape, row)
            if key not in current or (event == "turn_start" and (current[key].order or current[key].accepted)):
                current[key] = _TurnEvents(_run_name(key, runs, names))
                turns.append(current[key])
            _gather(current[key], event, row)
        except (KeyError, TypeError, ValueError, OverflowError) as e:
            raise InertValueError(
                f"{where}:{n}: a {event!r} event of turn {key!r} lacks a field or has a bad one: {_short(e)}"
            ) from None
    if not turns:
        raise InertValueError(f"{where}: no {SCHEMA} events: nothing to audit (an empty file, or the wrong one)")
    return [TurnAudit(t.name, t.report()) for t in turns]


def _run_name(key: str, runs: dict[str, int], names: set[str]) -> str:
    """The name of a new run of turn ``key``: ``key`` itself, then ``KEY#2``, ... past any
    name the file already spells that way."""
    runs[key] = runs.get(key, 0) + 1
    name = key if runs[key] == 1 else f"{key}#{runs[key]}"
    while name in names:  # a turn key that is itself spelled KEY#N
        runs[key] += 1
        name = f"{key}#{runs[key]}"
    names.add(name)
    return name


def _gather(turn: _TurnEvents, event: str, row: dict[str, Any]) -> None:
    """Adds what one checked event says to its turn: the audit reads dispatches, results,
    discards and commits; every other event was checked and says nothing it needs."""
    if event == "dispatch":
        dispatch = {**row, "started": row["t"], "finished": None}
        record_from_json(dispatch)  # the record is made at the end: fail on this line instead
        turn.order.append(dispatch)
        turn.by_key.setdefault(row["commit_key"], _KeyDispatches()).rows.append(dispatch)
    elif event == "discard":
        if (dispatches := turn.by_key.get(row["commit_key"])) is not None:
            dispatches.discard()
    elif event == "result":
        result = result_from_json(row)
        if (dispatches := turn.by_key.get(row["commit_key"])) is not None:
            dispatches.result(result)
    elif event == "call_committed":
        turn.accepted.append(accepted_from_json(row))


def _short(e: BaseException) -> str:
    text = describe(e) if not isinstance(e, KeyError) else f"missing field {e}"
    return text if len(text) <= 200 else text[:200] + "…"
