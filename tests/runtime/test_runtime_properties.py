"""Random schedules through both runtimes, with tools that misbehave in every way
a tool can: raise, raise BaseException, hang past their deadline, return what the
journal cannot store, get cancelled mid-flight. Whatever happens, ``finish()``
returns, every dispatched call settles exactly once, no write runs before its
block is accepted or twice, and the journal agrees with the report.

That no effect goes before its block is accepted is also checked from records, not
from a tool that happens to run at the wrong moment: each step's ``dispatched``
against the tokens the test knows are accepted, and each effect's recorded start
against the step that let it go."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import inert
from speculation import AcceptanceWatch, Decoder, tokenizations, transcripts

BEHAVIOURS = ["ok", "raise", "base", "hang", "unstorable", "own_timeout"]
EFFECTS = ["read_only", "write", "idempotent"]
DEADLINE = 0.05  # seconds: inert's per-call timeout for the tools that hang, which outlive it
PATIENCE = 60.0  # seconds: the others' timeout, which a loaded machine never reaches


def tool_name(effect: str, behaviour: str) -> str:
    return f"{effect}_{behaviour}"


TABLE = inert.EffectTable(
    {
        tool_name(e, b): inert.ToolSpec(
            e, reads="k", writes="k" if e != "read_only" else None, timeout=DEADLINE if b == "hang" else PATIENCE
        )
        for e in EFFECTS
        for b in BEHAVIOURS
    }
)


def _cycle() -> list[Any]:
    c: list[Any] = []
    c.append(c)
    return c


def misbehave(behaviour: str, release: threading.Event) -> Any:
    if behaviour == "raise":
        raise ValueError("the tool failed")
    if behaviour == "base":
        raise KeyboardInterrupt("the tool interrupted itself")
    if behaviour == "hang":
        release.wait()  # until the test ends: inert's deadline must not wait for it
        return "late"
    if behaviour == "unstorable":
        return _cycle()
    if behaviour == "own_timeout":
        raise TimeoutError("the tool's own backend timed out")
    return "ok"


@st.composite
def turns(draw: Any) -> tuple[str, list[tuple[str, int]]]:
    calls = draw(st.lists(st.tuples(st.sampled_from(EFFECTS), st.sampled_from(BEHAVIOURS)), min_size=1, max_size=5))
    named = [(tool_name(e, b), i) for i, (e, b) in enumerate(calls)]
    text = "".join(f"<tool_call>{json.dumps({'name': n, 'arguments': {'k': i}})}</tool_call> " for n, i in named)
    return text, named


def check(report: inert.Report, journal: inert.MemoryJournal, watch: AcceptanceWatch) -> None:
    assert watch.problems == [], watch.problems
    effects = [watch.key(r.name, r.arguments) for r in report.results if r.effect is not inert.EffectClass.READ_ONLY]
    ran = Counter(k for k in watch.ran if k in set(effects))
    assert all(n <= 1 for n in ran.values()), f"an effect ran twice: {ran}"
    assert all(r.finished is not None for r in report.dispatch_log), "every dispatched call settled"
    assert report.violations == [], "stream order held, no orphan, no duplicate"
    entries = {e.commit_key: e for e in journal.entries()}
    for r in report.dispatch_log:
        if r.replayed or r.discarded:
            continue  # its outcome is an earlier run's, or never counts (a recurring key has several records)
        entry = entries.get(r.commit_key)
        if entry is None:
            continue  # its intent never reached the journal (not the case with a memory journal)
        if r.timed_out:
            assert entry.status in ("timeout", "error"), entry
        elif r.error is None:
            assert entry.status == "ok", (r, entry)
        else:
            assert entry.status == "error", (r, entry)
    for result in report.results:
        name = result.name.split("_", 1)[1]
        if name == "ok":
            assert result.error is None
        elif name == "hang":
            assert isinstance(result.error, inert.ToolTimeoutError)
        elif name == "unstorable":
            assert isinstance(result.error, inert.UnstorableResultError)
        elif name == "own_timeout":
            assert type(result.error) is TimeoutError


@given(st.data())
def test_threads_settle_every_call_whatever_the_tools_do(data: st.DataObject) -> None:
    text, named = data.draw(turns())
    policy = data.draw(st.sampled_from(["read_eager", "defer"]))
    release = threading.Event()
    watch = AcceptanceWatch("hermes")

    def tool(name: str) -> Any:
        record = watch.tool(name) if not name.startswith("read_only") else lambda **_: None  # reads may run early
        behaviour = name.split("_", 1)[1]

        def run(k: int) -> Any:
            record(k=k)
            return misbehave(behaviour, release)

        return run

    journal = inert.MemoryJournal()
    orch = inert.Orchestrator(TABLE, {n: tool(n) for n, _ in named}, turn_key="p", policy=policy, journal=journal)
    try:
        Decoder(data.draw(tokenizations(text)), data.draw).run(orch.draft, orch.verify, watch.accepting)
        report = orch.finish(strict=False)
    finally:
        release.set()
    check(report, journal, watch)


@given(st.data())
def test_asyncio_settles_every_call_whatever_the_tools_do(data: st.DataObject) -> None:
    text, named = data.draw(turns())
    policy = data.draw(st.sampled_from(["read_eager", "defer"]))
    pieces = data.draw(tokenizations(text))
    watch = AcceptanceWatch("hermes")
    journal = inert.MemoryJournal()

    async def main() -> inert.Report:
        release = asyncio.Event()  # never set: an async "hang" is cut by inert's deadline

        def tool(name: str) -> Any:
            record = watch.tool(name) if not name.startswith("read_only") else lambda **_: None  # reads run early
            behaviour = name.split("_", 1)[1]

            async def run(k: int) -> Any:
                record(k=k)
                if behaviour == "hang":
                    await release.wait()
                await asyncio.sleep(0)  # a turn of the loop: a rejected read may be cancelled here
                return misbehave(behaviour if behaviour != "hang" else "ok", threading.Event())

            return run

        orch = inert.AsyncOrchestrator(
            TABLE, {n: tool(n) for n, _ in named}, turn_key="p", policy=policy, journal=journal
        )
        steps: list[Any] = []
        Decoder(pieces, data.draw).run(
            lambda w: steps.append(("d", w)),
            lambda n, c: steps.append(("v", n, c)),
            lambda accepted: steps.append(("a", list(accepted))),
        )
        for step in steps:  # the decoder's schedule, replayed on the loop (drafts and verifies awaited in order)
            if step[0] == "d":
                await orch.draft(step[1])
            elif step[0] == "v":
                await orch.verify(step[1], step[2])
            else:
                watch.accepting(step[1])
        return await asyncio.wait_for(orch.finish(strict=False), 30)

    check(asyncio.run(main()), journal, watch)


TURN = "turn-p"
GATED = inert.EffectTable(
    {
        "lookup": inert.ToolSpec("read_only", reads="k"),
        "save": inert.ToolSpec("write", reads="k", writes="k"),
        "put": "idempotent",
    }
)
"""The transcripts' tools; ``nope`` is not in the table, so it is a write."""


