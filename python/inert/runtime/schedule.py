"""Stream order between conflicting calls (invariant 4), in time linear in the
calls: a call waits only on the latest conflicting calls, never on everyone.

A footprint names the resource keys a call reads and writes, or ``None`` for
"unknown", which overlaps every non-empty footprint. Two calls conflict when an
earlier one's writes meet a later one's reads or writes, or its reads meet the
later one's writes. Known keys are ordered by per-key chains: a call waits for
the key's latest writer, and a writer also for the readers since it; older
calls of the key are reached through those (a retracted call that never ran
stays in its chain as a *ghost* until its own waits are over, so the chain
holds). Unknown footprints are barriers by category: a call that reads
everything waits until no earlier call that writes anything is unfinished,
tracked as the least unfinished sequence number of each category, so a barrier
costs a heap operation, not an edge to every earlier call. Two runs of one
commit key (rejected tokens drafted again) never overlap, whatever the footprint.

The scheduler is plain data: its owner (a runtime) serialises calls to it and
executes what it returns.
"""

from __future__ import annotations

import enum
import heapq
import itertools
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, TypeVar

from ..effects import EffectClass, Footprint
from ..gate import Dispatch

__all__ = ["Node", "Scheduler", "Slots", "State"]

Owner = TypeVar("Owner")
"""What the runtime keeps with each call (its ``CallRun``)."""


class State(enum.Enum):
    GATED = "gated"  # scheduled, not yet permitted to run
    WAITING = "waiting"  # permitted: waits for earlier conflicting calls or a tool slot
    RUNNING = "running"
    PREPARED = "prepared"  # a two-phase call between its phases: holds later calls, no tool slot
    DONE = "done"  # finished (or timed out): no longer holds anyone back
    CANCELLED = "cancelled"  # retracted before it started: it never runs


class Node(Generic[Owner]):
    """One call in stream order, from the moment its block closes."""

    __slots__ = (
        "abandoned",
        "blockers",
        "dispatch",
        "early",
        "ghost",
        "has_slot",
        "key_waiters",
        "owner",
        "recurrences",
        "seq",
        "slot_kept",
        "slot_waits",
        "state",
    )

    def __init__(self, dispatch: Dispatch, seq: int, owner: Owner) -> None:
        self.dispatch = dispatch
        self.seq = seq
        self.owner = owner
        """What the runtime keeps with the call (its tool, outcome, task)."""
        self.state = State.GATED
        self.blockers = 0
        """Earlier conflicting calls (and barriers) this call still waits for."""
        self.key_waiters: list[Node[Owner]] = []
        self.recurrences: list[Node[Owner]] = []
        """Later calls with its commit key (rejected tokens drafted again): they wait until it is
        over, even abandoned, so the journal records its outcome before theirs begins."""
        self.ghost = False
        """Retracted before it ran: it never runs, but holds its chains until its own waits are over."""
        self.abandoned = False
        """A read retracted while it runs: its result is discarded, so it holds no one back."""
        self.early = False
        self.has_slot = False
        """It holds one of its tool's slots (a call starts with one; an abort runs without)."""
        self.slot_kept = False
        """Finished at its deadline while its tool still runs: it keeps its tool slot until the
        tool returns (``give_slot_back``), so a limit guarding a resource holds."""
        self.slot_waits = 0
        """How many times it queued for a slot (tells one wait from the next)."""

    @property
    def bars(self) -> bool:
        """Whether it still counts in its barrier categories: a call that will never run
        does not, since every later call waits for what it needs directly (barriers are
        not chains: they track the least unfinished member, not the latest one)."""
        return self.holds and self.state is not State.CANCELLED

    @property
    def holds(self) -> bool:
        """Whether later conflicting calls must still wait for it."""
        if self.abandoned:
            return False
        return self.state not in (State.DONE, State.CANCELLED) or (self.ghost and self.blockers > 0)

    def __repr__(self) -> str:
        return f"Node({self.dispatch.name!r}, {self.state.value}, seq={self.seq})"


def _touches(keys: frozenset[Any] | None) -> bool:
    return keys is None or bool(keys)


