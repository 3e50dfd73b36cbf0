"""The life of one dispatched call in a runtime, as one state machine: the states
a ``CallRun`` goes through and what may follow what. Every runtime (threads,
asyncio tasks, the simulator's virtual time) moves its calls through this one
table, and a move that is not in it is refused (``CallStateError``): a bug in
inert, never a caller's mistake.

Two parties may move a call: whoever runs it (a worker thread, a task, the
virtual clock) and its deadline; a runtime serialises them (its lock, or its
event loop). What the verifier decided of the call's block (``Fate``) is not
part of this machine: it can arrive in any state and only chooses the second
phase of a two-phase call. Nor is the call's place in stream order: the
scheduler's ``Node.state`` says whom the call holds back and whether it has a
tool slot; this says where the call's own work is.

The table (``TRANSITIONS``)::

    SCHEDULED   -> STARTED       let go: its start time and deadline are set
                -> CANCELLED     retracted before it started: it never runs
    STARTED     -> JOURNALING    its worker (or task) takes it up
                -> SETTLED       retracted before its task took it up (asyncio): it never runs
                -> TIMED_OUT     its deadline passed first, or it never got a tool slot
    JOURNALING  -> IN_TOOL       the intent is journaled: its tool (or this phase) is called
                -> SETTLED       the journal held the key's outcome (replayed), or failed
                -> TIMED_OUT     its deadline passed while the journal took the intent
    IN_TOOL     -> RETURNED      its tool returned or raised, and its worker left it (threads)
                -> PREPARED      a two-phase call's prepare returned what it staged
                -> SETTLED       its tool returned or raised: that is its outcome
                -> OVERDUE       its deadline passed while its tool ran
    RETURNED    -> SETTLED       its worker fixes the outcome
                -> OVERDUE_RETURNED  its deadline passed first: the outcome is a timeout
    PREPARED    -> JOURNALING    its block was decided: its commit or abort begins
                -> TIMED_OUT     its commit never got a tool slot: what it staged is dropped
    OVERDUE     -> OVERDUE_RETURNED  the tool that outlived the deadline returned at last

CANCELLED, SETTLED, TIMED_OUT and OVERDUE_RETURNED are final. The outcome is
fixed (``CallRun.settled``) in SETTLED, TIMED_OUT, OVERDUE and OVERDUE_RETURNED.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

__all__ = [
    "IN_PHASE_STATES",
    "OVERDUE_STATES",
    "SETTLED_STATES",
    "TIMED_OUT_STATES",
    "TRANSITIONS",
    "UNLAUNCHED_STATES",
    "CallState",
    "CallStateError",
]


class CallStateError(AssertionError):
    """A move the table does not allow: a bug in inert's runtime. An ``AssertionError``
    that is raised even under ``python -O``."""


class CallState(enum.Enum):
    """Where one dispatched call is in its life (see the module's table)."""

    SCHEDULED = "scheduled"
    """Its block closed: it waits to be let go (its block's fate, earlier calls, a tool slot)."""
    CANCELLED = "cancelled"
    """Its block was rejected before it started: it never runs."""
    STARTED = "started"
    """Let go: it waits for its worker or task (a one-phase call's deadline runs from here)."""
    JOURNALING = "journaling"
    """Its worker journals its intent (or its phase's), or finds the key's entry; its tool is not called yet."""
    IN_TOOL = "in tool"
    """Its tool (or a two-phase tool's phase) was called and has not returned."""
    RETURNED = "returned"
    """Its tool returned or raised and its worker left it; the worker fixes the outcome next."""
    PREPARED = "prepared"
    """A two-phase call between its phases: it waits for its block's fate (no deadline, no tool slot)."""
    SETTLED = "settled"
    """Its outcome is fixed: returned, raised, replayed or cancelled."""
    TIMED_OUT = "timed out"
    """Its deadline passed before its tool was called: it never ran (its worker, if any, concludes it)."""
    OVERDUE = "overdue"
    """Its deadline passed while its tool ran (its effect is in doubt); the deadline concludes
    it, and the tool, which may still run, keeps its tool slot until it returns."""
    OVERDUE_RETURNED = "overdue, returned"
    """Its deadline passed after its tool was called (its effect is in doubt); the tool has
    returned since, and what it returned is dropped."""

    # What each state answers, set once below from the table and the sets that follow it
    # (attributes of the member: a run reads them without a call).
    successors: tuple[CallState, ...]
    """What may follow this state (from ``TRANSITIONS``; a tuple, which compares by identity)."""
    settled: bool
    """The outcome is fixed: a later one is ignored."""
    timed_out: bool
    """Its deadline fixed the outcome (a ``ToolTimeoutError``)."""
    overdue: bool
    """Its deadline passed after its tool was called: the effect is in doubt, and the deadline
    concludes the call (under threads), not its worker."""
    in_phase: bool
    """Its worker took it up and its outcome is open: a deadline armed for the phase applies."""
    launched: bool
    """It was let go (it has a start time), whatever happened since."""


_S = CallState

TRANSITIONS: Mapping[CallState, tuple[CallState, ...]] = {
    _S.SCHEDULED: (_S.STARTED, _S.CANCELLED),
    _S.STARTED: (_S.JOURNALING, _S.SETTLED, _S.TIMED_OUT),
    _S.JOURNALING: (_S.IN_TOOL, _S.SETTLED, _S.TIMED_OUT),
    _S.IN_TOOL: (_S.RETURNED, _S.PREPARED, _S.SETTLED, _S.OVERDUE),
    _S.RETURNED: (_S.SETTLED, _S.OVERDUE_RETURNED),
    _S.PREPARED: (_S.JOURNALING, _S.TIMED_OUT),
    _S.OVERDUE: (_S.OVERDUE_RETURNED,),
    _S.CANCELLED: (),
    _S.SETTLED: (),
    _S.TIMED_OUT: (),
    _S.OVERDUE_RETURNED: (),
}
"""Each state -> the states that may follow it."""

SETTLED_STATES = frozenset({_S.SETTLED, _S.TIMED_OUT, _S.OVERDUE, _S.OVERDUE_RETURNED})
TIMED_OUT_STATES = frozenset({_S.TIMED_OUT, _S.OVERDUE, _S.OVERDUE_RETURNED})
OVERDUE_STATES = frozenset({_S.OVERDUE, _S.OVERDUE_RETURNED})
IN_PHASE_STATES = frozenset({_S.JOURNALING, _S.IN_TOOL, _S.RETURNED})
UNLAUNCHED_STATES = frozenset({_S.SCHEDULED, _S.CANCELLED})

for _state in CallState:
    _state.successors = TRANSITIONS[_state]
    _state.settled = _state in SETTLED_STATES
    _state.timed_out = _state in TIMED_OUT_STATES
    _state.overdue = _state in OVERDUE_STATES
    _state.in_phase = _state in IN_PHASE_STATES
    _state.launched = _state not in UNLAUNCHED_STATES
del _state
