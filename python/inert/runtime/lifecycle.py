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

from .call import CallRun, Fate
from .schedule import Node, Scheduler, State

__all__ = ["confirm", "retract"]


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
    run.fate = Fate.RETRACTED
    if node.state in (State.GATED, State.WAITING):
        return scheduler.cancel(node), False
    run.discarded = True
    ready = scheduler.resume(node, slot=False) if node.state is State.PREPARED else []  # its abort
    return ready + scheduler.abandon(node), True