class _Barrier:
    """The unfinished members of one category, and the calls waiting until none
    before them is unfinished. Members and waiters arrive in sequence order."""

    def __init__(self) -> None:
        self._members: list[tuple[int, Node[Any]]] = []  # a heap by sequence; finished ones leave lazily
        self._waiters: deque[Node[Any]] = deque()

    def _least(self) -> int | None:
        while self._members and not self._members[0][1].bars:
            heapq.heappop(self._members)
        return self._members[0][0] if self._members else None

    def join(self, node: Node[Any]) -> None:
        heapq.heappush(self._members, (node.seq, node))

    def wait(self, node: Node[Any]) -> None:
        """Blocks ``node`` while a member before it is unfinished."""
        least = self._least()
        if least is not None and least < node.seq:
            node.blockers += 1
            self._waiters.append(node)

    def released(self) -> list[Node[Any]]:
        """Waiters no longer blocked by this category (call after a member finishes)."""
        least = self._least()
        out = []
        # A waiter is free once no member before it holds (members after it, itself included, never block it).
        while self._waiters and (least is None or self._waiters[0].seq <= least):
            out.append(self._waiters.popleft())
        return out


class Slots:
    """Per-tool limits: how many calls of each tool run, and the calls waiting for a
    slot, first come first served. One per scheduler, or one shared by the schedulers
    of a batch (global limits); whoever serialises the schedulers serialises these."""

    def __init__(self, limits: dict[str, int] | None = None) -> None:
        self._limits = dict(limits or {})
        self._running: dict[str, int] = {}
        self._waiting: dict[str, list[tuple[int, Node[Any]]]] = {}
        self._kept: dict[str, int] = {}  # slots kept by calls past their deadline, their tools still running
        self._arrivals = itertools.count()

    def free(self, tool: str) -> bool:
        limit = self._limits.get(tool)
        return limit is None or self._running.get(tool, 0) < limit

    def take(self, node: Node[Any]) -> None:
        tool = node.dispatch.name
        self._running[tool] = self._running.get(tool, 0) + 1
        node.has_slot = True

    def wait(self, node: Node[Any]) -> None:
        node.slot_waits += 1
        heapq.heappush(self._waiting.setdefault(node.dispatch.name, []), (next(self._arrivals), node))

    def keep(self, node: Node[Any]) -> None:
        """Its call concluded at its deadline while its tool still runs: the slot stays taken."""
        node.slot_kept = True
        self._kept[node.dispatch.name] = self._kept.get(node.dispatch.name, 0) + 1

    def held_past_deadlines(self, tool: str) -> bool:
        """Whether every slot of ``tool`` is taken by a call past its deadline: a call waiting
        for one may wait for ever (a tool that never returns), so its own deadline applies."""
        return not self.free(tool) and self._kept.get(tool, 0) >= self._running.get(tool, 0)

    def release(self, node: Node[Any]) -> list[Node[Any]]:
        """``node`` gives its slot back: the calls that take slots now (marked running)."""
        tool = node.dispatch.name
        if node.slot_kept:
            node.slot_kept = False
            self._kept[tool] -= 1
        node.has_slot = False
        self._running[tool] -= 1
        granted: list[Node[Any]] = []
        waiting = self._waiting.get(tool, [])
        while waiting and self.free(tool):
            waiter = heapq.heappop(waiting)[1]
            if waiter.state is State.WAITING:  # a call cancelled or withdrawn while it waited is skipped
                waiter.state = State.RUNNING
                self.take(waiter)
                granted.append(waiter)
        return granted

    def waiting(self) -> Iterable[Node[Any]]:
        for queue in self._waiting.values():
            yield from (n for _, n in queue)


