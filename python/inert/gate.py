"""The gate: pure policy. It turns the core's outcomes into commands for a
runtime (schedule a call, confirm it, retract it) under inert's invariants,
with no threads, clocks or I/O, so every runtime (threads, asyncio, virtual
time) applies the same decisions.

- Invariant 1: a write or idempotent call is let go only when its call is
  committed (every token of its block accepted).
- Invariant 2: a read may be let go when its call closes in the draft
  (``read_eager``), if its spec allows speculation. So may the first phase of a
  two-phase tool (``prepare``), which is observationally inert: its second
  phase, ``commit``, is the write, and runs only once the call is committed.
- Invariant 5: the effect table is consulted once, when the call closes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ._core import BlockMalformed, Call, CallClosed, CallCommitted, CallRetracted, Malformed
from .call_ids import tool_call_ids
from .effects import EffectClass, EffectTable, Footprint
from .errors import PolicyError
from .outcomes import Outcome
from .report import AcceptedCall

__all__ = ["POLICIES", "Command", "Confirm", "Dispatch", "Gate", "Plan", "Retract", "Schedule"]

POLICIES = ("read_eager", "defer", "eager_unsafe")
"""``read_eager``: reads run when their call closes in the draft, effects after
acceptance. ``defer``: everything after acceptance. ``eager_unsafe``: everything
when its call closes in the draft, no ordering (measurement only)."""


@dataclass(frozen=True)
class Dispatch:
    """What the gate decided about one closed call: its identity and what the
    effect table said of it when it closed."""

    commit_key: str
    name: str
    arguments: dict[str, Any]
    effect: EffectClass
    footprint: Footprint
    span: tuple[int, int]
    timeout: float | None
    two_phase: bool = False
    """Its tool prepares, then commits (after acceptance) or aborts (after rejection)."""
    recurs: bool = False
    """Its key was dispatched before in this turn and retracted (rejected tokens drafted
    again): whatever the journal holds under it is a discarded run's, which never counts."""


@dataclass(frozen=True)
class Schedule:
    """A call closed: it takes its place in stream order. ``permit``: it may run
    now, before acceptance (a speculative read, or any call under ``eager_unsafe``)."""

    dispatch: Dispatch
    permit: bool


@dataclass(frozen=True)
class Confirm:
    """The call's block was accepted: it runs (if it has not already) and counts."""

    commit_key: str


@dataclass(frozen=True)
class Retract:
    """The call's block was rejected: it must not run; if it ran, it never counts."""

    commit_key: str


Command = Schedule | Confirm | Retract


class Plan:
    """What a step makes the gate do (``Gate.plan``): the commands, the keys let go, and
    what the gate remembers once it adopts the plan (``Gate.adopt``)."""

    __slots__ = ("commands", "committed", "let_go", "malformed", "newly_permitted", "retracted", "unpermitted")

    def __init__(self) -> None:
        # Built for every step with outcomes: plain slots, not a dataclass's factories.
        self.commands: list[Command] = []
        self.let_go: list[str] = []
        self.committed: list[Call] = []
        self.malformed: list[Malformed] = []
        self.newly_permitted: set[str] = set()
        self.unpermitted: set[str] = set()
        self.retracted: set[str] = set()

    def permit(self, key: str) -> None:
        self.newly_permitted.add(key)
        self.unpermitted.discard(key)

    def unpermit(self, key: str) -> None:
        self.newly_permitted.discard(key)
        self.unpermitted.add(key)

    def permitted(self, key: str, before: set[str]) -> bool:
        """Whether ``key`` is let go and not yet committed or retracted, ``before`` the gate's own."""
        return key in self.newly_permitted or (key in before and key not in self.unpermitted)