class Ledger:
    """What the test knows without asking the gate: the tokens accepted so far (drafts
    and verifies as the decoder made them) and, for each effect the gate let go, when
    the step that let it go began. ``problems`` collects every effect let go early."""

    def __init__(self) -> None:
        self.pending: list[bytes] = []
        self.accepted: list[bytes] = []
        self.let_go: dict[str, float] = {}
        self.problems: list[str] = []

    def drafting(self, window: list[bytes]) -> float:
        self.pending.extend(window)
        return time.perf_counter()

    def verifying(self, n: int, correction: bytes | None) -> float:
        self.accepted += self.pending[:n] + ([correction] if correction is not None else [])
        self.pending = []
        return time.perf_counter()

    def stepped(self, step: inert.Step, began: float) -> None:
        for d in step.dispatched:
            if d.effect is inert.EffectClass.READ_ONLY:
                continue
            end = d.span[1]
            if end > len(self.accepted):
                self.problems.append(f"{d.name} let go with token {end - 1} of its block not accepted")
            elif d.commit_key not in {inert.commit_key(TURN, self.accepted[:end], i) for i in range(4)}:
                self.problems.append(f"{d.name} let go under a key that is not its accepted tokens' key")
            self.let_go.setdefault(d.commit_key, began)

    def check(self, report: inert.Report) -> None:
        """Every effect that ran was let go by a step after its block was accepted, and its
        start (recorded by the runtime when it let the call go) is not before that step."""
        assert self.problems == [], self.problems
        for r in report.dispatch_log:
            if not r.executed_effect:
                continue
            assert not r.early, f"{r.name} ran early"
            assert r.commit_key in self.let_go, f"{r.name} ran, but no step let it go"
            assert r.started is not None and r.started >= self.let_go[r.commit_key], (
                f"{r.name} started before the step that let it go"
            )


@given(st.data())
def test_effects_go_only_from_a_step_that_accepted_their_whole_block(data: st.DataObject) -> None:
    pieces = data.draw(tokenizations(data.draw(transcripts())))
    policy = data.draw(st.sampled_from(["read_eager", "defer"]))
    ledger = Ledger()
    orch = inert.Orchestrator(GATED, lambda name, arguments: name, turn_key=TURN, policy=policy)

    def draft(window: list[bytes]) -> None:
        began = ledger.drafting(window)
        ledger.stepped(orch.draft(window), began)

    def verify(n: int, correction: bytes | None) -> None:
        began = ledger.verifying(n, correction)
        ledger.stepped(orch.verify(n, correction), began)

    Decoder(pieces, data.draw).run(draft, verify)
    ledger.check(orch.finish(strict=False))


@given(st.data())
def test_effects_go_only_from_a_step_that_accepted_their_whole_block_under_asyncio(data: st.DataObject) -> None:
    pieces = data.draw(tokenizations(data.draw(transcripts())))
    policy = data.draw(st.sampled_from(["read_eager", "defer"]))
    schedule: list[tuple[Any, ...]] = []
    Decoder(pieces, data.draw).run(lambda w: schedule.append(("d", w)), lambda n, c: schedule.append(("v", n, c)))
    ledger = Ledger()

    async def tool(name: str, arguments: dict[str, Any]) -> str:
        await asyncio.sleep(0)  # a turn of the loop: a rejected read may be cancelled here
        return name

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator(GATED, tool, turn_key=TURN, policy=policy)
        for op in schedule:  # the decoder's schedule, replayed on the loop
            if op[0] == "d":
                began = ledger.drafting(op[1])
                ledger.stepped(await orch.draft(op[1]), began)
            else:
                began = ledger.verifying(op[1], op[2])
                ledger.stepped(await orch.verify(op[1], op[2]), began)
        return await asyncio.wait_for(orch.finish(strict=False), 30)

    ledger.check(asyncio.run(main()))
