"""Running calls as asyncio tasks: the runtime of ``AsyncOrchestrator``.

Coroutine tools run on the loop; plain functions and journal writes run on
daemon worker threads. Scheduling happens on the loop thread only, so no lock
is needed. A speculative call whose block is rejected is cancelled if its tool
is running, and skipped if it has not begun; either way it settles.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import inspect
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from ..audit.trace import TraceWriter
from ..errors import CancelledCallError, InDoubtError, LoopError, MissingToolError, ToolTimeoutError
from ..gate import Dispatch
from ..interrupts import InterruptsHeld, SignalsTold, from_signal
from ..journal import Journal
from ..journal.phases import ABORT, COMMIT, PREPARE
from ..report import DispatchRecord
from ..telemetry import tool_span
from . import lifecycle
from .call import CallNode, CallRun, CallScheduler, Fate, abort_staged, begin_abort, journal_phase, stored_outcome
from .call_state import CallState, CallStateError
from .pool import WorkerPool
from .schedule import State
from .tools import Invocation, enter_call, fresh_arguments

__all__ = ["AsyncRuntime", "LoopError"]

T = TypeVar("T")


class _TimedOut(Exception):
    """inert's own deadline passed (a tool's own ``TimeoutError`` is just its error)."""


def _timeout_error(run: CallRun, phase: str) -> ToolTimeoutError:
    doubt = "its effect is in doubt" if phase == COMMIT else "nothing was committed"
    return ToolTimeoutError(
        f"the {phase} of {run.dispatch.name!r} did not return within {run.dispatch.timeout} s; {doubt}"
    )


class AsyncRuntime:
    """Runs one turn's calls as tasks on the event loop of its first call.

    Args: as ``ThreadRuntime``; ``max_workers`` bounds the threads that run plain functions.
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
    ) -> None:
        self._journal = journal
        self._turn_key = turn_key
        self.seq: int | None = None  # no batch runs on asyncio
        self._trace = trace
        self._scheduler = CallScheduler(ordered=ordered, limits=limits, on_slot_wait=self._slot_wait)
        self._pool = WorkerPool(max_workers, name="inert-async-tool")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._idle: asyncio.Event | None = None
        self._tasks: dict[CallNode, asyncio.Task[None]] = {}
        self._in_tool: set[CallNode] = set()  # tasks whose tool is running (cancelling them reaches the tool)
        self._late = 0  # coroutine prepares past their deadline, still running: the pool outlives them
        self._lingering: set[Any] = set()  # tools' work that outlived its call (a deadline, a cancel)
        self._cleanups: set[asyncio.Task[Any]] = set()  # aborts drain() waits for
        self._dropping: dict[concurrent.futures.Future[None], float | None] = {}  # and those on workers, with deadlines
        self._after: list[Callable[[], None]] = []  # what waits for both (closing a journal)
        self._after_lock = threading.Lock()  # ``_lingering`` and ``_after``: released from workers too
        # Slots handed back on the loop once a tool that outlived its call returns (``_off_loop_ended``),
        # not run yet: asyncio.run may close the loop first, dropping them (``_closed_hand_over``).
        self._handing: set[_HandBack] = set()
        self._unrun: collections.deque[CallNode] = collections.deque()  # calls no task will run: ``_conclude_unrun``
        self._concluding = False  # ``_unrun`` is being worked through (a conclusion starts the next calls)
        self._closed_lock = threading.Lock()  # the scheduler, off the loop once it closed
        self._drained = False
        # A call's task was cancelled from outside inert: the event loop is ending (asyncio.run
        # cancels the tasks its main coroutine left). No call starts after that: its task is
        # made after the loop took its list of tasks to cancel, and would journal an intent
        # and be destroyed with the loop, leaving in doubt a call that never ran. ``_watch``
        # notes that cancel when no call's task is there to receive one (see ``_EndWatch``).
        self._ending = False
        self._watch: _EndWatch | None = None
        self._log: list[CallRun] = []
        self._called: set[CallRun] = set()  # calls whose tool (or commit) was handed its work: see ``_interrupted``
        self._draining = 0  # drain() calls waiting for the calls
        self._interrupts: list[BaseException] = []  # interrupts a call's task handed to a waiting drain()
        self.clock: Callable[[], float] = time.perf_counter

    @property
    def turn_key(self) -> str:
        return self._turn_key

    def bind(self, *, ending: bool = False) -> None:
        """Binds to the running loop on the first call; refuses any other loop after, except
        to end the turn (``ending``: finish, close) once the first loop has ended with every
        call concluded.

        Raises:
            LoopError: called from another event loop than the first call's.
        """
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._bind_to(loop)
        elif loop is not self._loop:
            concluded = self._idle is not None and self._idle.is_set()
            if self._loop.is_closed():
                for dropped in self._hand_backs():  # dropped with the loop: what they hand on concludes here
                    self._closed_hand_over(dropped)
                with self._closed_lock:  # after a worker's hand-over in progress
                    concluded = self._idle is not None and self._idle.is_set()
            if ending and concluded and self._loop.is_closed():
                # The first loop ended (asyncio.run returned) with every call concluded: nothing
                # of this turn runs on it any more, so a finish() or close() on the next loop
                # reports the turn rather than refusing it for ever.
                self._bind_to(loop)
                return
            ended = ""
            if self._loop.is_closed():
                ended = " (it has ended, with calls of this turn still on it)"
                if concluded:
                    ended = " (it has ended: finish() or close() this turn, and start the next on a new one)"
            raise LoopError(
                f"this AsyncOrchestrator runs its calls on the event loop of its first call{ended}; "
                "use one orchestrator per loop (per turn)"
            )

    def _bind_to(self, loop: asyncio.AbstractEventLoop) -> None:
        with InterruptsHeld():  # half bound, drain() would wait on an event never set
            idle = asyncio.Event()
            idle.set()
            self._loop, self._idle = loop, idle

    # -- the gate's commands (on the loop thread; ``TurnDriver._act`` holds a Ctrl-C off meanwhile) --

    def schedule(self, dispatch: Dispatch, invocation: Invocation | None) -> CallNode:
        run = CallRun(dispatch, invocation)
        run.home = self
        return self._scheduler.add(dispatch, run)

    def run_early(self, node: CallNode) -> None:
        self._start(self._scheduler.permit(node, early=True))

    def confirm(self, node: CallNode) -> None:
        self._start(lifecycle.confirm(self._scheduler, node))

    def retract(self, node: CallNode) -> None:
        ready, started = lifecycle.retract(self._scheduler, node)
        self._start(ready)
        if not started:
            return
        lifecycle.trace_discard(self._trace, node.owner)
        if node.owner.dispatch.two_phase:
            return  # it aborts: now if prepared, when its prepare returns if still preparing
        if node in self._in_tool:
            self._tasks[node].cancel()  # a rejected speculative read: stop it; its task settles it
        # Not yet in its tool: its task sees `discarded` and settles without running it.

    async def drain(self) -> None:
        """Waits until every permitted call is concluded (a timed-out one counts). The
        workers stop then, or once a late coroutine prepare has been dropped (its abort is
        journaled through them).

        A KeyboardInterrupt (or SystemExit) that a call's task took while this waits is raised
        here, once that call is concluded (see ``_pass_on``): this caller's
        finish() ends with it, and may be called again, which waits on and returns the report."""
        self._draining += 1
        try:
            while self._idle is not None and not self._idle.is_set():
                self._raise_interrupt()
                await self._idle.wait()
            self._raise_interrupt()
        finally:
            self._draining -= 1
        while self._cleanups:  # the aborts of commits that never got a slot (each under its deadline)
            # Shielded: a cancel of this wait (a request timeout) must not cancel the aborts,
            # whose threads would go on while their journal entries said they were cancelled.
            await asyncio.shield(asyncio.gather(*self._cleanups, return_exceptions=True))
        await self._aborts_off_loop()
        self._drained = True
        if self._late == 0:
            self._pool.shutdown()

    def _raise_interrupt(self) -> None:
        if self._interrupts:
            raise self._interrupts.pop(0)

    def records(self) -> list[DispatchRecord]:
        return [run.record() for run in self._log]

    # -- running a call --

    def _start(self, nodes: list[CallNode]) -> None:
        try:
            lifecycle.start_all(nodes, self._launch, self._hand_over)
            self._conclude_all_unrun()
        finally:
            self._update_idle()

    def _launch(self, node: CallNode) -> None:
        """A call starts: its start time, its place in the log, its trace event."""
        run: CallRun = node.owner
        if run.state is CallState.SCHEDULED:  # not a prepared two-phase call resuming for its second phase
            run.launch(node.early, self.clock())
            self._log.append(run)
            if self._trace is not None:
                self._trace.dispatch(run.record())

    def _hand_over(self, node: CallNode) -> None:
        """The task that runs a started call (or its second phase)."""
        assert self._loop is not None, "bind() precedes every command"
        if self._ending or self._loop.is_closed():
            # No call starts once the loop is ending (see ``_ending``), and a task made now may
            # never take its first step (made in the loop's last iteration, or on a closed loop
            # by a tool that returned after it): the call concludes here, with no task.
            self._unrun.append(node)
            return
        body = self._run_two_phase(node) if node.owner.dispatch.two_phase else self._run(node)
        task = self._tasks[node] = self._loop.create_task(body)
        task.add_done_callback(partial(self._task_ended, node))

    def _task_ended(self, node: CallNode, task: asyncio.Task[None]) -> None:
        """A call's task ended. Its body concludes the call on every path but one: a
        KeyboardInterrupt (or SystemExit) landing in its own bookkeeping, which asyncio
        raises out of the loop at once (on the loop's thread, where signals land; the
        threaded runtime keeps its bookkeeping off the main thread), where the body's own
        handlers did not get it (as its body began, or as it concluded). The call would then
        hold its place, and finish() would wait for it for ever: it is concluded here. One
        whose body never began never ran; any other is in doubt. Its outcome is not journaled
        (the journal is not written on the loop), so an intent it recorded stays open, in
        doubt, which is what is known of it."""
        with InterruptsHeld():  # this net is the last: a Ctrl-C may not cut it short
            # Read first, so asyncio never logs it as never retrieved: it was raised out of the
            # loop already (a Ctrl-C held off to the end of the task's conclusion, say).
            failure = None if task.cancelled() else task.exception()
            if node.state is not State.RUNNING or self._tasks.get(node, task) is not task:
                return  # concluded, waiting for its block's fate, or another phase's task has it
            run: CallRun = node.owner
            if task.cancelled():  # cancelled from outside inert, past every handler: see ``_ending``
                self._ending = True
            if not run.settled:
                with contextlib.suppress(CallStateError):  # a state the interrupt left half made
                    if run in self._called or run.state is not CallState.STARTED:
                        error: BaseException = InDoubtError(
                            f"the task running {run.dispatch.name!r} was interrupted ({type(failure).__name__}) "
                            "before it concluded the call: whether its effect happened is unknown; see `inert recover`"
                        )
                        if not run.expire(error, self.clock()):
                            run.settle(None, error, self.clock())
                    else:  # its body never began: nothing of it ran, nothing is journaled
                        run.settle(None, self._interrupted(run, PLAIN, failure or KeyboardInterrupt()), self.clock())
            self._tasks.pop(node, None)
            self._called.discard(run)
            run.left_tool()
            self._start(self._scheduler.finish(node))

    def _update_idle(self) -> None:
        if self._idle is None:
            return
        if self._scheduler.in_flight == 0:
            if self._loop is not None and self._loop.is_closed():
                # Its waiters (a drain() the loop closed on) cannot be woken on it: a new flag.
                self._idle = asyncio.Event()
            self._idle.set()
        else:
            self._idle.clear()
        self._watch_for_end()

    def _watch_for_end(self) -> None:
        """Keeps an ``_EndWatch`` on the loop while a call of this turn could still start (one
        is in flight: it may wait for a slot or its turn with no task of its own) or a late
        prepare runs; ends it after (on the loop thread, as every scheduling is)."""
        needed = self._scheduler.in_flight > 0 or self._late > 0
        if needed and self._watch is None and not self._ending:
            loop = self._loop
            if loop is not None and not loop.is_closed():
                self._watch = _EndWatch(loop, self._loop_ending)
        elif not needed and self._watch is not None:
            self._watch.stop()
            self._watch = None

    def _loop_ending(self) -> None:
        self._ending = True

    def _thread_future(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """``fn(*args)`` on a worker, as a future rather than a task: the loop's end cancels
        every task, so a shielded journal write awaited as one of those would read as cancelled
        while its thread still wrote; this future holds the write's real fate."""
        assert self._loop is not None
        return self._loop.run_in_executor(self._pool, _no_stop_iteration, fn, *args)

    async def _tool_in_thread(self, run: CallRun, body: Callable[[], T]) -> T:
        """Runs a tool's plain function on a worker; the thread's own future is kept, since
        the thread goes on past a deadline or a cancel that ends the wait for it."""
        self._called.add(run)
        future: concurrent.futures.Future[T] = self._pool.submit(_no_stop_iteration, body)
        run.lingering = future
        return await asyncio.wrap_future(future)

    def _note_outside_cancel(self, run: CallRun) -> None:
        """Before ``run``'s task starts the calls after it: whether the task was cancelled
        from outside inert (inert cancels only the task of a rejected one-phase call, see
        ``retract``), wherever the cancel landed (in the tool, the journal, a phase): see ``_ending``."""
        try:
            task = asyncio.current_task()
        except RuntimeError:  # no loop runs: the task is being destroyed with a closed loop
            self._ending = True
            return
        by_inert = run.discarded and not run.dispatch.two_phase
        if task is not None and task.cancelling() and not by_inert:
            self._ending = True

    async def _run(self, node: CallNode) -> None:
        """Runs the call and settles it exactly once, whatever happens (the task's
        body always starts: a task is cancelled only while its tool runs).

        A KeyboardInterrupt or SystemExit raised in this task (a Ctrl-C landing in inert's
        code on the loop's thread) is never the call's own error and is never swallowed: the
        call concludes as what is known of it (in doubt if its tool was called, else it
        never ran), its outcome journaled, and then the interrupt is raised on (see
        ``_pass_on``). What the tool itself raised (on its thread, or carried
        out of its coroutine) stays its error, whatever it is."""
        run: CallRun = node.owner
        result: Any = None
        error: BaseException | None = None
        begin: asyncio.Future[bool] | None = None
        interrupt: BaseException | None = None
        try:
            enter_call(self, run.current())  # this task's own context: what the tool sees in inert.current_call()
            if run.discarded:
                raise asyncio.CancelledError
            if self._ending:
                raise _not_started(run)
            run.take_up()
            begin = self._thread_future(run.begin, self._journal, self._turn_key)
            # Shielded: a cancel must not leave the journal not knowing whether it holds the intent.
            must_run = await asyncio.shield(begin)
            if run.discarded:
                raise asyncio.CancelledError
            if must_run:
                run.invoke()
                result = await self._invoke(node, run)
            else:
                result, error = run.result, run.error
        except asyncio.CancelledError as exc:
            if begin is not None:
                await _settled(begin)  # the intent's fate is known before the outcome is written
            # inert cancels only the task of a call whose block was rejected. Any other cancel
            # of this task came from outside (the loop shutting down, a caller's task group):
            # if its tool was called, the effect may have happened, so the call is in doubt.
            # A CancelledError this task was not asked for is the tool's own, its error.
            if run.discarded:
                error = CancelledCallError(f"{run.dispatch.name!r} was cancelled: its block was rejected")
            elif not _cancelled_in_tool(run, PLAIN, self.clock()):
                error = exc
        except _TimedOut:
            run.expire(
                ToolTimeoutError(
                    f"{run.dispatch.name!r} did not return within {run.dispatch.timeout} s; its effect is in doubt"
                ),
                self.clock(),
            )
        except BaseException as exc:  # noqa: BLE001 - every path out of a call settles it, SystemExit included
            if _is_interrupt(exc):
                interrupt = exc
                if begin is not None:
                    await _settled(begin)  # the intent's fate is known before the outcome is written
                error = self._interrupted(run, PLAIN, exc)
            else:
                error = exc
        finally:
            self._in_tool.discard(node)
        await self._settle_and_conclude(node, result, error)
        if interrupt is not None:
            self._pass_on(interrupt)

    # -- two-phase tools: prepare (may run on draft tokens), then commit or abort --

    async def _run_two_phase(self, node: CallNode) -> None:
        """One task per stretch of phases: a prepare whose block is not decided yet ends
        its task (holding later calls); the decision starts a task for the second phase."""
        run: CallRun = node.owner
        enter_call(self, run.current())
        result: Any = None
        error: BaseException | None = None
        while True:
            phase = run.take_up_phase()
            if phase != PREPARE:
                break
            try:
                if self._ending:
                    raise _not_started(run)
                # Shielded: cut by the loop's end, the call concludes (and a journal inert opened
                # closes) only once the lookup is done with the journal.
                if await _shielded(self._thread_future(run.already_committed, self._journal)):
                    result, error = run.result, run.error  # a replayed key (its commit's): it never prepares again
                    phase = COMMIT
                    break
                run.attempt = uuid.uuid4().hex[:12]
                # Shielded, as every intent is: its fate is known before its outcome is written.
                await _shielded(self._thread_future(self._journal.begin, run.phase_record(PREPARE), self._turn_key))
                run.invoke()
                prepared = await self._phase(run, PREPARE)
                try:
                    await _shielded(
                        self._thread_future(
                            partial(journal_phase, began=True), run, self._journal, self._turn_key, PREPARE, None
                        )
                    )
                except asyncio.CancelledError:  # the loop ended while the outcome was written: drop what it staged
                    self._note_outside_cancel(run)
                    self._abort_off_loop(run, prepared)
                    result, error = None, _cut_off(run, "what it staged is being aborted")
                    break
            except BaseException as exc:  # noqa: BLE001 - every path out of a phase settles the call
                if isinstance(exc, _TimedOut):  # a timed-out prepare is journaled when it returns
                    run.expire(_timeout_error(run, PREPARE), self.clock())
                elif isinstance(exc, _HandedOver):  # its thread goes on: a worker journals it and drops it
                    self._note_outside_cancel(run)
                    drop = partial(_drop_cut_prepare, run, self._journal, self._turn_key, self)
                    self._finish_off_loop(_when_done, exc.thread, drop)
                    result, error = None, _cut_off(run, "what it stages is aborted when it returns")
                else:
                    if run.attempt:
                        await self._journal_phase(run, PREPARE, exc, began=True)
                    result, error = None, exc
                break
            with InterruptsHeld():
                run.stage(prepared)
                if run.fate is Fate.UNDECIDED:
                    del self._tasks[node]
                    self._note_outside_cancel(run)
                    self._start(self._scheduler.prepared(node))  # wait, holding later calls, for the block's fate
                    return
        interrupt: BaseException | None = None
        if phase == COMMIT and not run.replayed:
            try:
                result, error = await self._commit(run)
            except BaseException as exc:  # only an interrupt: ``_commit`` returns every other outcome
                if not _is_interrupt(exc):
                    raise
                interrupt = exc
                error = self._interrupted(run, COMMIT, exc)
                if error is not None:  # the commit never ran: what the prepare staged is dropped (``_abort``)
                    await self._abort(run)
        elif phase == ABORT:
            error = await self._abort(run, own=True)
        await self._settle_and_conclude(node, result, error)
        if interrupt is not None:
            self._pass_on(interrupt)

    async def _phase(self, run: CallRun, phase: str) -> Any:
        """Runs one phase of the tool under its deadline. A prepare that outlives the
        deadline keeps running and is aborted when it returns (what it staged is dropped):
        a plain one by its own worker thread, so the abort needs neither this loop nor the
        pool once the turn is over; a coroutine one by a task on this loop."""
        invocation = run.invocation
        assert invocation is not None
        fn = {PREPARE: invocation.fn.prepare, COMMIT: invocation.fn.commit, ABORT: invocation.fn.abort}[phase]
        late: _LatePrepare | None = None
        thread: concurrent.futures.Future[Any] | None = None  # a plain phase's worker
        if inspect.iscoroutinefunction(fn):
            args: tuple[Any, ...] = () if phase == PREPARE else (run.prepared,)
            kwargs: dict[str, Any] = fresh_arguments(run.dispatch.arguments) if phase == PREPARE else {}
            if phase == COMMIT:
                kwargs["idempotency_key"] = run.dispatch.commit_key
                self._called.add(run)
            work: asyncio.Future[Any] = asyncio.ensure_future(_carried(fn(*args, **kwargs)))
            run.lingering = work
        else:
            # Through the Invocation, which makes the call this worker thread's inert.current_call().
            current = run.current()
            body: Callable[[], Any] = {
                PREPARE: partial(invocation.prepare, run.dispatch.arguments, current, self),
                COMMIT: partial(invocation.commit, run.prepared, current, self),
                ABORT: partial(invocation.abort, run.prepared, current, self),
            }[phase]
            if phase == PREPARE and run.dispatch.timeout is not None:
                late = _LatePrepare(run, self._journal, self._turn_key, self)
                body = partial(late.run, body)
            # The thread's own future, wrapped as a future rather than a task: the loop's end
            # cancels every task, and the phase's real outcome must outlive that (see below).
            if phase == COMMIT:
                self._called.add(run)
            thread = self._pool.submit(_carried_from_thread, body)
            run.lingering = thread
            work = asyncio.wrap_future(thread)
        deadline = asyncio.timeout(run.dispatch.timeout)
        try:
            async with deadline:
                return _unwrapped(await asyncio.shield(work))
        except asyncio.CancelledError:
            # This task's cancel comes only from outside inert (it never cancels a two-phase
            # call's task): the loop is ending. A phase's thread goes on; once it returns, a
            # worker journals what it did (and drops what a prepare staged), needing no loop.
            # A coroutine phase is a task, cancelled with the rest, which may swallow the cancel
            # and return (a prepare, what it staged): what it did with the cancel is its outcome,
            # handed over the same way once it ends. A commit cut off is in doubt (``_commit``).
            task = asyncio.current_task()
            if task is None or task.cancelling() == 0:  # the tool's own CancelledError: its error
                raise
            work.add_done_callback(_retrieved)  # what it raises now is journaled by whoever finishes the call
            if thread is None:
                if phase == COMMIT:
                    raise  # in doubt (``_commit``)
                if not work.done():
                    self._pool.abandon_one()  # the worker waiting for it: the outcome writes need another
                raise _HandedOver(_thread_view(work)) from None
            self._pool.abandon_one()  # its thread is still in the phase: the outcome writes need a worker
            if phase == COMMIT:
                raise  # in doubt (``_commit``)
            raise _HandedOver(thread) from None
        except TimeoutError:
            if not deadline.expired():
                raise
            if not inspect.iscoroutinefunction(fn):
                self._pool.abandon_one()  # its thread is still in the phase; the others keep their capacity
            if late is not None:
                if not late.abandon():  # it returned meanwhile: its outcome is on its way here, dropped on a worker
                    assert thread is not None
                    drop = partial(_drop_cut_prepare, run, self._journal, self._turn_key, self)
                    self._finish_off_loop(_when_done, thread, drop)
            elif phase == PREPARE:
                self._late += 1
                self._watch_for_end()
                work.add_done_callback(lambda done: self._abort_late(run, done))
            else:
                work.add_done_callback(_retrieved)  # what a late commit or abort raises is no one's to log
            raise _TimedOut from None

    def _abort_late(self, run: CallRun, done: asyncio.Future[Any]) -> None:
        """A coroutine prepare that outlived its deadline returned: journal it, and drop what it
        staged, in a task on the loop; on a worker once the loop is ending (a task made then may
        come after asyncio.run took its list of tasks, and die with the loop unrun). inert never
        cancels a prepare's task, so a cancel of it (kept, or swallowed) is the loop's end too."""
        if self._loop is None:
            self._late_done()
            return
        if done.cancelled() or (isinstance(done, asyncio.Task) and done.cancelling() > 0):
            self._ending = True
        prepared: Any = None
        failure: BaseException | None
        if done.cancelled():  # it staged nothing it returned
            failure = asyncio.CancelledError("the event loop ended while the prepare ran past its deadline")
        else:
            failure = done.exception()
            if failure is None:
                outcome = done.result()
                if isinstance(outcome, _Raised):
                    failure = outcome.exc
                else:
                    prepared = run.prepared = outcome
        if self._ending:
            self._finish_off_loop(_drop_prepared, run, prepared, failure, self._journal, self._turn_key, self)
            self._late_done()
            return
        begun: list[bool] = []
        cleanup = self._loop.create_task(self._journal_late_prepare(run, prepared, failure, begun))
        cleanup.add_done_callback(lambda _: self._late_cleanup_ended(run, prepared, failure, begun))

    async def _journal_late_prepare(
        self, run: CallRun, prepared: Any, failure: BaseException | None, begun: list[bool]
    ) -> None:
        """The late prepare's outcome, then its abort. The loop's end cutting the write waits
        for it, then hands the abort to a worker; cutting the abort, ``_abort`` hands it over."""
        begun.append(True)
        write = partial(journal_phase, began=True)
        try:
            await _shielded(self._thread_future(write, run, self._journal, self._turn_key, PREPARE, failure))
        except asyncio.CancelledError:
            self._ending = True  # inert never cancels this task
            if failure is None:
                self._abort_off_loop(run, prepared)
            return
        if failure is None:
            await self._abort(run)

    def _late_cleanup_ended(
        self, run: CallRun, prepared: Any, failure: BaseException | None, begun: list[bool]
    ) -> None:
        """The task of ``_journal_late_prepare`` ended. One that never began was cancelled by the
        loop's end before its first step: what it was to do runs on a worker. The pool lives
        until then (``_late``)."""
        if not begun:
            self._ending = True
            self._finish_off_loop(_drop_prepared, run, prepared, failure, self._journal, self._turn_key, self)
        self._late_done()

    def _late_done(self) -> None:
        self._late -= 1
        if self._late == 0 and self._drained:
            self._pool.shutdown()
        self._watch_for_end()
        self._run_after()

    def after_tools(self, callback: Callable[[], None]) -> None:
        """As ``ThreadRuntime.after_tools``: once no late prepare, abort or tool of this turn
        still runs (on this loop; a loop closed first leaves it to the garbage collector)."""
        self._after.append(callback)
        self._run_after()

    def _run_after(self) -> None:
        with self._after_lock:
            if self._late != 0 or self._lingering:
                return
            after, self._after = self._after, []
        for callback in after:
            callback()

    async def _commit(self, run: CallRun) -> tuple[Any, BaseException | None]:
        begin: asyncio.Future[bool] | None = None
        staged_taken = False  # the commit was called, or what the prepare staged is being aborted
        if self._ending:
            await self._abort(run)
            return None, _not_started(run)
        try:
            begin = self._thread_future(run.begin, self._journal, self._turn_key)
            # Shielded, as in ``_run``: a cancel must not leave the journal not knowing whether it holds the intent.
            must_run = await asyncio.shield(begin)
            staged_taken = True
            if not must_run:  # the key was committed meanwhile (another worker): drop what this one staged
                await self._abort(run)
                return run.result, run.error
            run.invoke()
            return await self._phase(run, COMMIT), None
        except _TimedOut:
            run.expire(_timeout_error(run, COMMIT), self.clock())
            return None, None
        except asyncio.CancelledError as exc:  # as in ``_run``: from outside, a commit called is in doubt
            if begin is not None:
                await _settled(begin)  # the intent's fate is known before anything else is journaled
            if _cancelled_in_tool(run, COMMIT, self.clock()):
                return None, None
            if not staged_taken:  # the commit never ran: what the prepare staged is dropped, not left pending
                await self._abort(run)
            return None, exc
        except Exception as exc:  # noqa: BLE001 - every path out of a phase settles the call
            if not staged_taken:  # the intent could not be written, so the commit never ran: drop what was staged
                await self._abort(run)
            return None, exc
        except BaseException as exc:  # every path out of a phase settles the call
            if _is_interrupt(exc):  # not the commit's error: ``_run_two_phase`` concludes the call, then raises it
                if begin is not None:
                    await _settled(begin)  # the intent's fate is known before anything else is journaled
                raise
            return None, exc

    async def _abort(self, run: CallRun, *, own: bool = False) -> BaseException:
        """Runs the abort and journals it; returns the call's error (it never committed).
        ``own``: the abort is the call's second phase (its block was rejected), not the
        cleanup of what a prepare staged for a commit that will not run."""
        if self._ending and not own:
            # This task may be one made after the loop took its list of tasks to cancel, destroyed
            # with the loop before an awaited abort could run: the cleanup runs on a worker, which
            # needs no loop (a rejected call's own abort runs in the task its prepare ran in).
            self._abort_off_loop(run, run.prepared)
            return CancelledCallError(f"{run.dispatch.name!r} was prepared, then aborted: the event loop was ending")
        error: BaseException | None = None
        began = False
        try:
            begin = self._thread_future(begin_abort, run, self._journal, self._turn_key)
            try:
                # Shielded, as a commit's intent is: a cancel must not leave it half known.
                began = await asyncio.shield(begin)
            except asyncio.CancelledError:
                # From outside (the loop ending): the abort still runs, once its intent's fate is
                # known, since it only drops what the prepare staged, which would stay held.
                await _settled(begin)
                began = not begin.cancelled() and begin.exception() is None and begin.result()
            if own:
                run.invoke()
            await self._phase(run, ABORT)
        except _HandedOver as cut:  # the loop is ending, the abort's thread goes on: a worker journals it
            record = partial(_journal_cut_phase, run, self._journal, self._turn_key, ABORT, began=began)
            self._finish_off_loop(_when_done, cut.thread, record)
            return _cut_off(run, "its abort is journaled when it returns")
        except BaseException as exc:  # noqa: BLE001 - recorded in the journal's abort entry and the report
            error = _timeout_error(run, ABORT) if isinstance(exc, _TimedOut) else exc
        await self._journal_phase(run, ABORT, error, began=began)
        return error or CancelledCallError(f"{run.dispatch.name!r} was prepared, then aborted: its block was rejected")

    async def _journal_phase(self, run: CallRun, phase: str, error: BaseException | None, *, began: bool) -> None:
        """Journals how ``phase`` ended, on a worker. A cancel meanwhile (the loop ending) waits
        for the write and is noted, not raised: the call goes on to conclude with what it knows,
        rather than leave its task with the write dropped from the queue."""
        write = partial(journal_phase, began=began)
        try:
            await _shielded(self._thread_future(write, run, self._journal, self._turn_key, phase, error))
        except asyncio.CancelledError:
            self._note_outside_cancel(run)

    async def _settle_and_conclude(self, node: CallNode, result: Any, error: BaseException | None) -> None:
        run: CallRun = node.owner
        run.settle(result, error, self.clock())  # unless its deadline fixed it (``expire``)
        try:
            # Else nothing to journal, and no wait: a task made as the loop ends is not run again;
            # on a loop closed with this task pending (collected now), nothing can be run: the
            # intent stays open, in doubt, which is what is known of the call.
            assert self._loop is not None
            if run.began and not self._loop.is_closed():
                # Written whatever cancels this task meanwhile, and waited for: the call concludes
                # (and a journal inert opened closes) only once its outcome is written.
                try:
                    await _shielded(self._thread_future(stored_outcome, run, self._journal))
                except asyncio.CancelledError:
                    self._note_outside_cancel(run)
            if self._trace is not None:
                self._trace.result(run.record())
        finally:  # whatever escaped, the call ends: later calls and finish() never wait on it forever
            with InterruptsHeld():
                del self._tasks[node]
                self._called.discard(run)
                # A tool still running past the deadline or the cancel keeps its tool slot until it returns.
                lingering = run.lingering
                keep = lingering is not None and not lingering.done()
                if not keep:
                    run.left_tool()
                self._note_outside_cancel(run)
                self._start(self._scheduler.finish(node, keep_slot=keep))
                if keep:
                    with self._after_lock:
                        self._lingering.add(lingering)
                    lingering.add_done_callback(lambda done: self._tool_returned(node, done))

    def _interrupted(self, run: CallRun, phase: str, interrupt: BaseException) -> BaseException | None:
        """A KeyboardInterrupt or SystemExit landed in ``run``'s task (never the call's own
        error): what is known of the call. Its tool (or commit) was called: it is in doubt,
        fixed as a cancel from outside fixes it (``_cancelled_in_tool``; journaled ``timeout``,
        listed by ``inert recover``), and ``None`` is returned; its work, if it goes on, keeps
        its slot. Not called: it never ran, and the error returned says so (a two-phase
        caller drops what the prepare staged)."""
        what = repr(run.dispatch.name) if phase == PLAIN else f"the {phase} of {run.dispatch.name!r}"
        kind = type(interrupt).__name__
        if run in self._called and run.state is CallState.IN_TOOL:
            lingering = run.lingering
            if isinstance(lingering, concurrent.futures.Future) and not lingering.done():
                self._pool.abandon_one()  # its thread is still in the tool: the outcome write needs a worker
            run.expire(
                InDoubtError(
                    f"{what} was interrupted ({kind}) while its tool ran: whether its effect happened is "
                    "unknown; see `inert recover`"
                ),
                self.clock(),
            )
            return None
        return CancelledCallError(f"{what} was interrupted ({kind}) before its tool was called: it never ran")

    def _pass_on(self, interrupt: BaseException) -> None:
        """Raises ``interrupt`` on, once its call is concluded: out of this task, so that asyncio
        raises it out of the loop; or, while a drain() (a finish() or close()) waits, handed
        to it to raise, so that its caller hears it and may call finish() again."""
        if self._draining and self._idle is not None:
            self._interrupts.append(interrupt)
            self._idle.set()  # wakes the wait, which raises it ...
            self._update_idle()  # ... and the flag is again what the calls say
            return
        raise interrupt

    def _slot_wait(self, node: CallNode) -> None:
        """A call queued for a tool slot: as ``ThreadRuntime._slot_wait``, on the loop."""
        timeout = node.dispatch.timeout
        if timeout is not None and self._loop is not None:
            self._loop.call_later(timeout, self._slot_wait_over, node, node.slot_waits)

    def _slot_wait_over(self, node: CallNode, wait: int) -> None:
        with InterruptsHeld():
            run = node.owner
            over = lifecycle.slot_wait_over(self._scheduler, node, wait, self.clock())
            if over is None:
                if node.state is State.WAITING and node.slot_waits == wait:
                    self._slot_wait(node)  # calls within their deadlines hold the slots: wait on
                return
            if not over.commit:
                self._log.append(run)
                if self._trace is not None:
                    self._trace.dispatch(run.record())
            if self._trace is not None:
                self._trace.result(run.record())
            if over.commit:  # an abort needs no slot; drain() waits for it
                assert self._loop is not None
                cleanup = self._loop.create_task(self._abort(run))
                self._cleanups.add(cleanup)
                cleanup.add_done_callback(self._cleanups.discard)
            self._start(over.ready)

    def _tool_returned(self, node: CallNode, done: Any) -> None:
        """The tool of a call concluded without it returned (on a worker thread or the loop)."""

        def returned() -> None:
            with InterruptsHeld():
                node.owner.left_tool()
                self._start(self._scheduler.give_slot_back(node))

        self._off_loop_ended(done, returned)

    def _finish_off_loop(self, fn: Callable[..., None], *args: Any) -> concurrent.futures.Future[None]:
        """The loop is ending: what is left of a call (journaling a phase it cut off, aborting
        what a prepare staged) runs on a worker, which needs no loop. Tracked as a tool that
        outlived its call is, so the journal it writes to is closed only after it."""
        done = self._pool.submit(fn, *args)
        with self._after_lock:
            self._lingering.add(done)
        done.add_done_callback(self._off_loop_ended)
        return done

    def _abort_off_loop(self, run: CallRun, prepared: Any) -> None:
        """Drops what ``run``'s prepare staged, on a worker. A finish() waits for it (within
        the call's deadline), so the abort its report gives is journaled once it returns."""
        done = self._finish_off_loop(abort_staged, run, prepared, self._journal, self._turn_key, self)
        with self._after_lock:
            self._dropping[done] = run.dispatch.timeout
        done.add_done_callback(self._abort_done)

    def _abort_done(self, done: concurrent.futures.Future[None]) -> None:
        with self._after_lock:
            self._dropping.pop(done, None)

    async def _aborts_off_loop(self) -> None:
        """Waits for the aborts ``_abort_off_loop`` runs, each within its call's deadline."""
        with self._after_lock:
            dropping = dict(self._dropping)
        if not dropping:
            return
        timeouts = list(dropping.values())
        limit = None if None in timeouts else max(t for t in timeouts if t is not None)
        waits = [asyncio.wrap_future(done) for done in dropping]
        # Shielded, as the aborts on the loop are: a cancel of this wait must not cancel them.
        await asyncio.shield(asyncio.wait(waits, timeout=limit))

    def _off_loop_ended(self, done: Any, then: Callable[[], None] | None = None) -> None:
        """Work of this turn that outlived its call (``_lingering``) ended, on its thread or
        the loop: released here, then ``then`` (a slot given back) runs on the loop."""
        loop = self._loop
        assert loop is not None
        # Released here, not on the loop: a callback scheduled as the loop closes is dropped
        # with it, which would leave the journal inert opened to the garbage collector.
        with self._after_lock:
            self._lingering.discard(done)
        self._run_after()
        if then is not None:
            hand_back = _HandBack(self, then)
            try:
                loop.call_soon_threadsafe(hand_back)
            except RuntimeError:  # asyncio.run closed the loop before this tool returned
                self._closed_hand_over(hand_back)

    def _hand_backs(self) -> list[_HandBack]:
        with self._after_lock:
            return list(self._handing)

    def _track_hand_back(self, hand_back: _HandBack) -> None:
        with self._after_lock:
            self._handing.add(hand_back)

    def _claim_hand_back(self, hand_back: _HandBack) -> bool:
        """Whether this caller is the one to run ``hand_back`` (the loop, or whoever finds
        the loop closed first): it runs once."""
        with self._after_lock:
            if hand_back not in self._handing:
                return False
            self._handing.discard(hand_back)
            return True

    def _closed_hand_over(self, hand_back: _HandBack) -> None:
        """A slot came back once the loop had closed (or was handed back as it closed, and
        dropped with it: ``bind`` finds those). Nothing runs on that loop again, so the calls
        the slot would start conclude on this thread, one at a time (``_closed_lock``)."""
        with self._closed_lock, InterruptsHeld():
            self._ending = True
            hand_back()  # the slot's calls start through ``_start``, which concludes them

    def _conclude_all_unrun(self) -> None:
        """Concludes the calls in ``_unrun``, those their conclusions start too, in a loop
        rather than by recursion (a long queue of calls waiting for one slot)."""
        if self._concluding:
            return
        self._concluding = True
        try:
            while self._unrun:
                self._conclude_unrun(self._unrun.popleft())
        finally:
            self._concluding = False

    def _conclude_unrun(self, node: CallNode) -> None:
        """A call whose turn came once the loop was ending (or had closed). A prepared one
        drops what it staged, on a worker, which needs no loop: else it would stay staged, and
        the turn never conclude. Any other is not started."""
        run: CallRun = node.owner
        phase = run.take_up_phase() if run.dispatch.two_phase else PLAIN
        if phase in (COMMIT, ABORT):
            self._abort_off_loop(run, run.prepared)
            why = "its block was rejected" if phase == ABORT else "the event loop was ending"
            error: BaseException = CancelledCallError(f"{run.dispatch.name!r} was prepared, then aborted: {why}")
        else:
            error = _not_started(run)
        run.settle(None, error, self.clock())
        if self._trace is not None:
            self._trace.result(run.record())
        self._tasks.pop(node, None)
        self._start(self._scheduler.finish(node, keep_slot=False))

    async def _invoke(self, node: CallNode, run: CallRun) -> Any:
        invocation = run.invocation
        if invocation is None:
            raise MissingToolError(f"no callable for tool {run.dispatch.name!r}; pass it in tools=")
        with tool_span(run.record()) as span:
            self._in_tool.add(node)
            try:
                if run.dispatch.timeout is None:
                    result = await self._call(invocation, run)
                else:
                    result = await self._call_by(run.dispatch.timeout, invocation, run)
            except (_TimedOut, asyncio.CancelledError):
                if not invocation.is_async:
                    self._pool.abandon_one()  # its thread is still in the tool; the others keep their capacity
                raise
            span.result = result
        return result

    async def _call_by(self, timeout: float, invocation: Invocation, run: CallRun) -> Any:
        """``_call`` under inert's deadline. The tool runs in a task of its own, so a tool
        that ignores the cancel still times out when the deadline passes: it is asked to
        stop and left to finish alone (as a thread that outlives its deadline is), its
        result dropped. Cancelled from outside (its block rejected), it is asked to stop
        and awaited until it does, up to the same deadline."""
        work = asyncio.ensure_future(_carried(self._call(invocation, run)))
        if invocation.is_async:
            run.lingering = work  # a plain tool's thread is kept by _tool_in_thread
        deadline = asyncio.timeout(timeout)
        try:
            async with deadline:
                return _unwrapped(await asyncio.shield(work))
        except TimeoutError:
            if deadline.expired():
                work.cancel()
                work.add_done_callback(_retrieved)  # what it raises after ignoring the cancel is no one's to log
                raise _TimedOut from None  # inert's deadline; a tool's own TimeoutError is its error
            raise
        except asyncio.CancelledError:
            work.cancel()
            # asyncio.wait, not a timeout around an await of ``work``: the timeout's own cancel
            # would be passed on to ``work``, and a tool that ignores cancels would swallow it
            # and hold the call (and finish()) past its deadline for ever.
            when = deadline.when()
            assert self._loop is not None and when is not None
            await asyncio.wait({work}, timeout=max(0.0, when - self._loop.time()))
            if not work.done():
                work.add_done_callback(_retrieved)  # left to finish alone, as at the deadline
            raise

    async def _call(self, invocation: Invocation, run: CallRun) -> Any:
        current = run.current()
        if invocation.is_async:
            self._called.add(run)
            result = invocation.call(run.dispatch.name, run.dispatch.arguments, current)
        else:
            result = await self._tool_in_thread(
                run, partial(invocation, run.dispatch.name, run.dispatch.arguments, current, self)
            )
        if inspect.isawaitable(result):
            # What the tool raised, marked as its own (``_is_interrupt``); a Ctrl-C landing in
            # the tool's frames meanwhile is told apart (``SignalsTold``): an interrupt.
            with SignalsTold():
                result = _unwrapped(await _carried(result))
        return result


class _LatePrepare:
    """The hand-over of a plain prepare's outcome between its worker thread and the loop,
    which may stop waiting at the deadline: exactly one of them drops a late prepare. The
    thread does, when it returns after the loop gave up (journaled, then aborted, in the
    thread: neither the loop nor the pool need be alive by then)."""

    def __init__(self, run: CallRun, journal: Journal, turn_key: str, owner: object) -> None:
        self._lock = threading.Lock()
        self._abandoned = False
        self._handed = False
        self._run, self._journal, self._turn_key, self._owner = run, journal, turn_key, owner

    def run(self, prepare: Callable[[], Any]) -> Any:
        """In the worker thread: the prepare, then its outcome to the loop, or dropped here."""
        try:
            prepared = prepare()
        except BaseException as exc:
            if self._hand():
                raise
            _drop_prepared(self._run, None, exc, self._journal, self._turn_key, self._owner)
            return None
        if self._hand():
            return prepared
        _drop_prepared(self._run, prepared, None, self._journal, self._turn_key, self._owner)
        return None

    def _hand(self) -> bool:
        with self._lock:
            self._handed = not self._abandoned
            return self._handed

    def abandon(self) -> bool:
        """On the loop, at the deadline: whether the thread will drop it (it has not returned)."""
        with self._lock:
            self._abandoned = not self._handed
            return self._abandoned


class _EndWatch(asyncio.Task[None]):
    """A task of inert's on the loop that waits to be told to stop. asyncio.run's end cancels
    every task it finds, this one too, and ``cancel`` notes it at once (``on_end``), before
    the loop runs anything again: a call that a lingering tool's end (its slot given back) or
    a timer would start after that is not started (``AsyncRuntime._ending``), where no call's
    own task was there to be cancelled. A cancel of every task from the app's own code is
    taken as the loop's end too: it is one, asked of every task."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_end: Callable[[], None]) -> None:
        self._over: asyncio.Future[None] = loop.create_future()
        self._on_end = on_end
        super().__init__(_settled(self._over), loop=loop, name="inert-loop-end-watch")

    def cancel(self, msg: Any | None = None) -> bool:
        self._on_end()
        return super().cancel(msg)

    def stop(self) -> None:
        """Ends it (in its next step): nothing of its turn is left to start. A loop closed
        with a call's task pending runs nothing again: the task, collected, ends here."""
        if not self._over.done() and not self._over.get_loop().is_closed():
            self._over.set_result(None)


class _HandBack:
    """A slot handed back on the loop (``AsyncRuntime._off_loop_ended``), run once: by the
    loop, or by whoever finds the loop closed without having run it."""

    def __init__(self, runtime: AsyncRuntime, then: Callable[[], None]) -> None:
        self._runtime, self._then = runtime, then
        runtime._track_hand_back(self)

    def __call__(self) -> None:
        if self._runtime._claim_hand_back(self):
            self._then()


class _HandedOver(Exception):
    """The loop's end cut off the wait for a phase that goes on (its thread, or a coroutine
    phase's task): ``thread`` holds its real outcome, which a worker journals once it is
    known (see ``_when_done``)."""

    def __init__(self, thread: concurrent.futures.Future[Any]) -> None:
        super().__init__()
        self.thread = thread


def _thread_view(work: asyncio.Future[Any]) -> concurrent.futures.Future[Any]:
    """A coroutine phase's outcome, as a thread's future a worker can wait on (``_when_done``):
    set once ``work`` ends, on the loop, which runs the tasks it cancels to their end."""
    view: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def copy(done: asyncio.Future[Any]) -> None:
        if done.cancelled():
            view.set_exception(asyncio.CancelledError("cancelled by the event loop ending"))
        elif (failure := done.exception()) is not None:
            view.set_exception(failure)
        else:
            view.set_result(done.result())

    work.add_done_callback(copy)
    return view


def _when_done(thread: concurrent.futures.Future[Any], then: Callable[[concurrent.futures.Future[Any]], None]) -> None:
    """On a worker: ``then(thread)`` once ``thread`` is done. It needs no event loop, so
    what a cut-off phase did is journaled (and what a prepare staged dropped) after the loop is gone."""
    concurrent.futures.wait([thread])
    then(thread)


def _outcome(thread: concurrent.futures.Future[Any]) -> tuple[Any, BaseException | None]:
    """What a done phase's thread returned, or what it raised (carried or not)."""
    failure = thread.exception()
    if failure is not None:
        return None, failure
    value = thread.result()
    return (None, value.exc) if isinstance(value, _Raised) else (value, None)


def _journal_cut_phase(
    run: CallRun, journal: Journal, turn_key: str, phase: str, thread: concurrent.futures.Future[Any], *, began: bool
) -> None:
    journal_phase(run, journal, turn_key, phase, _outcome(thread)[1], began=began)


def _drop_cut_prepare(
    run: CallRun, journal: Journal, turn_key: str, owner: object, thread: concurrent.futures.Future[Any]
) -> None:
    """A prepare the loop's end cut off returned: as ``_drop_prepared``."""
    _drop_prepared(run, *_outcome(thread), journal, turn_key, owner)


def _drop_prepared(  # noqa: PLR0917 - the prepare's outcome and where it is journaled
    run: CallRun, prepared: Any, failure: BaseException | None, journal: Journal, turn_key: str, owner: object
) -> None:
    """A prepare no commit follows (past its deadline, cut off by the loop's end) ended:
    journals its outcome and, if it staged something, drops it (on the calling worker)."""
    journal_phase(run, journal, turn_key, PREPARE, failure, began=True)
    if failure is None:
        abort_staged(run, prepared, journal, turn_key, owner)


def _cut_off(run: CallRun, then: str) -> CancelledCallError:
    return CancelledCallError(f"{run.dispatch.name!r} was cut off by the event loop ending; {then}")


async def _shielded(future: asyncio.Future[T]) -> T:
    """``future``'s result; a cancel of this task meanwhile (the loop ending) is raised only
    once ``future`` is done, so what its thread wrote is known before anything else is."""
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await _settled(future)
        raise


def _no_stop_iteration(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a worker thread (a plain tool, a phase, a journal write). A
    StopIteration it raises (``next()`` on an empty iterator) becomes a RuntimeError, as
    Python does when one leaves a coroutine: asyncio cannot set StopIteration on a future,
    which would then never complete."""
    try:
        return fn(*args)
    except (KeyboardInterrupt, SystemExit) as exc:  # no signal lands off the main thread: the work's own
        _mark_own(exc)
        raise
    except StopIteration as exc:
        raise RuntimeError(
            "StopIteration was raised (next() on an empty iterator?), which asyncio cannot "
            "carry out of a thread: recorded as this RuntimeError, its cause"
        ) from exc


def _carried_from_thread(body: Callable[[], T]) -> T | _Raised:
    """A phase's ``body`` in a worker thread, carrying out what ``_carried`` carries out of a
    task: a thread's future holding one of those would throw it into the task awaiting it."""
    try:
        return _no_stop_iteration(body)
    except (KeyboardInterrupt, SystemExit, GeneratorExit) as exc:
        return _Raised(exc)


@dataclass(frozen=True)
class _Raised:
    """What a tool raised, carried out of the task (or thread) that ran it: asyncio re-raises
    a KeyboardInterrupt or SystemExit out of the event loop from any task that ends with one,
    a GeneratorExit thrown into the awaiting task closes it instead of reaching its handler
    (the call never concluded), and a task the loop's end cancelled that ends with any other
    exception is logged as unhandled. A thread's phase carries only the first three."""

    exc: BaseException


async def _carried(work: Awaitable[T]) -> T | _Raised:
    """``work``'s result, or what it raised (but a cancel): the task running it always ends
    with a result, so asyncio never reports it, even when the loop's end cancels it and no
    one awaits it any more; ``_unwrapped`` raises it where it is awaited."""
    try:
        return await work
    except (Exception, KeyboardInterrupt, SystemExit, GeneratorExit) as exc:  # noqa: BLE001 - carried, not lost
        _mark_own(exc)
        return _Raised(exc)


def _unwrapped(outcome: T | _Raised) -> T:
    """Raises what ``_carried`` carried, in the task that awaits it (which records it)."""
    if isinstance(outcome, _Raised):
        raise outcome.exc
    return outcome


_OWN = "_inert_raised_by_the_work"


def _mark_own(exc: BaseException) -> None:
    """``exc`` was raised by a tool (or a journal write) itself, on its thread or carried out
    of its coroutine: its outcome, not an interrupt of inert's (``_is_interrupt``). A Ctrl-C's
    own KeyboardInterrupt (``from_signal``) is no tool's, wherever it landed."""
    if isinstance(exc, (KeyboardInterrupt, SystemExit)) and not from_signal(exc):
        setattr(exc, _OWN, True)


def _is_interrupt(exc: BaseException) -> bool:
    """A KeyboardInterrupt or SystemExit that landed in a call's task on the loop (a Ctrl-C in
    inert's own code), not one a tool raised: never a call's error, never swallowed."""
    return isinstance(exc, (KeyboardInterrupt, SystemExit)) and not getattr(exc, _OWN, False)


def _retrieved(done: asyncio.Future[Any]) -> None:
    """Reads a dropped future's exception, so asyncio does not log it as never retrieved."""
    if not done.cancelled():
        done.exception()


PLAIN = "call"
"""``_cancelled_in_tool``'s name for a plain (one-phase) call's only phase."""


def _not_started(run: CallRun) -> CancelledCallError:
    """The outcome of a call that reached its turn once the event loop was ending
    (``AsyncRuntime._ending``): it is not started, and nothing of it is journaled."""
    return CancelledCallError(
        f"{run.dispatch.name!r} was not started: the event loop was ending (its other calls' tasks were "
        "cancelled from outside inert)"
    )


def _cancelled_in_tool(run: CallRun, phase: str, now: float) -> bool:
    """This task was cancelled from outside inert while ``run``'s tool (or its ``phase``)
    ran: the effect may have happened, so the call is fixed in doubt, as an overdue deadline
    fixes it (journaled ``timeout``, listed by ``inert recover``). Returns whether it was;
    ``False`` for a cancel this task was not asked for (the tool's own CancelledError), or
    before the tool was called (then it never ran: the cancel is its error)."""
    task = asyncio.current_task()
    if run.state is not CallState.IN_TOOL or task is None or task.cancelling() == 0:
        return False
    what = repr(run.dispatch.name) if phase == PLAIN else f"the {phase} of {run.dispatch.name!r}"
    return run.expire(
        InDoubtError(
            f"{what} was cancelled from outside inert (its task, or the event loop ending) while its tool ran: "
            "whether its effect happened is unknown; see `inert recover`"
        ),
        now,
    )


async def _settled(future: asyncio.Future[Any]) -> None:
    """Waits for ``future`` whatever it ends with."""
    try:
        await future
    except BaseException:  # noqa: BLE001 - only its completion matters here
        return