class Gate:
    """Decides, outcome by outcome, what a runtime does with each call, and
    remembers what the accepted stream holds (for the report).

    Args:
        effects: the effect table (unknown tools are its default, a write).
        policy: one of ``POLICIES``.
        timeout: the default per-call timeout; a tool's ``ToolSpec(timeout=)`` wins.
        two_phase: the tools that prepare, then commit or abort.

    Raises:
        PolicyError: ``policy`` is not one of ``POLICIES``.
    """

    def __init__(
        self,
        effects: EffectTable,
        policy: str = "read_eager",
        timeout: float | None = None,
        two_phase: frozenset[str] = frozenset(),
    ) -> None:
        if policy not in POLICIES:
            raise PolicyError(f"unknown policy {policy!r}; use one of {', '.join(POLICIES)}")
        self.effects = effects
        self.policy = policy
        self.timeout = timeout
        self.two_phase = two_phase
        self._permitted: set[str] = set()  # keys let go and not yet committed or retracted
        self._retracted: set[str] = set()  # keys whose calls were retracted: they may recur
        self.committed: list[Call] = []
        """The accepted stream's calls, in stream order."""
        self.malformed: list[Malformed] = []
        """The accepted stream's malformed blocks, in stream order."""

    @property
    def ordered(self) -> bool:
        """Whether runtimes keep stream order between conflicting calls (all but ``eager_unsafe``)."""
        return self.policy != "eager_unsafe"

    def plan(self, outcomes: Iterable[Outcome]) -> Plan:
        """What one step's outcomes make the gate do, changing nothing yet (``adopt`` does): a
        caller interrupted before it adopts the plan can plan the same outcomes again."""
        plan = Plan()  # what the step changes, over the gate as it is (not copied: a turn stays linear)
        outcomes = list(outcomes)
        # A call that closes and commits in one step (closed by the verifier's correction, or
        # its body read once its end was accepted) is accepted already: it runs as committed,
        # not early, whatever thread gets there first.
        settled = {o.call.commit_key for o in outcomes if isinstance(o, CallCommitted)}
        for outcome in outcomes:
            if isinstance(outcome, CallClosed):
                dispatch = self._dispatch(outcome.call, plan)
                spec = self.effects.spec(dispatch.name)
                early = spec.speculate or dispatch.two_phase  # a read, or a prepare: inert until committed
                early = early and dispatch.commit_key not in settled
                permit = self.policy == "eager_unsafe" or (self.policy == "read_eager" and early)
                plan.commands.append(Schedule(dispatch, permit))
                if permit:
                    plan.permit(dispatch.commit_key)
                    plan.let_go.append(dispatch.commit_key)
            elif isinstance(outcome, CallCommitted):
                key = outcome.call.commit_key
                plan.committed.append(outcome.call)
                plan.commands.append(Confirm(key))
                if not plan.permitted(key, self._permitted):
                    plan.let_go.append(key)
                plan.unpermit(key)
            elif isinstance(outcome, CallRetracted):
                plan.unpermit(outcome.call.commit_key)
                plan.retracted.add(outcome.call.commit_key)
                plan.commands.append(Retract(outcome.call.commit_key))
            elif isinstance(outcome, BlockMalformed):
                plan.malformed.append(outcome.malformed)
        return plan

    def adopt(self, plan: Plan) -> None:
        """Makes ``plan``'s step part of what the gate remembers."""
        if plan.unpermitted:
            self._permitted -= plan.unpermitted
        if plan.newly_permitted:
            self._permitted |= plan.newly_permitted
        if plan.retracted:
            self._retracted |= plan.retracted
        if plan.committed:
            self.committed += plan.committed
        if plan.malformed:
            self.malformed += plan.malformed

    def accepted(self, turn_key: str | None = None) -> list[AcceptedCall]:
        """The accepted stream's calls, as reconciliation reads them; with their OpenAI
        tool-call ids when ``turn_key`` is given."""
        ids = tool_call_ids(self.committed, turn_key) if turn_key is not None else [None] * len(self.committed)
        return [
            AcceptedCall(c.commit_key, c.name, c.arguments, c.span, i) for c, i in zip(self.committed, ids, strict=True)
        ]

    def _dispatch(self, call: Call, plan: Plan) -> Dispatch:
        spec = self.effects.spec(call.name)
        return Dispatch(
            commit_key=call.commit_key,
            name=call.name,
            arguments=call.arguments,
            effect=spec.effect,
            footprint=spec.footprint(call.arguments),
            span=call.span,
            timeout=spec.timeout if spec.timeout is not None else self.timeout,
            two_phase=call.name in self.two_phase,
            recurs=call.commit_key in self._retracted or call.commit_key in plan.retracted,
        )
