"""The scheduler against a brute-force oracle (invariant 4): whatever order calls
are added, permitted, cancelled, abandoned and finished in, a call starts only
when every earlier call that conflicts with it and may still touch the world has
finished, no call waits that nothing holds, and every call that may run eventually does. The oracle compares each
start with every earlier call (quadratic, obviously right); the scheduler does it
with per-key chains and barriers (linear)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from inert.effects import EffectClass, Footprint
from inert.gate import Dispatch
from inert.runtime.schedule import Node, Scheduler, Slots, State

KEYS = ["a", "b", "c"]
# Unknown footprints are rare, as in practice: they serialise everything, which hides chain bugs.
keys = st.integers(0, 5).flatmap(
    lambda roll: st.none() if roll == 0 else st.frozensets(st.sampled_from(KEYS), max_size=2)
)


def overlap(x: frozenset[str] | None, y: frozenset[str] | None) -> bool:
    """Unknown (None) overlaps any footprint part that touches something."""
    if x is None or y is None:
        return (x is None or bool(x)) and (y is None or bool(y))
    return bool(x & y)


def conflicts(earlier: Footprint, later: Footprint) -> bool:
    return (
        overlap(earlier.writes, later.reads)
        or overlap(earlier.writes, later.writes)
        or overlap(earlier.reads, later.writes)
    )


def share_key(earlier: Footprint, later: Footprint) -> bool:
    """A conflict on a named key (the per-key chains), not through an unknown footprint."""

    def named(x: frozenset[str] | None) -> frozenset[str]:
        return x or frozenset()

    return bool(
        named(earlier.writes) & (named(later.reads) | named(later.writes)) or named(earlier.reads) & named(later.writes)
    )


@st.composite
def calls(draw: st.DrawFn) -> list[tuple[Footprint, str, str]]:
    out = []
    for i in range(draw(st.integers(1, 12))):
        reads, writes = draw(keys), draw(keys)
        tool = draw(st.sampled_from(["t1", "t2"]))
        # Rejected tokens drafted again recur a commit key: sometimes reuse an earlier one.
        key = f"k{draw(st.integers(0, i)) if draw(st.integers(0, 3)) == 0 else i}"
        out.append((Footprint(reads, writes), tool, key))
    return out


def dispatch(i: int, fp: Footprint, tool: str, key: str) -> Dispatch:
    effect = EffectClass.READ_ONLY if fp.writes == frozenset() else EffectClass.WRITE
    return Dispatch(key, tool, {}, effect, fp, (i, i), None)


class Oracle:
    def __init__(self) -> None:
        self.nodes: list[Node[None]] = []
        self.gone: set[int] = set()  # cancelled (never runs) or abandoned (its result is discarded)

    def check_start(self, node: Node[None]) -> None:
        for earlier in self.nodes[: node.seq]:
            if earlier.dispatch.commit_key == node.dispatch.commit_key:
                assert earlier.state is not State.RUNNING, f"two runs of {node.dispatch.commit_key} overlap"
            if earlier.seq in self.gone or not conflicts(earlier.dispatch.footprint, node.dispatch.footprint):
                continue
            assert earlier.state is State.DONE, f"{node} started before the conflicting {earlier} finished"

    def check_waiting(self, running: list[Node[None]], limits: dict[str, int]) -> None:
        """Maximal concurrency: a waiting call is held by a full slot or by an earlier call
        that conflicts with it and may still touch the world. A rejected call keeps its
        place in the per-key chains until its own predecessors finish (so the calls behind
        it still wait for them), so it may hold the calls that share a named key with it."""
        for node in self.nodes:
            if node.state is not State.WAITING:
                continue
            tool = node.dispatch.name
            full = sum(r.dispatch.name == tool for r in running) >= limits.get(tool, len(self.nodes) + 1)
            assert self.held(node) or full, f"{node} waits though nothing holds it"

    def held(self, node: Node[None]) -> bool:
        for earlier in self.nodes[: node.seq]:
            if (
                earlier.dispatch.commit_key == node.dispatch.commit_key
                and earlier.state is not State.DONE
                and (earlier.state is not State.CANCELLED or self.held(earlier))
            ):
                return True  # runs of one key never overlap
            if earlier.state is State.DONE or not conflicts(earlier.dispatch.footprint, node.dispatch.footprint):
                continue
            if earlier.seq not in self.gone:
                return True
            if (
                earlier.state is State.CANCELLED
                and share_key(earlier.dispatch.footprint, node.dispatch.footprint)
                and self.held(earlier)
            ):
                return True
        return False


@settings(max_examples=max(300, settings().max_examples))  # cheap: a few ms an example
@given(calls(), st.data(), st.dictionaries(st.sampled_from(["t1", "t2"]), st.integers(1, 2)))
def test_a_call_starts_only_after_every_earlier_conflicting_call(
    plan: list[tuple[Footprint, str, str]], data: st.DataObject, limits: dict[str, int]
) -> None:
    sched: Scheduler[None] = Scheduler(slots=Slots(limits))
    oracle = Oracle()
    running: list[Node[None]] = []

    def started(nodes: list[Node[None]]) -> None:
        for n in nodes:
            assert n.state is State.RUNNING
            oracle.check_start(n)
            running.append(n)
            tool = n.dispatch.name
            over = sum(r.dispatch.name == tool for r in running) > limits.get(tool, len(plan))
            assert not over, f"{tool} runs over its limit"

    pending = list(enumerate(plan))
    while pending or any(n.state in (State.GATED, State.WAITING) for n in oracle.nodes) or running:
        waiting = [n for n in oracle.nodes if n.state is State.WAITING]
        if not (pending or running or any(n.state is State.GATED for n in oracle.nodes)):
            assert not waiting, f"calls never start though nothing runs: {waiting}"
        actions: list[tuple[str, Any]] = []
        if pending:
            actions.append(("add", None))
        actions += [("permit", n) for n in oracle.nodes if n.state is State.GATED]
        actions += [("cancel", n) for n in oracle.nodes if n.state in (State.GATED, State.WAITING)]
        actions += [("finish", n) for n in running]
        actions += [
            ("abandon", n) for n in running if n.dispatch.effect is EffectClass.READ_ONLY and n.seq not in oracle.gone
        ]
        if not actions:
            break
        action, node = data.draw(st.sampled_from(actions))
        if action == "add":
            i, (fp, tool, key) = pending.pop(0)
            oracle.nodes.append(sched.add(dispatch(i, fp, tool, key), None))
        elif action == "permit":
            started(sched.permit(node, early=False))
        elif action == "cancel":
            oracle.gone.add(node.seq)
            started(sched.cancel(node))
        elif action == "abandon":
            oracle.gone.add(node.seq)
            started(sched.abandon(node))
        else:
            running.remove(node)
            started(sched.finish(node))
        oracle.check_waiting(running, limits)
    assert all(n.state in (State.DONE, State.CANCELLED) for n in oracle.nodes)
    assert sched.in_flight == 0
