"""Reconciliation: compare what was dispatched with what was accepted, keyed
by the one commit key both sides compute."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from ..canonical import canonical_arguments
from ..effects import EffectClass, Footprint
from ..errors import InertTypeError, InertValueError, RecordedError
from ..report import AcceptedCall, CallResult, DiscardedCall, DispatchRecord, Report, Violation
from .order import out_of_order

__all__ = ["reconcile"]


def record_from_json(r: DispatchRecord | Mapping[str, Any]) -> DispatchRecord:
    """A dispatch record from its JSON form (as traces and foreign logs write it).

    Raises:
        KeyError, TypeError, ValueError: a field is missing or of the wrong type.
    """
    if isinstance(r, DispatchRecord):
        return r
    fp = r.get("footprint") or {}
    if not isinstance(fp, Mapping):
        raise TypeError(f"footprint must be an object with reads and writes, got {type(fp).__name__}")
    return DispatchRecord(
        commit_key=text_field(r["commit_key"], "commit_key"),
        name=text_field(r["name"], "name"),
        arguments=_arguments(r.get("arguments")),
        effect=EffectClass.parse(r.get("effect", EffectClass.WRITE)),
        footprint=Footprint(_keys(fp.get("reads")), _keys(fp.get("writes"))),
        span=_span(r.get("span")),
        early=_flag(r.get("early"), "early"),
        started=_time(r.get("started")),
        finished=_time(r.get("finished")),
        result=r.get("result"),
        error=None if r.get("error") is None else RecordedError(str(r["error"])),
        replayed=_flag(r.get("replayed"), "replayed"),
        discarded=_flag(r.get("discarded"), "discarded"),
        phase=_phase(r.get("phase")),
    )


def time_field(value: Any) -> float:
    """An event's ``t``: a number, never text."""
    t = _time(value)
    if t is None:
        raise TypeError("t must be a number, got null")
    return t


def result_from_json(row: Mapping[str, Any]) -> dict[str, Any]:
    """What a ``result`` event adds to its dispatch's JSON form, each field checked
    whether or not a dispatch matches it.

    Raises:
        KeyError, TypeError, ValueError: a field is missing or of the wrong type.
    """
    error = row.get("error")
    if error is not None and not isinstance(error, str):
        raise TypeError(f"error must be text or null, got {type(error).__name__}")
    return {
        "finished": time_field(row["t"]),
        "replayed": _flag(row.get("replayed"), "replayed"),
        "phase": _phase(row.get("phase")),
        "error": error,
    }


def _phase(value: Any) -> str | None:
    if value is None or value in ("prepare", "commit", "abort"):
        return value  # type: ignore[no-any-return]
    raise ValueError(f"phase must be prepare, commit, abort or null, got {value!r}"[:200])


def accepted_from_json(a: AcceptedCall | Mapping[str, Any]) -> AcceptedCall:
    """An accepted call from its JSON form.

    Raises:
        KeyError, TypeError, ValueError: a field is missing or of the wrong type.
    """
    if isinstance(a, AcceptedCall):
        return a
    return AcceptedCall(
        text_field(a["commit_key"], "commit_key"),
        text_field(a["name"], "name"),
        _arguments(a.get("arguments")),
        _span(a.get("span")),
    )


def _flag(value: Any, field: str) -> bool:
    """A true/false field, false when absent: ``"no"`` or ``1`` is no flag, and reading one as
    true would tell the audit an effect was early (or replayed) when nothing said so."""
    if value is None:
        return False
    if not isinstance(value, bool):
        raise TypeError(f"{field} must be true or false, got {value!r}"[:200])
    return value


