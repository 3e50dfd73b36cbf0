"""BatchOrchestrator: many sequences, one crossing into the core per step, one pool,
global per-tool limits, one journal; each sequence reported exactly as a lone
Orchestrator with the same tokens would. And token trees through the orchestrators."""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import inert
from tools import block, peak_overlap

VOCAB = inert.Vocabulary([bytes([b]) for b in range(256)])  # byte-level: a token id is a byte
EFFECTS = {"lookup": inert.ToolSpec("read_only", reads="k"), "save": inert.ToolSpec("write", reads="k", writes="k")}


class Tools:
    """Tools that note every call per sequence, and check that a write runs only once
    its call is among the calls its sequence's verifier has accepted."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ran: list[tuple[str, str, Any]] = []
        self.accepting: dict[str, Counter[str]] = {}
        self.problems: list[str] = []

    def mapping(self) -> dict[str, Any]:
        def lookup(k: str, seq: str, i: int) -> str:
            with self.lock:
                self.ran.append((seq, "lookup", k))
            return f"{seq}:{k}"

        def save(k: str, seq: str, i: int) -> str:
            key = json.dumps({"i": i, "k": k, "seq": seq}, sort_keys=True)
            with self.lock:
                self.ran.append((seq, "save", f"{k}{i}"))
                done = sum(1 for s, n, kk in self.ran if (s, n, kk) == (seq, "save", f"{k}{i}"))
                if done > self.accepting.get(seq, Counter())[key]:
                    self.problems.append(f"{seq} saved {k} before its block was accepted")
            return "saved"

        return {"lookup": lookup, "save": save}

    def accept(self, seq: str, accepted: bytes) -> None:
        calls = [
            json.dumps(c.arguments, sort_keys=True)
            for c in inert.parse(accepted)
            if isinstance(c, inert.Call) and c.name == "save"
        ]
        with self.lock:
            self.accepting[seq] = Counter(calls)


@st.composite
def sequences(draw: Any) -> list[tuple[int, bytes]]:
    out = []
    for seq in draw(st.lists(st.integers(0, 40), min_size=1, max_size=5, unique=True)):
        calls = draw(
            st.lists(st.tuples(st.sampled_from(["lookup", "save"]), st.sampled_from(["a", "b", "c"])), max_size=3)
        )
        text = "".join(f"Step {i}. " + block(n, k=k, seq=str(seq), i=i) for i, (n, k) in enumerate(calls)) + " done"
        out.append((seq, text.encode()))
    return out


@settings(max_examples=min(settings().max_examples, 50))  # each example starts a pool of workers
@given(st.data())
def test_a_batch_reports_each_sequence_as_a_lone_orchestrator_would(data: st.DataObject) -> None:
    seqs = data.draw(sequences())
    tools = Tools()
    batch = inert.BatchOrchestrator(EFFECTS, tools.mapping(), vocab=VOCAB, max_workers=4)
    accepted: dict[int, bytes] = {}
    for seq, _ in seqs:
        batch.add(seq, f"turn-{seq}")
        accepted[seq] = b""
    live = dict(seqs)
    while any(len(accepted[s]) < len(live[s]) for s in live):
        active = [s for s in live if len(accepted[s]) < len(live[s])]
        k = data.draw(st.integers(1, 6))
        rows, lengths, n_acc, corrections = [], [], [], []
        for s in active:
            pos = len(accepted[s])
            window = list(live[s][pos : pos + k])
            if window and data.draw(st.integers(0, 4)) == 0:
                window[data.draw(st.integers(0, len(window) - 1))] = ord("}")  # a wrong draft token
            correct = 0
            while correct < len(window) and window[correct] == live[s][pos + correct]:
                correct += 1
            n = data.draw(st.integers(0, correct))
            nxt = pos + n
            corr = live[s][nxt] if nxt < len(live[s]) and (n == 0 or data.draw(st.booleans())) else -1
            rows.append(window + [-1] * (k - len(window)))
            lengths.append(len(window))
            n_acc.append(n)
            corrections.append(corr)
            accepted[s] += bytes(window[:n]) + (bytes([corr]) if corr >= 0 else b"")
        ids = np.asarray(active, dtype=np.int64)
        batch.draft(ids, np.asarray(rows, dtype=np.int32), np.asarray(lengths, dtype=np.int64))
        for s in active:
            tools.accept(str(s), accepted[s])
        batch.verify(ids, np.asarray(n_acc, dtype=np.int64), np.asarray(corrections, dtype=np.int64))
    reports = {s: batch.finish(s) for s, _ in seqs}
    batch.close()
    assert tools.problems == [], tools.problems
    for seq, text in seqs:
        assert accepted[seq] == text
        # What a lone stream with these tokens holds: the same calls, keyed by their own ids.
        got = [(r.name, r.arguments, r.commit_key, r.result) for r in reports[seq].results]
        expected_calls = [c for c in inert.parse(text) if isinstance(c, inert.Call)]
        assert [(n, a) for n, a, _, _ in got] == [(c.name, c.arguments) for c in expected_calls]
        for r in reports[seq].results:
            assert r.commit_key == inert.commit_key(f"turn-{seq}", list(text[: r.span[1]]))
        assert all(result == ("saved" if name == "save" else f"{seq}:{a['k']}") for name, a, _, result in got)
        assert reports[seq].violations == []
    saves = Counter((s, k) for s, n, k in tools.ran if n == "save")
    assert all(v == 1 for v in saves.values()), "every write ran once"


def test_limits_hold_across_the_sequences(release: threading.Event) -> None:
    """Three sequences' reads, each let go in the draft and held in its tool until the test
    lets go: a limit that held per sequence would record three starts before the first end
    (peak_overlap counts from the records, across the sequences: one clock, one lock)."""
    batch = inert.BatchOrchestrator(
        {"slow": inert.ToolSpec("read_only", reads="i")},
        {"slow": lambda i: release.wait(30)},
        vocab=VOCAB,
        limits={"slow": 1},
        max_workers=8,
    )
    for seq in (1, 2, 3):
        batch.add(seq, f"t{seq}")
    texts = [block("slow", i=seq).encode() for seq in (1, 2, 3)]
    width = max(map(len, texts))
    rows = np.full((3, width), -1, dtype=np.int32)
    for r, t in enumerate(texts):
        rows[r, : len(t)] = list(t)
    batch.draft([1, 2, 3], rows, [len(t) for t in texts])  # three reads, each may start at once but for the limit
    release.set()
    batch.verify([1, 2, 3], [len(t) for t in texts])
    reports = [batch.finish(s) for s in (1, 2, 3)]
    batch.close()
    assert all(len(r.results) == 1 for r in reports)
    assert peak_overlap(r for report in reports for r in report.dispatch_log) == 1


def test_the_same_tokens_in_two_conversations_are_two_calls(tmp_path: Any) -> None:
    """The turn key seeds the commit keys: two sequences that say the same thing under their
    own turn keys both write, with one durable journal; neither replays the other."""
    path = tmp_path / "j.sqlite"
    ran: list[int] = []

    def save(n: int) -> int:
        ran.append(n)
        return n

    with inert.BatchOrchestrator({"save": "write"}, {"save": save}, vocab=VOCAB, journal=path) as batch:
        for seq in (1, 2):
            batch.add(seq, f"conversation-{seq}")
        text = block("save", n=5).encode()
        batch.draft([1, 2], np.asarray([list(text)] * 2, dtype=np.int64))
        batch.verify([1, 2], [len(text)] * 2)
        reports = [batch.finish(seq) for seq in (1, 2)]
    assert ran == [5, 5], "the second conversation's write was skipped as a replay of the first's"
    keys = [r.results[0].commit_key for r in reports]
    assert keys == [inert.commit_key(f"conversation-{seq}", list(text)) for seq in (1, 2)]  # ids: keyed as ids
    assert not any(r.replayed for report in reports for r in report.dispatch_log)


def test_one_journal_for_every_sequence(tmp_path: Any) -> None:
    path = tmp_path / "j.sqlite"
    with inert.BatchOrchestrator({"save": "write"}, {"save": lambda n: n}, vocab=VOCAB, journal=path) as batch:
        for seq in (7, 8):
            batch.add(seq, f"req-{seq}")
        texts = [block("save", n=seq).encode() for seq in (7, 8)]
        rows = np.asarray([list(t) for t in texts], dtype=np.int64)
        batch.draft([7, 8], rows)
        batch.verify([7, 8], [len(t) for t in texts])
        assert [r.result for r in batch.finish(7).results] == [7]
        assert [r.result for r in batch.finish(8).results] == [8]
    assert sorted(e.turn_key for e in inert.recover(path).completed) == ["req-7", "req-8"]


def test_a_tree_through_the_orchestrator_runs_reads_on_branches_and_writes_only_on_the_path() -> None:
    ran: list[str] = []
    lock = threading.Lock()

    def note(name: str) -> Any:
        def tool(k: str) -> str:
            with lock:
                ran.append(f"{name} {k}")
            return k

        return tool

    effects = {"get": inert.ToolSpec("read_only", reads="k"), "put": inert.ToolSpec("write", reads="k", writes="k")}
    orch = inert.Orchestrator(effects, {"get": note("get"), "put": note("put")}, turn_key="tree")
    left = [block("get", k="L"), block("put", k="L")]
    right = [block("get", k="R"), block("put", k="R")]
    # Two branches from the last accepted token: nodes 0,1 (left) and 2,3 (right).
    step = orch.draft_tree(left + right, [-1, 0, -1, 2])
    assert sorted(d.name + " " + d.arguments["k"] for d in step.dispatched) == ["get L", "get R"]
    step = orch.verify_path([2, 3])
    assert [d.name for d in step.dispatched] == ["put"], "only the accepted branch's write is let go"
    report = orch.finish()
    assert [(r.name, r.arguments["k"]) for r in report.results] == [("get", "R"), ("put", "R")]
    assert "put L" not in ran, "a write on a rejected branch never runs"
    lone = inert.Orchestrator(effects, {"get": note("get"), "put": note("put")}, turn_key="tree")
    lone.draft(right)
    lone.verify(2)
    assert [r.commit_key for r in lone.finish().results] == [r.commit_key for r in report.results]


def test_a_sequences_violations_raise_at_its_finish_unless_not_strict() -> None:
    """A write run on tokens the verifier then rejected (only eager_unsafe does that) is an
    orphan: finish(seq) raises with the report, and strict=False returns it."""
    vocab = inert.Vocabulary([block("set", v=1), "."])
    ran: list[int] = []

    def set_value(v: int) -> int:
        ran.append(v)
        return v

    with pytest.warns(UserWarning, match="measure"):
        batch = inert.BatchOrchestrator({"set": "write"}, {"set": set_value}, vocab=vocab, policy="eager_unsafe")
    with batch:
        for seq in (0, 1):
            batch.add(seq, f"turn-{seq}")
        batch.draft([0, 1], [[0], [0]])
        batch.verify([0, 1], [0, 0], [1, 1])
        with pytest.raises(inert.SpeculativeEffectViolation) as info:
            batch.finish(0)
        assert [v.kind for v in info.value.violations] == ["orphan"]
        assert info.value.report.results == []
        report = batch.finish(1, strict=False)
        assert [v.kind for v in report.violations] == ["orphan"]
    assert ran == [1, 1]