class Scheduler(Generic[Owner]):
    """Which calls may start, in stream order, under per-tool limits.

    Args:
        ordered: keep stream order between conflicting calls; only ``eager_unsafe`` turns it off.
        limits: tool name -> most calls of it running at once.
        slots: limits shared with other schedulers (a batch's); ``limits`` is then unused.
        on_slot_wait: told of each call that queues for a tool slot (the runtime times the wait).
    """

    def __init__(
        self,
        *,
        ordered: bool = True,
        limits: dict[str, int] | None = None,
        slots: Slots | None = None,
        on_slot_wait: Callable[[Node[Owner]], None] | None = None,
    ) -> None:
        self._ordered = ordered
        self._on_slot_wait = on_slot_wait
        self._slots = slots if slots is not None else Slots(limits)
        self._seq = 0
        self._writer: dict[Hashable, Node[Owner]] = {}
        self._readers: dict[Hashable, list[Node[Owner]]] = {}
        # Categories of unknown footprints (see the module documentation).
        self._writes_all = _Barrier()  # writes unknown: every later touching call waits
        self._reads_all = _Barrier()  # reads unknown: every later writing call waits
        self._writers = _Barrier()  # writes anything: later read-alls wait
        self._touchers = _Barrier()  # touches anything: later write-alls wait
        self._by_key: dict[str, Node[Owner]] = {}  # commit key -> its latest call, while that call holds
        self.in_flight = 0
        """Permitted calls not yet done."""

    @property
    def slots(self) -> Slots:
        """The per-tool limits it schedules under (shared in a batch)."""
        return self._slots

    def add(self, dispatch: Dispatch, owner: Owner) -> Node[Owner]:
        """Places a call that just closed after every call scheduled before it."""
        node = Node(dispatch, self._seq, owner)
        self._seq += 1
        earlier = self._by_key.get(dispatch.commit_key)
        if earlier is not None and (earlier.holds or earlier.state is State.RUNNING):
            # Rejected tokens drafted again recur a key: its runs never overlap, so the earlier
            # (discarded) run's outcome is journaled before the later run begins, never after.
            node.blockers += 1
            earlier.recurrences.append(node)
        self._by_key[dispatch.commit_key] = node
        if self._ordered:
            self._link(node, dispatch.footprint)
        return node

    def permit(self, node: Node[Owner], *, early: bool) -> list[Node[Owner]]:
        """Lets a gated call run once nothing before it holds it back; returns the calls to start now."""
        if node.state is not State.GATED:
            return []
        node.state = State.WAITING
        node.early = early
        self.in_flight += 1
        return self._try_start(node)

    def cancel(self, node: Node[Owner]) -> list[Node[Owner]]:
        """Takes a call that never started out of the stream; returns the calls to start now."""
        if node.state not in (State.GATED, State.WAITING):
            return []
        if node.state is State.WAITING:
            self.in_flight -= 1
        node.state = State.CANCELLED
        node.ghost = True
        if node.blockers == 0:
            return self._released(node)
        return self._unblock(self._barrier_waiters())  # it keeps its chains, but bars no one

    def abandon(self, node: Node[Owner]) -> list[Node[Owner]]:
        """A running read whose block was rejected: nothing will use its result, so later
        conflicting calls need not wait for it (it keeps its tool slot until it returns).
        A two-phase call is never abandoned: its staged prepare may hold what a later
        prepare needs (a lock, a path) until its abort runs. Returns the calls to start now."""
        d = node.dispatch
        if node.state is not State.RUNNING or node.abandoned or d.two_phase or d.effect is not EffectClass.READ_ONLY:
            return []
        node.abandoned = True
        return self._released(node)

    def finish(self, node: Node[Owner], *, keep_slot: bool = False) -> list[Node[Owner]]:
        """A running call finished (or timed out); returns the calls to start now.
        ``keep_slot``: it timed out while its tool still runs, so later calls in stream
        order go on but its tool slot stays taken until ``give_slot_back``."""
        if node.state is not State.RUNNING:
            return []
        node.state = State.DONE
        self.in_flight -= 1
        ready = self._released(node)
        if node.has_slot:
            if keep_slot:
                self._slots.keep(node)
            else:
                ready += self._slots.release(node)
        return ready

    def give_slot_back(self, node: Node[Owner]) -> list[Node[Owner]]:
        """The tool of a call finished at its deadline returned: its slot is free at last.
        Returns the calls to start now (nothing if it kept no slot)."""
        if not node.slot_kept:
            return []
        return self._slots.release(node)

    def withdraw(self, node: Node[Owner], slot_wait: int) -> list[Node[Owner]]:
        """A call gives up its wait for a tool slot (wait number ``slot_wait``) because every
        slot is held by a call past its deadline: it ends without running, and no longer holds
        anyone back. Returns the calls to start now; nothing if that wait is over already."""
        if node.state is not State.WAITING or node.slot_waits != slot_wait or node.blockers > 0:
            return []
        node.state = State.DONE  # the slot queue skips it
        self.in_flight -= 1
        return self._released(node)

    def prepared(self, node: Node[Owner]) -> list[Node[Owner]]:
        """A two-phase call finished its first phase: it gives its tool slot back but still
        holds every later conflicting call until its second phase (commit or abort) ends.
        Returns the calls to start now."""
        if node.state is not State.RUNNING:
            return []
        node.state = State.PREPARED
        return self._slots.release(node) if node.has_slot else []

    def resume(self, node: Node[Owner], *, slot: bool = True) -> list[Node[Owner]]:
        """A prepared call's block was decided: its second phase runs, once a tool slot is free
        if ``slot`` (a commit); an abort drops what was staged without waiting for one (no
        tool that outlives its deadline may hold back a cleanup)."""
        if node.state is not State.PREPARED:
            return []
        node.state = State.WAITING
        return self._try_start(node, slot=slot)

    # -- internals --

    def _link(self, node: Node[Owner], fp: Footprint) -> None:
        waits_on: set[Node[Owner]] = set()
        for key in fp.reads or ():
            writer = self._writer.get(key)
            if writer is not None and writer.holds:
                waits_on.add(writer)
            if fp.writes is None or key not in fp.writes:
                self._readers.setdefault(key, []).append(node)
        for key in fp.writes or ():
            writer = self._writer.get(key)
            if writer is not None and writer.holds:
                waits_on.add(writer)
            waits_on.update(r for r in self._readers.pop(key, ()) if r.holds and r is not node)
            self._writer[key] = node
        waits_on.discard(node)
        for earlier in waits_on:
            node.blockers += 1
            earlier.key_waiters.append(node)
        touches, writes_any = _touches(fp.reads) or _touches(fp.writes), _touches(fp.writes)
        # Waits first, then joins: a call never waits on itself.
        if touches:
            self._writes_all.wait(node)
        if writes_any:
            self._reads_all.wait(node)
        if fp.reads is None:
            self._writers.wait(node)
        if fp.writes is None:
            self._touchers.wait(node)
        if touches:
            self._touchers.join(node)
        if writes_any:
            self._writers.join(node)
        if fp.reads is None:
            self._reads_all.join(node)
        if fp.writes is None:
            self._writes_all.join(node)

    def _released(self, node: Node[Owner]) -> list[Node[Owner]]:
        """``node`` no longer holds anyone: unblocks its waiters; returns the calls to start."""
        freed = node.key_waiters
        node.key_waiters = []
        if node.state is not State.RUNNING:  # an abandoned run goes on: the next run of its key waits
            freed += node.recurrences
            node.recurrences = []
            if self._by_key.get(node.dispatch.commit_key) is node:
                del self._by_key[node.dispatch.commit_key]
        return self._unblock(freed + self._barrier_waiters())

    def _barrier_waiters(self) -> list[Node[Owner]]:
        return [n for b in (self._writes_all, self._reads_all, self._writers, self._touchers) for n in b.released()]

    def _unblock(self, freed: list[Node[Owner]]) -> list[Node[Owner]]:
        ready: list[Node[Owner]] = []
        for waiter in freed:
            waiter.blockers -= 1
            if waiter.blockers == 0:
                if waiter.ghost:
                    ready += self._released(waiter)  # a ghost's waits are over: it lets its own waiters go
                else:
                    ready += self._try_start(waiter)
        return ready

    def _try_start(self, node: Node[Owner], *, slot: bool = True) -> list[Node[Owner]]:
        if node.state is not State.WAITING or node.blockers > 0:
            return []
        if slot:
            if not self._slots.free(node.dispatch.name):
                self._slots.wait(node)
                if self._on_slot_wait is not None:
                    self._on_slot_wait(node)
                return []
            self._slots.take(node)
        node.state = State.RUNNING
        return [node]
