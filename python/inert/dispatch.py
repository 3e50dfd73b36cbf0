"""Running tool calls on a worker pool without letting a later call overtake
an earlier one whose footprint may overlap it (invariant 4), with per-tool
concurrency limits, per-call timeouts, and the journal around every call."""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .effects import EffectClass
from .errors import InDoubtError, MissingToolError, ReplayedError, ToolTimeoutError
from .journal import ERROR, OK, TIMEOUT, Journal, JournalEntry
from .report import DispatchRecord
from .telemetry import tool_span
from .trace import TraceWriter

__all__ = ["Dispatcher", "Node", "ThreadDispatcher"]


class _State(enum.Enum):
    GATED = "gated"        # waiting for the gate (verification)
    WAITING = "waiting"    # permitted, waiting for earlier conflicting calls or a tool slot
    RUNNING = "running"
    FINISHING = "finishing"  # its outcome is being journaled; later calls still wait
    DONE = "done"
    CANCELLED = "cancelled"  # retracted before it started


class Node:
    """One call in stream order, from the moment its block closes."""

    __slots__ = ("deps", "record", "state", "task", "timeout", "timer", "tool", "waiters")

    def __init__(self, record: DispatchRecord, tool: Callable[..., Any] | None, timeout: float | None) -> None:
        self.record = record
        self.tool = tool
        self.state = _State.GATED
        self.deps: set[Node] = set()
        self.waiters: list[Node] = []
        self.timeout = timeout
        self.timer: threading.Timer | None = None
        self.task: Any = None  # the asyncio task running it, under AsyncDispatcher

    @property
    def started(self) -> bool:
        return self.state in (_State.RUNNING, _State.FINISHING, _State.DONE)

    @property
    def done(self) -> bool:
        return self.state is _State.DONE

    def __repr__(self) -> str:
        return f"Node({self.record.name!r}, {self.state.value}, key={self.record.commit_key})"


def replay(record: DispatchRecord, prior: JournalEntry) -> bool:
    """Fills ``record`` from an earlier journal entry of its key; returns whether
    the tool runs anyway (a read or an idempotent call in doubt: safe to repeat).
    A key recurs after a restart, or when rejected draft tokens are drafted again."""
    record.replayed = True
    if prior.status == OK:
        record.result = prior.result
        return False
    if prior.in_doubt:
        if record.effect is not EffectClass.WRITE:
            return True  # a read, or an idempotent call with its key: safe to run again
        record.error = InDoubtError(
            f"{record.name!r} under key {record.commit_key} was journaled without an outcome: it may have run "
            "before a crash, so it is not run again; resolve it with `inert recover`"
        )
        return False
    record.error = ReplayedError(f"{record.name!r} under key {record.commit_key} already failed: {prior.error}")
    return False


