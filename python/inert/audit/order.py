"""Which accepted calls observed the world out of stream order: a later call
that started before an earlier conflicting call had finished.

Linear in the calls (times the keys each names): per key, the earlier reader
and writer that finished last; per category of unknown footprint (reads
everything, writes everything, writes anything, touches anything), the
earlier member that finished last. A later call is checked against the few
candidates its footprint conflicts with, never against every earlier call.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from typing import TypeVar

from ..report import DispatchRecord

__all__ = ["out_of_order"]

T = TypeVar("T")


def _finish(r: DispatchRecord) -> float:
    return math.inf if r.finished is None else r.finished  # never finished: it holds everyone after it


class _Latest:
    """The member that finished last, of some set of earlier calls."""

    __slots__ = ("item", "record")

    def __init__(self) -> None:
        self.item: object | None = None
        self.record: DispatchRecord | None = None

    def offer(self, item: object, record: DispatchRecord) -> None:
        if self.record is None or _finish(record) > _finish(self.record):
            self.item, self.record = item, record


def out_of_order(ran: Iterable[tuple[T, DispatchRecord]]) -> list[tuple[T, T]]:
    """Pairs ``(earlier, later)`` of accepted calls, in stream order, where ``later``
    started before the conflicting ``earlier`` finished: for each later call, the
    earlier conflicting one that finished last. A dispatch accepted twice (a key
    recurring) is never compared with itself."""
    writers: dict[Hashable, _Latest] = {}
    readers: dict[Hashable, _Latest] = {}
    writes_all, reads_all, writes_any, touches = _Latest(), _Latest(), _Latest(), _Latest()
    found: list[tuple[T, T]] = []
    for item, r in ran:
        fp = r.footprint
        reads_some = fp.reads is None or bool(fp.reads)
        writes_some = fp.writes is None or bool(fp.writes)
        candidates: list[_Latest] = []
        for key in fp.reads or ():
            candidates.append(writers.get(key, _Latest()))
        for key in fp.writes or ():
            candidates += [writers.get(key, _Latest()), readers.get(key, _Latest())]
        if reads_some or writes_some:
            candidates.append(writes_all)
        if writes_some:
            candidates.append(reads_all)
        if fp.reads is None:
            candidates.append(writes_any)
        if fp.writes is None:
            candidates.append(touches)
        worst = _Latest()
        for c in candidates:
            if c.record is not None and c.record is not r:
                worst.offer(c.item, c.record)
        if worst.record is not None and r.started is not None and r.started < _finish(worst.record):
            found.append((worst.item, item))  # type: ignore[arg-type]  # items offered are T
        for key in fp.reads or ():
            readers.setdefault(key, _Latest()).offer(item, r)
        for key in fp.writes or ():
            writers.setdefault(key, _Latest()).offer(item, r)
        if fp.writes is None:
            writes_all.offer(item, r)
        if fp.reads is None:
            reads_all.offer(item, r)
        if writes_some:
            writes_any.offer(item, r)
        if reads_some or writes_some:
            touches.offer(item, r)
    return found
