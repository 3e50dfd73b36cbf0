"""Running tool calls on a worker pool without letting a later call overtake
an earlier one whose footprint may overlap it (invariant 4)."""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .effects import EffectClass
from .errors import MissingToolError
from .journal import Journal
from .report import DispatchRecord

__all__ = ["Dispatcher", "Node"]


class _State(enum.Enum):
    GATED = "gated"        # waiting for the gate (verification)
    WAITING = "waiting"    # permitted, waiting for earlier conflicting calls
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"  # retracted before it started


class Node:
    """One call in stream order, from the moment its block closes."""

    __slots__ = ("record", "tool", "state", "deps", "waiters")

    def __init__(self, record: DispatchRecord, tool: Callable[..., Any] | None) -> None:
        self.record = record
        self.tool = tool
        self.state = _State.GATED
        self.deps: set[Node] = set()
        self.waiters: list[Node] = []

    @property
    def started(self) -> bool:
        return self.state in (_State.RUNNING, _State.DONE)

    @property
    def done(self) -> bool:
        return self.state is _State.DONE

    def __repr__(self) -> str:
        return f"Node({self.record.name!r}, {self.state.value}, key={self.record.commit_key})"


class Dispatcher:
    """Schedules calls in stream order over a thread pool.

    Args:
        journal: records an intent before each call and its outcome after.
        max_workers: size of the worker pool.
        ordered: enforce the stream-order rule; only ``eager_unsafe`` turns it off.
    """

    def __init__(self, journal: Journal, *, max_workers: int = 8, ordered: bool = True) -> None:
        self._journal = journal
        self._ordered = ordered
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="inert-tool")
        self._cond = threading.Condition()
        self._live: list[Node] = []   # not retracted, in stream order
        self._in_flight = 0           # permitted and not done

    def register(self, record: DispatchRecord, tool: Callable[..., Any] | None) -> Node:
        """Adds the call of a block that just closed, after every live call."""
        node = Node(record, tool)
        with self._cond:
            if self._ordered:
                for earlier in self._live:
                    if not earlier.done and earlier.record.footprint.conflicts(record.footprint):
                        node.deps.add(earlier)
                        earlier.waiters.append(node)
            self._live.append(node)
        return node

    def permit(self, node: Node, *, early: bool) -> None:
        """Lets ``node`` run as soon as no earlier conflicting call is unfinished."""
        with self._cond:
            if node.state is not _State.GATED:
                return
            node.record.early = early
            node.state = _State.WAITING
            self._in_flight += 1
            if not node.deps:
                self._start(node)

    def confirm(self, node: Node) -> bool:
        """Its block was accepted: lets a gated call go; returns whether it was gated.
        A call permitted early but not started yet will run after acceptance, so
        it no longer counts as early."""
        with self._cond:
            if node.state is _State.WAITING:
                node.record.early = False
            gated = node.state is _State.GATED
        if gated:
            self.permit(node, early=False)
        return gated

    def retract(self, node: Node) -> bool:
        """Takes a rejected block's call out of the stream; returns whether it had started."""
        with self._cond:
            if node in self._live:
                self._live.remove(node)
            for dep in node.deps:
                dep.waiters.remove(node)
            node.deps.clear()
            if node.state in (_State.GATED, _State.WAITING):
                if node.state is _State.WAITING:
                    self._finish_one()
                node.state = _State.CANCELLED
                return False
            return True

    def drain(self) -> None:
        """Waits for every permitted call, then stops the pool."""
        with self._cond:
            self._cond.wait_for(lambda: self._in_flight == 0)
        self._pool.shutdown(wait=True)

    def gated(self) -> list[Node]:
        with self._cond:
            return [n for n in self._live if n.state is _State.GATED]

    # -- internals (called with the lock held) --

    def _start(self, node: Node) -> None:
        node.state = _State.RUNNING
        self._journal.intent(node.record)  # the intent is recorded before the call can run
        self._pool.submit(self._run, node)

    def _finish_one(self) -> None:
        self._in_flight -= 1
        if self._in_flight == 0:
            self._cond.notify_all()

    def _run(self, node: Node) -> None:
        record = node.record
        record.started = time.perf_counter()
        try:
            if node.tool is None:
                raise MissingToolError(f"no callable for tool {record.name!r}; pass it in tools=")
            kwargs = dict(record.arguments)
            if record.effect is EffectClass.IDEMPOTENT:
                kwargs["idempotency_key"] = record.commit_key
            record.result = node.tool(**kwargs)
        except Exception as exc:  # noqa: BLE001 - a tool's failure is its outcome, never the loop's
            record.error = exc
        record.finished = time.perf_counter()
        self._journal.outcome(record)
        with self._cond:
            node.state = _State.DONE
            for waiter in node.waiters:
                waiter.deps.discard(node)
                if waiter.state is _State.WAITING and not waiter.deps:
                    self._start(waiter)
            node.waiters.clear()
            self._finish_one()
