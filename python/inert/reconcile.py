"""Reconciliation: compare what was dispatched with what was accepted, keyed
by the one commit key both sides compute."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .effects import EffectClass, Footprint
from .canonical import canonical_arguments
from .report import AcceptedCall, CallResult, DiscardedCall, DispatchRecord, Report, Violation

__all__ = ["reconcile"]


def record_from_json(r: DispatchRecord | Mapping[str, Any]) -> DispatchRecord:
    """A dispatch record from its JSON form (as traces and foreign logs write it)."""
    if isinstance(r, DispatchRecord):
        return r
    fp = r.get("footprint") or {}
    return DispatchRecord(
        commit_key=r["commit_key"],
        name=r["name"],
        arguments=dict(r.get("arguments") or {}),
        effect=EffectClass.parse(r.get("effect", EffectClass.WRITE)),
        footprint=Footprint(_keys(fp.get("reads")), _keys(fp.get("writes"))),
        span=_span(r.get("span")),
        early=bool(r.get("early", False)),
        started=r.get("started"),
        finished=r.get("finished"),
        result=r.get("result"),
        error=r.get("error"),
        replayed=bool(r.get("replayed", False)),
        discarded=bool(r.get("discarded", False)),
    )


def accepted_from_json(a: AcceptedCall | Mapping[str, Any]) -> AcceptedCall:
    """An accepted call from its JSON form."""
    if isinstance(a, AcceptedCall):
        return a
    return AcceptedCall(a["commit_key"], a["name"], dict(a.get("arguments") or {}), _span(a.get("span")))


def _keys(value: Iterable[Any] | None) -> frozenset[Any] | None:
    """A footprint side from JSON: a list of keys, or null for unknown."""
    return None if value is None else frozenset(value)


def _span(value: Any) -> tuple[int, int]:
    start, end = value if value is not None else (0, 0)
    return int(start), int(end)


def _is_effect(r: DispatchRecord) -> bool:
    return r.effect is not EffectClass.READ_ONLY


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
    """
    log = [record_from_json(r) for r in dispatch_log]
    accepted = [accepted_from_json(a) for a in accepted_stream]
    report = Report(dispatch_log=log, accepted=accepted)
    by_key: dict[str, list[DispatchRecord]] = {}
    for r in log:
        by_key.setdefault(r.commit_key, []).append(r)
    accepted_keys = {a.commit_key for a in accepted}

    # An effect that ran under an accepted key is that call's effect (see duplicates below).
    orphans = [r for r in log if _is_effect(r) and r.commit_key not in accepted_keys]
    missed = [a for a in accepted if a.commit_key not in by_key]
    moved = _same_call_under_two_keys(orphans, missed)
    paired = {id(r) for r in moved.values()}

    for r in log:
        if _is_effect(r):
            if r.commit_key not in accepted_keys and id(r) not in paired:
                report.violations.append(Violation(
                    "orphan", r.name, r.span, r.commit_key,
                    f"orphaned effect: {r.effect.value} tool {r.name!r} ran from tokens {r.span} under key "
                    f"{r.commit_key}, but that block was never accepted; nothing compensates it",
                ))
        elif r.discarded or r.commit_key not in accepted_keys:
            report.discarded.append(DiscardedCall(r.name, r.arguments, r.commit_key, r.span, r.done))

    ran: list[tuple[AcceptedCall, DispatchRecord]] = []
    for a in accepted:
        records = by_key.get(a.commit_key, [])
        if not records:
            source = moved.get(id(a))
            if source is not None:
                report.violations.append(Violation(
                    "key_divergence", source.name, a.span, a.commit_key,
                    f"{source.name!r} ran under key {source.commit_key} (tokens {source.span}) but was accepted under "
                    f"key {a.commit_key} (tokens {a.span}): dispatch and the accepted stream keyed the same call apart",
                    other_key=source.commit_key,
                ))
            else:
                report.violations.append(Violation(
                    "missed", a.name, a.span, a.commit_key,
                    f"accepted call {a.name!r} at tokens {a.span} (key {a.commit_key}) was never dispatched",
                ))
            continue
        # The dispatch that counts: the last one not discarded (rejected tokens drafted again recur a key).
        live = [x for x in records if not x.discarded] or records
        r0 = live[-1]
        executed = [x for x in records if not x.replayed]
        if len(executed) > 1 and _is_effect(r0):
            report.violations.append(Violation(
                "duplicate", a.name, a.span, a.commit_key,
                f"{r0.effect.value} tool {a.name!r} at tokens {a.span} ran {len(executed)} times under key "
                f"{a.commit_key}",
            ))
        if r0.name != a.name or r0.arguments != a.arguments:
            report.violations.append(Violation(
                "key_divergence", a.name, a.span, a.commit_key,
                f"key {a.commit_key} was dispatched as {r0.name}({r0.arguments}) but accepted as "
                f"{a.name}({a.arguments})",
            ))
        ran.append((a, r0))
        report.results.append(
            CallResult(a.name, a.arguments, r0.effect, a.commit_key, r0.result, r0.error, r0.early, a.span))

    for i, (ea, er) in enumerate(ran):
        for la, lr in ran[i + 1:]:
            if lr is er:
                continue  # one dispatch accepted twice (a key recurring): a call never races itself
            if er.footprint.conflicts(lr.footprint) and _overtook(er, lr):
                report.violations.append(Violation(
                    "stale_read", la.name, la.span, la.commit_key,
                    f"{la.name!r} at tokens {la.span} (key {la.commit_key}) started before the earlier conflicting "
                    f"{ea.name!r} at tokens {ea.span} (key {ea.commit_key}) finished: it observed the world out of "
                    "stream order",
                    other_key=ea.commit_key,
                ))
    return report


def _same_call_under_two_keys(orphans: list[DispatchRecord], missed: list[AcceptedCall]) -> dict[int, DispatchRecord]:
    """Pairs an orphaned effect with a never-dispatched accepted call that is the same
    call (tool and arguments): it ran under one key and was accepted under another,
    so a reconciliation keyed on either cannot see it. Returns id(accepted) -> record."""
    waiting: dict[tuple[str, str], list[AcceptedCall]] = {}
    for a in missed:
        waiting.setdefault((a.name, canonical_arguments(a.arguments)), []).append(a)
    pairs: dict[int, DispatchRecord] = {}
    for r in orphans:
        candidates = waiting.get((r.name, canonical_arguments(r.arguments)))
        if candidates:
            pairs[id(candidates.pop(0))] = r
    return pairs


def _overtook(earlier: DispatchRecord, later: DispatchRecord) -> bool:
    if later.started is None:
        return False
    return earlier.finished is None or later.started < earlier.finished