class Dispatcher:
    """Schedules calls in stream order; subclasses say how a call is run
    (``ThreadDispatcher``: a thread pool; ``AsyncDispatcher``: asyncio tasks).

    Args:
        journal: records an intent before each call and its outcome after.
        turn_key: the turn the calls belong to, for the journal.
        ordered: enforce the stream-order rule; only ``eager_unsafe`` turns it off.
        limits: tool name -> most calls of it running at once.
        trace: receives a ``dispatch`` event as each call starts and a ``result`` as it ends.
    """

    def __init__(self, journal: Journal, turn_key: str, *, ordered: bool = True,
                 limits: Mapping[str, int] | None = None, trace: TraceWriter | None = None) -> None:
        self._journal = journal
        self._trace = trace
        self.clock: Callable[[], float] = time.perf_counter
        """Where start and finish times come from (a simulation swaps in virtual time)."""
        self._turn_key = turn_key
        self._ordered = ordered
        self._limits = dict(limits or {})
        self._running: dict[str, int] = {}
        self._cond = threading.Condition()
        self._live: list[Node] = []   # not retracted, in stream order
        self._in_flight = 0           # permitted and not finished
        self._abandoned = False       # a timed-out tool may still hold a worker
        self.log: list[DispatchRecord] = []
        """This dispatcher's calls, in the order they started."""

    def register(self, record: DispatchRecord, tool: Callable[..., Any] | None, timeout: float | None = None) -> Node:
        """Adds the call of a block that just closed, after every live call."""
        node = Node(record, tool, timeout)
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
            self._start_ready()

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
            node.record.discarded = True
            return True

    # -- internals (called with the lock held) --

    def _start_ready(self) -> None:
        for node in self._live:
            if node.state is _State.WAITING and not node.deps and self._slot_free(node.record.name):
                self._start(node)

    def _slot_free(self, tool: str) -> bool:
        limit = self._limits.get(tool)
        return limit is None or self._running.get(tool, 0) < limit

    def _start(self, node: Node) -> None:
        node.state = _State.RUNNING
        self._running[node.record.name] = self._running.get(node.record.name, 0) + 1
        self.log.append(node.record)
        self._launch(node)

    def _launch(self, node: Node) -> None:
        """Starts running ``node`` (called with the lock held)."""
        raise NotImplementedError

    def _finish_one(self) -> None:
        self._in_flight -= 1
        if self._in_flight == 0:
            self._cond.notify_all()
            self._idle()

    def _idle(self) -> None:
        """Every permitted call has finished (called with the lock held)."""

    def _release(self, node: Node) -> None:
        """``node`` finished (or timed out): later conflicting calls may go."""
        node.state = _State.DONE
        self._running[node.record.name] -= 1
        for waiter in node.waiters:
            waiter.deps.discard(node)
        node.waiters.clear()
        self._finish_one()
        self._start_ready()

    # -- the steps of one call, shared by the runners --

    def _begin(self, node: Node) -> bool:
        """Journals the intent (or finds the key's earlier entry); returns whether
        the tool must run. Raises what the journal raises (a key conflict)."""
        record = node.record
        record.started = self.clock()
        if self._trace is not None:
            self._trace.dispatch(record)
        prior = self._journal.begin(record, self._turn_key)  # the intent is on record before the call
        return prior is None or replay(record, prior)

    def _kwargs(self, node: Node) -> dict[str, Any]:
        if node.tool is None:
            raise MissingToolError(f"no callable for tool {node.record.name!r}; pass it in tools=")
        kwargs = dict(node.record.arguments)
        if node.record.effect is EffectClass.IDEMPOTENT:
            kwargs["idempotency_key"] = node.record.commit_key
        return kwargs

    def _settle(self, node: Node, result: Any, error: BaseException | None, *, timed_out: bool = False) -> bool:
        """Fixes the outcome unless the call already timed out (or returned); returns whether it did."""
        with self._cond:
            if node.timer is not None:
                node.timer.cancel()
            if node.state is not _State.RUNNING:
                return False  # timed out: the late outcome is not trusted, the journal says in doubt
            node.state = _State.FINISHING
            node.record.result, node.record.error = result, error
            node.record.finished = self.clock()
            node.record.timed_out = timed_out
            self._abandoned |= timed_out
            return True

    def _conclude(self, node: Node, status: str | None) -> None:
        """Journals the outcome with ``status`` (none when an earlier call of the key owns
        it), before the call counts as finished; then lets later calls go."""
        if status is not None:
            self._journal.complete(node.record, status)
        if self._trace is not None:
            self._trace.result(node.record)
        with self._cond:
            self._release(node)

    def _finish(self, node: Node, result: Any, error: BaseException | None, owns_outcome: bool) -> None:
        """The call returned (or raised): settle and conclude it."""
        if self._settle(node, result, error):
            self._conclude(node, (OK if error is None else ERROR) if owns_outcome else None)

    def _time_out(self, node: Node) -> bool:
        """Records ``node`` as timed out, unless it already finished; returns whether it did."""
        error = ToolTimeoutError(f"{node.record.name!r} did not return within {node.timeout} s; its effect is in doubt")
        if not self._settle(node, None, error, timed_out=True):
            return False
        self._conclude(node, TIMEOUT)
        return True


class ThreadDispatcher(Dispatcher):
    """Runs calls on a pool of ``max_workers`` threads; a timed-out call's thread is abandoned."""

    def __init__(self, journal: Journal, turn_key: str, *, max_workers: int = 8, ordered: bool = True,
                 limits: Mapping[str, int] | None = None, trace: TraceWriter | None = None) -> None:
        super().__init__(journal, turn_key, ordered=ordered, limits=limits, trace=trace)
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="inert-tool")

    def drain(self) -> None:
        """Waits for every permitted call (a timed-out one counts as finished), then stops the pool."""
        with self._cond:
            self._cond.wait_for(lambda: self._in_flight == 0)
            abandoned = self._abandoned
        self._pool.shutdown(wait=not abandoned)

    def _launch(self, node: Node) -> None:
        if node.timeout is not None:
            node.timer = threading.Timer(node.timeout, self._time_out, (node,))
            node.timer.daemon = True
            node.timer.start()
        self._pool.submit(self._run, node)

    def _run(self, node: Node) -> None:
        result, error, owns_outcome = None, None, False
        try:
            owns_outcome = self._begin(node)
            if owns_outcome:
                with tool_span(node.record) as span:
                    result = span.result = node.tool(**self._kwargs(node))  # type: ignore[misc]
            else:
                result, error = node.record.result, node.record.error
        except Exception as exc:  # noqa: BLE001 - a tool's failure is its outcome, never the loop's
            error = exc
        self._finish(node, result, error, owns_outcome)
