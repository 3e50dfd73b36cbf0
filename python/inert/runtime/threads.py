"""Running calls on worker threads: the runtime of ``Orchestrator``.

It executes the gate's commands: a scheduled call takes its place in stream
order, a permitted one starts when nothing before it holds it back, and each
call is journaled around its tool. A call past its deadline is recorded with
``ToolTimeoutError`` and its effect is in doubt; later calls go on at the
deadline, and its worker is abandoned (never joined: see ``pool.py``).
"""

from __future__ import annotations

import inspect
import threading
from functools import partial
import time
from collections.abc import Callable
from typing import Any

from ..errors import ToolTimeoutError
from ..gate import Dispatch
from ..journal import Journal
from ..report import DispatchRecord
from ..telemetry import tool_span
from ..audit.trace import TraceWriter
from .call import CallRun, stored_outcome
from .pool import Deadlines, WorkerPool
from .schedule import Node, Scheduler, State
from .tools import Invocation

__all__ = ["ThreadRuntime"]


class ThreadRuntime:
    """Runs one turn's calls on a pool of daemon threads.

    Args:
        journal: records an intent before each call and its outcome after.
        turn_key: the turn the calls belong to, for the journal.
        ordered: keep stream order between conflicting calls (off only for ``eager_unsafe``).
        limits: tool name -> most calls of it running at once.
        max_workers: calls running at once.
        trace: receives ``dispatch``, ``result`` and ``discard`` events.
    """

    def __init__(self, journal: Journal, turn_key: str, *, ordered: bool = True, limits: dict[str, int] | None = None,
                 max_workers: int = 8, trace: TraceWriter | None = None) -> None:
        self._journal = journal
        self._turn_key = turn_key
        self._trace = trace
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._scheduler = Scheduler(ordered=ordered, limits=limits)
        self._pool = WorkerPool(max_workers)
        self._deadlines = Deadlines()
        self._log: list[CallRun] = []  # in the order the calls started
        self.clock: Callable[[], float] = time.perf_counter

    # -- the gate's commands --

    def schedule(self, dispatch: Dispatch, invocation: Invocation | None, *, permit: bool) -> Node:
        """A call closed: it takes its place in stream order, and runs now if ``permit``."""
        with self._lock:
            node = self._scheduler.add(dispatch, CallRun(dispatch, invocation))
            if permit:
                self._start(self._scheduler.permit(node, early=True))
        return node

    def confirm(self, node: Node) -> None:
        """Its block was accepted: it runs if it has not been let go yet. A call let go
        early that has not started yet will run after acceptance: it is no longer early."""
        with self._lock:
            if node.state is State.WAITING:
                node.early = False
            self._start(self._scheduler.permit(node, early=False))

    def retract(self, node: Node) -> None:
        """Its block was rejected: it never runs, or, if it started, never counts."""
        with self._lock:
            run: CallRun = node.owner
            if node.state in (State.GATED, State.WAITING):
                self._start(self._scheduler.cancel(node))
                self._notify_if_idle()
                return
            run.discarded = True
            record = run.record()
        if self._trace is not None:
            self._trace.discard(record)

    def drain(self) -> None:
        """Waits until every permitted call is concluded (a timed-out one counts), then
        stops the workers."""
        with self._idle:
            self._idle.wait_for(lambda: self._scheduler.in_flight == 0)
        self._deadlines.close()
        self._pool.shutdown()

    def records(self) -> list[DispatchRecord]:
        """Every call that started, in start order."""
        with self._lock:
            return [run.record() for run in self._log]

    # -- running a call --

    def _start(self, nodes: list[Node]) -> None:
        """Launches calls the scheduler started (called with the lock held)."""
        for node in nodes:
            self._launch(node)
            self._pool.submit(self._work, node)

    def _launch(self, node: Node) -> None:
        """A call starts: its start time, its place in the log, its deadline (lock held)."""
        run: CallRun = node.owner
        run.early = node.early
        run.started = self.clock()
        self._log.append(run)
        if self._trace is not None:
            self._trace.dispatch(run.record())
        timeout = run.dispatch.timeout
        if timeout is not None:
            self._deadlines.add(timeout, partial(self._time_out, node))

    def _work(self, node: Node | None) -> None:
        """A worker runs a call, then any call its end let go: a chain of calls that
        wait on each other (unknown footprints serialise) stays on one thread instead
        of handing each call to another."""
        while node is not None:
            node = self._run(node)

    def _run(self, node: Node) -> Node | None:
        """Runs the call; returns a call its end let go, for this worker to run next.
        Exactly one party concludes it: the worker, unless it timed out while its tool
        ran (then the deadline concluded it)."""
        run: CallRun = node.owner
        with self._lock:
            late = run.settled  # timed out while it waited for a worker: never begun, never run
        if late:
            return self._conclude(node)
        result: Any = None
        error: BaseException | None = None
        try:
            must_run = run.begin(self._journal, self._turn_key)
            with self._lock:
                timed_out = run.settled
                run.invoked = must_run and not timed_out
            if timed_out:  # the deadline passed while the journal took the intent: do not run it now
                return self._conclude(node)
            if must_run:
                result = self._invoke(run)
            else:
                result, error = run.result, run.error
        except BaseException as exc:  # noqa: BLE001 - every path out of a call settles it, KeyboardInterrupt included
            error = exc
        if self._settle(run, result, error):
            return self._conclude(node)
        return None

    def _invoke(self, run: CallRun) -> Any:
        invocation = run.invocation
        if invocation is None:
            from ..errors import MissingToolError

            raise MissingToolError(f"no callable for tool {run.dispatch.name!r}; pass it in tools=")
        with tool_span(run.record()) as span:
            result = invocation(run.dispatch.name, run.dispatch.arguments, run.current(), self)
            if inspect.isawaitable(result):
                if inspect.iscoroutine(result):
                    result.close()  # never awaited: close it so Python does not warn later
                from ..errors import InertTypeError

                raise InertTypeError(
                    f"tool {run.dispatch.name!r} returned an awaitable, which a thread cannot run: "
                    "use AsyncOrchestrator for coroutine tools")
            span.result = result
        return result

    def _settle(self, run: CallRun, result: Any, error: BaseException | None) -> bool:
        """Fixes the outcome unless it is fixed already (a timeout); returns whether it was."""
        with self._lock:
            if run.settled:
                return False  # timed out: the late outcome is not trusted; the journal says in doubt
            run.settled = True
            run.result, run.error, run.finished = result, error, self.clock()
            return True

    def _time_out(self, node: Node) -> None:
        run: CallRun = node.owner
        with self._lock:
            if run.settled:
                return
            run.settled = True
            run.timed_out = True
            run.finished = self.clock()
            run.error = ToolTimeoutError(
                f"{run.dispatch.name!r} did not return within {run.dispatch.timeout} s; its effect is in doubt")
            in_tool = run.invoked
        if not in_tool:
            return  # queued or journaling its intent: its worker concludes it when it gets there
        self._pool.abandon_one()  # its worker is stuck in the tool; the other calls keep their capacity
        self._pool.submit(lambda: self._work(self._conclude(node)))  # not on the timer thread: the journal may block

    def _conclude(self, node: Node) -> Node | None:
        """Journals the settled outcome, then lets later calls go; returns one of them for
        the calling worker to run itself (the others go to the pool)."""
        run: CallRun = node.owner
        stored_outcome(run, self._journal)
        if self._trace is not None:
            self._trace.result(run.record())
        with self._lock:
            ready = self._scheduler.finish(node)
            self._start(ready[1:])
            if ready:
                self._launch(ready[0])
            self._notify_if_idle()
        return ready[0] if ready else None

    def _notify_if_idle(self) -> None:
        if self._scheduler.in_flight == 0:
            self._idle.notify_all()
