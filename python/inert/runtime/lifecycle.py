"""What a block's fate does to its call, written once for every runtime (threads,
asyncio tasks, the simulator's virtual time).

A call whose block is accepted runs, if it has not been let go yet; a prepared
two-phase call commits. A call whose block is rejected never runs if it has not
started; if it has, it never counts: a read is abandoned (later calls stop waiting
for it), a prepared two-phase call aborts, and one still preparing aborts when its
prepare returns. The runtime serialises these with the rest of its scheduling (its
lock, or its event loop) and starts the calls they return.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..audit.trace import TraceWriter
from ..errors import ToolTimeoutError
from .call import CallRun, Fate
from .call_state import CallState
from .schedule import Node, Scheduler, State

__all__ = ["SlotWait", "confirm", "retract", "slot_wait_over", "start_all", "trace_discard"]


def confirm(scheduler: Scheduler[CallRun], node: Node[CallRun]) -> list[Node[CallRun]]:
    """Its block was accepted; returns the calls to start now."""
    node.owner.fate = Fate.CONFIRMED
    if node.state is State.PREPARED:
        return scheduler.resume(node)  # its commit
    if node.state is State.WAITING:
        node.early = False  # let go early but not started yet: it runs after acceptance, so it is not early
    return scheduler.permit(node, early=False)


def retract(scheduler: Scheduler[CallRun], node: Node[CallRun]) -> tuple[list[Node[CallRun]], bool]:
    """Its block was rejected; returns the calls to start now, and whether it had started
    (then its result is discarded, and the runtime says so)."""
    run = node.owner
    run.fate = Fate.RETRACTED  # a run that started is now ``discarded``
    if node.state in (State.GATED, State.WAITING):
        if run.state is not CallState.CANCELLED:  # else cancelled by a retraction an interrupt cut short
            run.cancel()
        return scheduler.cancel(node), False
    ready = scheduler.resume(node, slot=False) if node.state is State.PREPARED else []  # its abort
    return ready + scheduler.abandon(node), True


def start_all(
    nodes: list[Node[CallRun]], launch: Callable[[Node[CallRun]], None], hand_over: Callable[[Node[CallRun]], None]
) -> None:
    """Launches each call the scheduler started (its start time, log entry, trace event),
    then hands it to what runs it (a worker, a task). The scheduler counts them running, so
    each is handed over even when its launch raises: that launch is finished (a part already
    done is not done again) and the exception raised once all are handed over; else drain()
    would wait for them for ever. A Ctrl-C no longer lands here (every caller on the main
    thread holds it off, ``InterruptsHeld``); anything else raised in a launch still may."""
    interrupt: BaseException | None = None
    for node in nodes:
        try:
            launch(node)
        except BaseException as exc:  # noqa: BLE001 - raised below, once every call is handed over
            interrupt = interrupt or exc
            launch(node)
        hand_over(node)
    if interrupt is not None:
        raise interrupt


def trace_discard(trace: TraceWriter | None, run: CallRun) -> None:
    """Traces that a started call's result is discarded, once: a retraction an interrupt
    cut short as it returned is acted on again by the next step (see ``TurnDriver._act``)."""
    if trace is not None and not run.discard_traced:
        trace.discard(run.record())
        run.discard_traced = True


@dataclass(frozen=True)
class SlotWait:
    """A call that gave up its wait for a tool slot: the calls to start now, and whether it
    was a prepared call's commit (what its prepare staged must be dropped: the runtime runs
    its abort, which needs no slot) rather than a call that never started (the runtime logs it)."""

    ready: list[Node[CallRun]]
    commit: bool


def slot_wait_over(scheduler: Scheduler[CallRun], node: Node[CallRun], wait: int, now: float) -> SlotWait | None:
    """A call's deadline passed while it waited (wait number ``wait``) for a tool slot. If
    every slot is kept by a call past its deadline, whose tool may never return, the call
    fails without running (``ToolTimeoutError``); returns ``None`` if it got its slot
    meanwhile, or live calls hold the slots (they end by their own deadlines: the runtime
    checks again at the next one)."""
    run = node.owner
    if node.state is not State.WAITING or node.slot_waits != wait:
        return None
    if not scheduler.slots.held_past_deadlines(node.dispatch.name):
        return None
    ready = scheduler.withdraw(node, wait)
    commit = run.state is CallState.PREPARED  # a prepared call's commit; otherwise it never started
    if not commit:
        run.launch(node.early, now)
    what = f"the commit of {run.dispatch.name!r}" if commit else repr(run.dispatch.name)
    run.expire(
        ToolTimeoutError(
            f"{what} could not start within {run.dispatch.timeout} s: every slot of its tool (limits=) is held by a "
            "call past its deadline whose tool has not returned; it never ran"
            + ("; what its prepare staged is dropped" if commit else "")
        ),
        now,
    )
    return SlotWait(ready, commit)
