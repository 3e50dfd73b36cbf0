"""Running calls on worker threads: the runtime of ``Orchestrator``.

It executes the gate's commands: a scheduled call takes its place in stream
order, a permitted one starts when nothing before it holds it back, and each
call is journaled around its tool. A call past its deadline is recorded with
``ToolTimeoutError`` and its effect is in doubt; later calls go on at the
deadline, and its worker is abandoned (never joined: see ``pool.py``).
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from ..audit.trace import TraceWriter
from ..errors import CancelledCallError, InertTypeError, ToolTimeoutError
from ..gate import Dispatch
from ..journal import Journal
from ..journal.phases import ABORT, COMMIT, PREPARE
from ..report import DispatchRecord
from ..telemetry import tool_span
from . import lifecycle
from .call import CallNode, CallRun, CallScheduler, Fate, abort_staged, begin_abort, journal_phase, stored_outcome
from .call_state import CallState
from .pool import Deadlines, WorkerPool
from .schedule import Slots, State
from .tools import Invocation

__all__ = ["ThreadEngine", "ThreadRuntime"]


class ThreadEngine:
    """What the runtimes of many turns can share: one lock, one pool of daemon workers,
    one timer thread, and per-tool limits that hold across the turns (a batch's).

    Args:
        max_workers: calls running at once, across every turn.
        limits: tool name -> most calls of it running at once, across every turn.
    """

    def __init__(self, max_workers: int = 8, limits: dict[str, int] | None = None) -> None:
        self.lock = threading.Lock()
        self.pool = WorkerPool(max_workers)
        self.deadlines = Deadlines()
        self.slots = Slots(limits)
        self.inside = 0  # workers inside a tool of one of the turns
        self.after: list[Callable[[], None]] = []  # what waits for them (closing a journal)

    def leave_tool(self) -> list[Callable[[], None]]:
        """A worker leaves a tool (lock held); returns what waited for the last one, to call
        once the lock is released."""
        self.inside -= 1
        if self.inside:
            return []
        after, self.after = self.after, []
        return after

    def left_tool(self) -> None:
        """``leave_tool``, and the calls, for a worker that does not hold the lock."""
        with self.lock:
            after = self.leave_tool()
        for callback in after:
            callback()

    def after_tools(self, callback: Callable[[], None]) -> None:
        """Calls ``callback`` once no worker is inside a tool of these turns: now, or when the
        last one that outlived its deadline returns (it still journals what it did)."""
        with self.lock:
            if self.inside:
                self.after.append(callback)
                return
        callback()

    def close(self) -> None:
        """Stops the workers once idle (never joins one stuck in a tool) and the timer thread."""
        self.deadlines.close()
        self.pool.shutdown()


class ThreadRuntime:
    """Runs one turn's calls on a pool of daemon threads.

    Args:
        journal: records an intent before each call and its outcome after.
        turn_key: the turn the calls belong to, for the journal.
        ordered: keep stream order between conflicting calls (off only for ``eager_unsafe``).
        limits: tool name -> most calls of it running at once.
        max_workers: calls running at once.
        trace: receives ``dispatch``, ``result`` and ``discard`` events.
        engine: a ``ThreadEngine`` shared with other turns (then ``limits`` and
            ``max_workers`` are the engine's); by default the runtime has its own.
        seq: the engine's sequence id of the turn, in a batch (its tools see it in ``current_call()``).
    """

    def __init__(
        self,
        journal: Journal,
        turn_key: str,
        *,
        ordered: bool = True,
        limits: dict[str, int] | None = None,
        max_workers: int = 8,
        trace: TraceWriter | None = None,
        engine: ThreadEngine | None = None,
        seq: int | None = None,
    ) -> None:
        self._journal = journal
        self._turn_key = turn_key
        self.seq = seq
        self._trace = trace
        self._owns_engine = engine is None
        self._engine = engine if engine is not None else ThreadEngine(max_workers, limits)
        self._lock = self._engine.lock
        self._idle = threading.Condition(self._lock)
        self._scheduler = CallScheduler(ordered=ordered, slots=self._engine.slots, on_slot_wait=self._slot_wait)
        self._pool = self._engine.pool
        self._deadlines = self._engine.deadlines
        self._log: list[CallRun] = []  # in the order the calls started
        self.clock: Callable[[], float] = time.perf_counter

    @property
    def turn_key(self) -> str:
        return self._turn_key

    @property
    def engine(self) -> ThreadEngine:
        """The lock, workers, timer and tool slots this runtime runs on."""
        return self._engine

    # -- the gate's commands (``TurnDriver._act`` holds a Ctrl-C off while it gives them) --

    def schedule(self, dispatch: Dispatch, invocation: Invocation | None) -> CallNode:
        """A call closed: it takes its place in stream order, gated."""
        with self._lock:
            run = CallRun(dispatch, invocation)
            run.home = self
            return self._scheduler.add(dispatch, run)

    def run_early(self, node: CallNode) -> None:
        """It may run now, on draft tokens (see ``Runtime.run_early``)."""
        with self._lock:
            self._start(self._scheduler.permit(node, early=True))

    def confirm(self, node: CallNode) -> None:
        """Its block was accepted: it runs, or commits (see ``lifecycle``)."""
        with self._lock:
            self._start(lifecycle.confirm(self._scheduler, node))

    def retract(self, node: CallNode) -> None:
        """Its block was rejected: it never runs, or never counts (see ``lifecycle``)."""
        with self._lock:
            ready, started = lifecycle.retract(self._scheduler, node)
            self._start(ready)
            if not started:
                self._disarm(node.owner)  # a wait for a tool slot it will never take
                self._notify_if_idle()
                return
        lifecycle.trace_discard(self._trace, node.owner)

    def drain(self) -> None:
        """Waits until every permitted call is concluded (a timed-out one counts), then
        stops the workers."""
        with self._idle:
            self._idle.wait_for(lambda: self._scheduler.in_flight == 0)
        self.release()

    def release(self) -> None:
        """Stops the workers and the timer once idle, unless they are a shared engine's."""
        if self._owns_engine:
            self._engine.close()

    def records(self) -> list[DispatchRecord]:
        """Every call that started, in start order."""
        with self._lock:
            return [run.record() for run in self._log]

    # -- running a call --

    def _start(self, nodes: list[CallNode]) -> None:
        """Launches calls the scheduler started (called with the lock held). A call that
        took a tool slot another turn gave back is launched by its own turn's runtime."""
        lifecycle.start_all(nodes, _launch_at_home, self._hand_over)

    def _hand_over(self, node: CallNode) -> None:
        """A started call to a worker."""
        self._pool.submit(_work, node)

    def _launch(self, node: CallNode) -> None:
        """A call starts: its start time, its place in the log, its deadline (lock held).
        A two-phase call arms a deadline per phase, as each begins."""
        run: CallRun = node.owner
        if run.state is not CallState.SCHEDULED:
            return  # a prepared two-phase call resuming for its second phase
        run.launch(node.early, self.clock())
        self._log.append(run)
        if self._trace is not None:
            self._trace.dispatch(run.record())
        timeout = run.dispatch.timeout
        if timeout is not None and not run.dispatch.two_phase:
            self._arm(node, timeout, partial(self._time_out, node, None))

    def _run(self, node: CallNode) -> CallNode | None:
        """Runs the call; returns a call its end let go, for this worker to run next.
        Exactly one party concludes it: the worker, unless it timed out while its tool
        ran (then the deadline concluded it)."""
        run: CallRun = node.owner
        if run.dispatch.two_phase:
            return self._run_phase(node)
        with self._lock:
            late = run.settled  # timed out while it waited for a worker: never begun, never run
            if not late:
                run.take_up()
        if late:
            return self._conclude(node)
        result: Any = None
        error: BaseException | None = None
        try:
            # In the tool from the intent on: a deadline that passes between the intent and the
            # tool's call keeps the slot, which the tool then uses.
            with self._in_tool(node):
                must_run = run.begin(self._journal, self._turn_key)
                with self._lock:
                    timed_out = run.settled
                    if must_run and not timed_out:
                        run.invoke()
                if timed_out:  # the deadline passed while the journal took the intent: do not run it now
                    return self._conclude(node)
                if must_run:
                    result = self._invoke(run)
                else:
                    result, error = run.result, run.error
        except BaseException as exc:  # noqa: BLE001 - every path out of a call settles it, KeyboardInterrupt included
            error = exc
        # Settled by its deadline while the journal took the intent (and then failed): the
        # deadline left the concluding to this worker.
        if self._settle(run, result, error) or not run.overdue:
            return self._conclude(node)
        return None

    def _invoke(self, run: CallRun) -> Any:
        invocation = run.invocation
        if invocation is None:
            from ..errors import MissingToolError

            raise MissingToolError(f"no callable for tool {run.dispatch.name!r}; pass it in tools=")
        with tool_span(run.record()) as span:
            result = _ran(invocation(run.dispatch.name, run.dispatch.arguments, run.current(), self), run, "")
            span.result = result
        return result

    # -- two-phase tools: prepare (may run on draft tokens), then commit or abort --

    def _run_phase(self, node: CallNode) -> CallNode | None:
        run: CallRun = node.owner
        with self._lock:
            late = run.settled  # the call timed out while this phase waited for a worker
            if not late:
                phase = run.take_up_phase()
                if run.dispatch.timeout is not None:
                    self._arm(node, run.dispatch.timeout, partial(self._time_out, node, phase))
        if late:
            return self._conclude(node)  # not under the lock: concluding takes it
        if phase == PREPARE:
            return self._prepare(node)
        return self._second_phase(node, phase)

    def _prepare(self, node: CallNode) -> CallNode | None:
        run: CallRun = node.owner
        invocation = run.invocation
        assert invocation is not None and invocation.two_phase
        prepared: Any = None
        error: BaseException | None = None
        staged = False
        # Inside the tool from the prepare to the abort of a late one: a prepare past its
        # deadline keeps its tool slot until what it staged is dropped.
        with self._in_tool(node):
            try:
                if run.already_committed(self._journal):  # a replayed key: its recorded outcome; never prepares again
                    self._settle(run, run.result, run.error)
                    return self._conclude(node)
                run.attempt = uuid.uuid4().hex[:12]
                self._journal.begin(run.phase_record(PREPARE), self._turn_key)
                with self._lock:
                    invoked = not run.settled
                    if invoked:
                        run.invoke()
                if invoked:
                    prepared = _ran(invocation.prepare(run.dispatch.arguments, run.current(), self), run, "prepare")
                    staged = True
                else:
                    error = run.error  # its deadline passed while the journal took the intent: it never ran
            except BaseException as exc:  # noqa: BLE001 - every path out of a phase settles the call
                error = exc
            if run.attempt:
                journal_phase(run, self._journal, self._turn_key, PREPARE, error, began=True)
            with self._lock:
                late = run.settled  # its deadline passed: the call is settled without it
                # Out of its phase under this lock (staged, or settled with its error): the prepare's
                # deadline never expires a prepare that returned, and the wait for the fate has none.
                if not late and error is None:
                    run.stage(prepared)
                    if run.fate is Fate.UNDECIDED:  # wait, holding later calls, for the block's fate
                        self._start(self._scheduler.prepared(node))
                        return None
                elif not late:
                    run.settle(None, error, self.clock())
            if late and staged:
                self._abort_staged(run, prepared)  # what a late prepare staged is dropped at once
        if late:
            return None if run.overdue else self._conclude(node)
        if error is not None:
            return self._conclude(node)
        return self._run_phase(node)  # the block was decided meanwhile: its second phase, on this worker

    def _second_phase(self, node: CallNode, phase: str) -> CallNode | None:
        run: CallRun = node.owner
        invocation = run.invocation
        assert invocation is not None
        result: Any = None
        error: BaseException | None = None
        began = False  # the phase's intent is on record (a commit's: or its key's earlier entry was found)
        try:
            with self._in_tool(node):
                if phase == COMMIT:
                    must_run = run.begin(self._journal, self._turn_key)  # under the commit key, as any write
                    began = True
                    with self._lock:
                        invoked = must_run and not run.settled
                        if invoked:
                            run.invoke()
                    if invoked:
                        result = invocation.commit(run.prepared, run.current(), self)
                        if inspect.isawaitable(result):  # the commit did nothing: what it staged is dropped
                            self._abort_staged(run, run.prepared)
                        result = _ran(result, run, "commit")
                    else:
                        result, error = run.result, run.error
                        self._abort_staged(run, run.prepared)  # replayed or timed out: what it staged is dropped
                else:
                    began = begin_abort(run, self._journal, self._turn_key)
                    with self._lock:
                        if not run.settled:  # a cleanup: it runs even if its deadline passed meanwhile
                            run.invoke()
                    _ran(invocation.abort(run.prepared, run.current(), self), run, "abort")
                    error = CancelledCallError(
                        f"{run.dispatch.name!r} was prepared, then aborted: its block was rejected"
                    )
        except BaseException as exc:  # noqa: BLE001 - every path out of a phase settles the call
            error = exc
            if phase == COMMIT and not began and isinstance(exc, Exception):
                # The intent could not be written, so the commit never ran: what was staged is dropped.
                self._abort_staged(run, run.prepared)
        if phase == ABORT:
            aborted = None if isinstance(error, CancelledCallError) else error
            journal_phase(run, self._journal, self._turn_key, ABORT, aborted, began=began)
        if self._settle(run, result, error) or not run.overdue:
            return self._conclude(node)
        return None

    @contextlib.contextmanager
    def _in_tool(self, node: CallNode) -> Iterator[None]:
        """A worker is in the call's tool: if the call's deadline concludes it meanwhile (it is
        ``OVERDUE``), its tool slot stays taken until the worker leaves, so a per-tool limit
        holds for real."""
        run: CallRun = node.owner
        with self._lock:
            self._engine.inside += 1
        try:
            yield
        finally:
            with self._lock:
                run.left_tool()
                self._start(self._scheduler.give_slot_back(node))
                after = self._engine.leave_tool()
            for callback in after:
                callback()

    def after_tools(self, callback: Callable[[], None]) -> None:
        """See ``ThreadEngine.after_tools``."""
        self._engine.after_tools(callback)

    def _drop_withdrawn(self, node: CallNode) -> None:
        """Aborts what the prepare of a commit that never got a slot staged (it needs none);
        ``_slot_wait_over`` counted it as inside its tool."""
        try:
            self._abort_staged(node.owner, node.owner.prepared)
        finally:
            self._engine.left_tool()

    def _abort_staged(self, run: CallRun, prepared: Any) -> None:
        abort_staged(run, prepared, self._journal, self._turn_key, self)

    def _settle(self, run: CallRun, result: Any, error: BaseException | None) -> bool:
        """Fixes the outcome unless it is fixed already (a timeout); returns whether it was."""
        with self._lock:
            return run.settle(result, error, self.clock())

    def _time_out(self, node: CallNode, phase: str | None) -> None:
        run = node.owner
        with self._lock:
            if run.phase != phase or (phase is not None and not run.in_phase):
                return  # the deadline of a phase that is over
            what = f"the {phase} of {run.dispatch.name!r}" if phase else repr(run.dispatch.name)
            if run.state in (CallState.IN_TOOL, CallState.RETURNED):
                doubt = "nothing was committed" if phase in (PREPARE, ABORT) else "its effect is in doubt"
                error = ToolTimeoutError(f"{what} did not return within {run.dispatch.timeout} s; {doubt}")
            else:  # its worker will not call the tool now: say so, not that its effect is in doubt
                error = ToolTimeoutError(
                    f"{what} did not start within {run.dispatch.timeout} s (it waited for a worker, or for the "
                    "journal to record its intent: a lock another process holds?); the tool was not run"
                )
            if not run.expire(error, self.clock()) or not run.overdue:
                return  # settled already, or queued or journaling its intent: its worker concludes it
        self._pool.abandon_one()  # its worker is stuck in the tool; the other calls keep their capacity
        self._pool.submit(lambda: _work(self._conclude(node)))  # not on the timer thread: the journal may block

    def _slot_wait(self, node: CallNode) -> None:
        """A call queued for a tool slot (lock held). A slot kept by a call past its deadline
        comes back only when that tool returns, which may be never: the wait is checked at the
        call's own deadline (live holders end by theirs, so waiting on them is not timed)."""
        timeout = node.dispatch.timeout
        if timeout is not None:
            self._arm(node, timeout, partial(self._slot_wait_over, node, node.slot_waits))

    def _arm(self, node: CallNode, delay: float, callback: Callable[[], None]) -> None:
        """A deadline for the call (lock held). The ones it armed before (an earlier phase's, a
        slot wait's) are over by now; every one is dropped when the call ends (``_disarm``)."""
        run: CallRun = node.owner
        self._disarm(run)
        run.timers.append(self._deadlines.add(delay, callback))

    def _disarm(self, run: CallRun) -> None:
        for handle in run.timers:
            self._deadlines.cancel(handle)
        run.timers.clear()

    def _slot_wait_over(self, node: CallNode, wait: int) -> None:
        run = node.owner
        with self._lock:
            over = lifecycle.slot_wait_over(self._scheduler, node, wait, self.clock())
            if over is None:
                if node.state is State.WAITING and node.slot_waits == wait:
                    self._slot_wait(node)  # calls within their deadlines hold the slots: wait on
                return
            self._disarm(run)
            if not over.commit:
                self._log.append(run)
            else:
                self._engine.inside += 1  # its abort, on a worker: counted now, so a journal waits for it
            self._start(over.ready)
            self._notify_if_idle()
        if self._trace is not None:
            if not over.commit:
                self._trace.dispatch(run.record())
            self._trace.result(run.record())
        if over.commit:  # an abort needs no slot
            self._pool.submit(self._drop_withdrawn, node)

    def _conclude(self, node: CallNode) -> CallNode | None:
        """Journals the settled outcome, then lets later calls go; returns one of them for
        the calling worker to run itself (the others go to the pool)."""
        run: CallRun = node.owner
        try:
            stored_outcome(run, self._journal)
            if self._trace is not None:
                self._trace.result(run.record())
        finally:  # whatever escaped, the call ends: later calls and finish() never wait on it forever
            with self._lock:
                self._disarm(run)
                # A tool past its deadline that has not returned keeps its slot until it does.
                ready = self._scheduler.finish(node, keep_slot=run.state is CallState.OVERDUE)
                self._start(ready[1:])
                if ready:
                    ready[0].owner.home._launch(ready[0])
                self._notify_if_idle()
        return ready[0] if ready else None

    def _notify_if_idle(self) -> None:
        if self._scheduler.in_flight == 0:
            self._idle.notify_all()


def _launch_at_home(node: CallNode) -> None:
    """``ThreadRuntime._launch`` by the runtime of the call's own turn."""
    home: ThreadRuntime = node.owner.home
    home._launch(node)


def _work(node: CallNode | None) -> None:
    """A worker runs a call, then any call its end let go: a chain of calls that wait
    on each other (unknown footprints serialise) stays on one thread instead of handing
    each call to another. Each call runs under its own turn's runtime."""
    while node is not None:
        node = node.owner.home._run(node)


def _ran(result: Any, run: CallRun, phase: str) -> Any:
    """What a tool (or its ``phase``) returned in a thread, refused if it is an awaitable: a
    thread cannot run it, so the tool did nothing (a coroutine commit never wrote). Tools
    that are coroutine functions are refused when the orchestrator is built; this catches
    a plain callable that returns one (a lambda around a coroutine function)."""
    if not inspect.isawaitable(result):
        return result
    if inspect.iscoroutine(result):
        result.close()  # never awaited: close it so Python does not warn later
    part = f"'s {phase}" if phase else ""
    raise InertTypeError(
        f"tool {run.dispatch.name!r}{part} returned an awaitable, which a thread cannot run: "
        "use AsyncOrchestrator for coroutine tools"
    )