def text_field(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{field} must be a string, got {type(value).__name__}")
    return value


def _arguments(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"arguments must be an object, got {type(value).__name__}")
    return dict(value)


def _time(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"a time must be a number, got {type(value).__name__}")
    if not math.isfinite(value):  # JSON's NaN compares false with every time: order checks would pass it
        raise ValueError(f"a time must be a finite number, got {value}")
    return float(value)


def _keys(value: Any) -> frozenset[Any] | None:
    """A footprint side from JSON: a list of keys, or null for unknown."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise TypeError(f"footprint reads and writes must be lists of keys or null, got {type(value).__name__}")
    return frozenset(k if not isinstance(k, (list, dict)) else repr(k) for k in value)


def _span(value: Any) -> tuple[int, int]:
    if value is None:
        return 0, 0
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise TypeError(f"span must be [start, end] token positions, got {value!r}"[:200])
    return value[0], value[1]


def _is_effect(r: DispatchRecord) -> bool:
    return r.executed_effect


def reconcile(
    dispatch_log: Iterable[DispatchRecord | Mapping[str, Any]],
    accepted_stream: Iterable[AcceptedCall | Mapping[str, Any]],
) -> Report:
    """Reconciles a dispatch log with the accepted calls of the same turn.

    Args:
        dispatch_log: every dispatch, with its commit key, effect, footprint and
            start/finish times (``DispatchRecord`` or a dict with those fields).
        accepted_stream: the calls of the accepted stream, in stream order.

    Returns:
        A ``Report`` whose ``violations`` name every orphaned effect, accepted
        call never dispatched, duplicate or diverging dispatch, and pair of
        conflicting accepted calls that ran out of stream order.

    Raises:
        InertTypeError: either argument is not a list (any iterable) of records, or an
            entry is neither a record nor a dict, or a field has the wrong type.
        InertValueError: a dict lacks a field, or a field has a value it cannot hold.
    """
    log = _entries(
        dispatch_log,
        "dispatch_log",
        DispatchRecord,
        record_from_json,
        "DispatchRecord (or a dict with commit_key, name, effect, span, started, finished, ...)",
    )
    accepted = _entries(
        accepted_stream,
        "accepted_stream",
        AcceptedCall,
        accepted_from_json,
        "AcceptedCall (or a dict with commit_key, name, arguments, span)",
    )
    report = Report(dispatch_log=log, accepted=accepted)
    by_key: dict[str, _KeyRecords] = {}
    for r in log:
        if (records := by_key.get(r.commit_key)) is None:
            by_key[r.commit_key] = _KeyRecords(r)
        else:
            records.add(r)
    accepted_keys = {a.commit_key for a in accepted}

    # An effect that ran under an accepted key is that call's effect (see duplicates below).
    orphans = [r for r in log if _is_effect(r) and r.commit_key not in accepted_keys]
    missed = [a for a in accepted if a.commit_key not in by_key]
    moved = _same_call_under_two_keys(orphans, missed)
    paired = {id(r) for r in moved.values()}

    for r in log:
        if r.phase == "prepare" and r.error is None and r.finished is not None:
            report.violations.append(
                Violation(
                    "leaked_prepare",
                    r.name,
                    r.span,
                    r.commit_key,
                    f"two-phase tool {r.name!r} at tokens {r.span} (key {r.commit_key}) was prepared and then neither "
                    "committed nor aborted: what it staged is still held",
                )
            )
        if _is_effect(r):
            if r.commit_key not in accepted_keys and id(r) not in paired:
                report.violations.append(
                    Violation(
                        "orphan",
                        r.name,
                        r.span,
                        r.commit_key,
                        f"orphaned effect: {r.effect.value} tool {r.name!r} ran from tokens {r.span} under key "
                        f"{r.commit_key}, but that block was never accepted; nothing compensates it",
                    )
                )
        elif r.discarded or r.commit_key not in accepted_keys:
            report.discarded.append(DiscardedCall(r.name, r.arguments, r.commit_key, r.span, r.done))

    ran: list[tuple[AcceptedCall, DispatchRecord]] = []
    for a in accepted:
        records = by_key.get(a.commit_key)
        if records is None:
            source = moved.get(id(a))
            if source is not None:
                report.violations.append(
                    Violation(
                        "key_divergence",
                        source.name,
                        a.span,
                        a.commit_key,
                        f"{source.name!r} ran under key {source.commit_key} (tokens {source.span}) but was accepted "
                        f"under key {a.commit_key} (tokens {a.span}): dispatch and the accepted stream keyed the same "
                        "call apart",
                        other_key=source.commit_key,
                    )
                )
            else:
                report.violations.append(
                    Violation(
                        "missed",
                        a.name,
                        a.span,
                        a.commit_key,
                        f"accepted call {a.name!r} at tokens {a.span} (key {a.commit_key}) was never dispatched",
                    )
                )
            continue
        r0 = records.counted
        if records.executed > 1:
            report.violations.append(
                Violation(
                    "duplicate",
                    a.name,
                    a.span,
                    a.commit_key,
                    f"{r0.effect.value} tool {a.name!r} at tokens {a.span} ran {records.executed} times under key "
                    f"{a.commit_key}",
                )
            )
        if r0.name != a.name or r0.arguments != a.arguments:
            report.violations.append(
                Violation(
                    "key_divergence",
                    a.name,
                    a.span,
                    a.commit_key,
                    f"key {a.commit_key} was dispatched as {r0.name}({r0.arguments}) but accepted as "
                    f"{a.name}({a.arguments})",
                )
            )
        ran.append((a, r0))
        report.results.append(
            CallResult(
                a.name, a.arguments, r0.effect, a.commit_key, r0.result, r0.error, r0.early, a.span, a.tool_call_id
            )
        )

    for ea, la in out_of_order(ran):
        report.violations.append(
            Violation(
                "stale_read",
                la.name,
                la.span,
                la.commit_key,
                f"{la.name!r} at tokens {la.span} (key {la.commit_key}) started before the earlier conflicting "
                f"{ea.name!r} at tokens {ea.span} (key {ea.commit_key}) finished: it observed the world out of "
                "stream order",
                other_key=ea.commit_key,
            )
        )
    return report


class _KeyRecords:
    """What reconciliation asks of the dispatches under one key, kept as they are
    added: a stack that reuses one key for every call must not make each accepted
    call rescan all of them."""

    __slots__ = ("executed", "last", "last_live")

    def __init__(self, first: DispatchRecord) -> None:
        self.last = first
        self.last_live: DispatchRecord | None = None
        self.executed = 0
        self.add(first)

    def add(self, r: DispatchRecord) -> None:
        self.last = r
        if not r.discarded:
            self.last_live = r
        if not r.replayed and r.executed_effect:
            self.executed += 1

    @property
    def counted(self) -> DispatchRecord:
        """The dispatch that counts: the last one not discarded (rejected tokens drafted
        again recur a key), else the last."""
        return self.last if self.last_live is None else self.last_live


_Entry = TypeVar("_Entry")


def _entries(
    value: object, what: str, kind: type[_Entry], convert: Callable[[Any], _Entry], shape: str
) -> list[_Entry]:
    """The records of one argument of ``reconcile``, each checked, a mistake named by its index."""
    expected = f"reconcile: {what} must be a list of {shape}"
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        hint = "; wrap a single record in a list" if isinstance(value, (Mapping, kind)) else ""
        raise InertTypeError(f"{expected}, got {type(value).__name__}{hint}")
    out: list[_Entry] = []
    for i, entry in enumerate(value):
        if not isinstance(entry, (kind, Mapping)):
            raise InertTypeError(f"{expected}; {what}[{i}] is {type(entry).__name__}")
        try:
            out.append(convert(entry))
        except KeyError as e:
            raise InertValueError(f"{what}[{i}] has no {e} field; each entry is one {shape}") from None
        except TypeError as e:
            raise InertTypeError(f"{what}[{i}]: {e}"[:300]) from None
        except (ValueError, OverflowError) as e:
            raise InertValueError(f"{what}[{i}]: {e}"[:300]) from None
    return out


def _same_call_under_two_keys(orphans: list[DispatchRecord], missed: list[AcceptedCall]) -> dict[int, DispatchRecord]:
    """Pairs an orphaned effect with a never-dispatched accepted call that is the same
    call (tool and arguments): it ran under one key and was accepted under another,
    so a reconciliation keyed on either cannot see it. Returns id(accepted) -> record."""
    waiting: dict[tuple[str, str], deque[AcceptedCall]] = {}
    for a in missed:
        waiting.setdefault((a.name, canonical_arguments(a.arguments)), deque()).append(a)
    pairs: dict[int, DispatchRecord] = {}
    for r in orphans:
        candidates = waiting.get((r.name, canonical_arguments(r.arguments)))
        if candidates:
            pairs[id(candidates.popleft())] = r
    return pairs
