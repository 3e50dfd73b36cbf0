"""Fuzz target for the serving surface: a StreamBatch of a few sequences, stepped by
linear drafts (ragged lengths) and by token trees, against lone TokenStreams given the
same calls, and against streams that drafted only what was accepted.

Checks, on every input: nothing raises (the steps are valid, so model output is data);
each sequence of the batch gets exactly the outcomes of its lone stream, step by step;
and each stream's accepted text and committed calls (names, arguments, commit keys,
spans) and malformed blocks equal those of a stream that drafted only the accepted
tokens, as one linear draft per step: rollback and the walk of a tree leave no trace.

    bash tests/fuzz/build_native.sh .venv-fuzz    # coverage of the Rust core: see fuzz_scanner.py
    .venv-fuzz/bin/python tests/fuzz/fuzz_serving.py -max_total_time=60
"""

from __future__ import annotations

import sys
from typing import Any

# atheris ships no types (and the test extra does not install it): it reads as Any
import atheris  # type: ignore[import-untyped, import-not-found, unused-ignore]
import native_coverage  # noqa: F401  # before inert: see its docstring

with atheris.instrument_imports():
    import inert

# Every byte, so any text can be drafted, and the pieces of the formats' delimiters and
# bodies, so that blocks open and close within a few ids (a piece spelling a delimiter
# is its special token).
FRAGMENTS = [
    "<tool_call>",
    "</tool_call>",
    '{"name": ',
    '"get"',
    '"put"',
    ', "arguments": ',
    '{"k": 1}',
    '{"k": [1, {"a": "x"}]}',
    "}",
    "\n",
    "<think>",
    "</think>",
    "<function=get>",
    "</function>",
    "<parameter=k>",
    "</parameter>",
    "[TOOL_CALLS]",
    '[{"name": "get", "arguments": {}}]',
]
PIECES = [bytes([b]) for b in range(256)] + [f.encode() for f in FRAGMENTS]
VOCAB = inert.Vocabulary(PIECES)
N = len(PIECES)
FORMATS = ["hermes", "qwen3_coder", "mistral"]
MAX_ROWS, MAX_K, MAX_STEPS = 4, 8, 48


def view(outcomes: list[Any]) -> list[tuple[Any, ...]]:
    """What a caller observes of outcomes, by value."""
    out: list[tuple[Any, ...]] = []
    for o in outcomes:
        if isinstance(o, inert.BlockMalformed):
            m = o.malformed
            out.append((o.kind, m.kind, m.offset, m.span, m.commit_key))
        else:
            c = o.call
            out.append((o.kind, c.name, c.arguments, c.commit_key, c.span))
    return out


def kept(outcomes: list[Any]) -> list[tuple[Any, ...]]:
    """What the accepted stream holds: committed calls and malformed blocks."""
    return view([o for o in outcomes if isinstance(o, (inert.CallCommitted, inert.BlockMalformed))])


class Twins:
    """One sequence's lone stream (the batch's twin) and the stream of its accepted tokens."""

    def __init__(self, fmt: str, key: str) -> None:
        self.lone = inert.TokenStream(fmt, key, vocab=VOCAB)
        self.line = inert.TokenStream(fmt, key, vocab=VOCAB)
        self.lone_kept: list[tuple[Any, ...]] = []
        self.line_kept: list[tuple[Any, ...]] = []

    def accept(self, tokens: list[int], correction: int) -> None:
        c = None if correction < 0 else correction
        self.line_kept += kept(self.line.draft(tokens) + self.line.verify(len(tokens), c))


def tree_of(fdp: Any, n: int) -> tuple[list[int], list[int]]:
    """``n`` nodes: each one's parent an earlier node or -1, no two siblings the same token."""
    parents = [fdp.ConsumeIntInRange(-1, i - 1) for i in range(n)]
    seen: set[tuple[int, int]] = set()
    tokens = []
    for parent in parents:
        token = fdp.ConsumeIntInRange(0, N - 1)
        while (parent, token) in seen:
            token = (token + 1) % N
        seen.add((parent, token))
        tokens.append(token)
    return tokens, parents


def path_to(node: int, parents: list[int]) -> list[int]:
    path = []
    while node >= 0:
        path.append(node)
        node = parents[node]
    return path[::-1]


def same(seq: int, batch_out: dict[int, list[Any]], lone_out: list[Any], seqs: list[Twins]) -> None:
    got, want = view(batch_out.get(seq, [])), view(lone_out)
    if got != want:
        raise AssertionError(f"sequence {seq}: the batch gave {got}, its lone stream {want}")
    seqs[seq].lone_kept += kept(lone_out)


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    fmt = FORMATS[fdp.ConsumeIntInRange(0, len(FORMATS) - 1)]
    rows = fdp.ConsumeIntInRange(1, MAX_ROWS)
    batch = inert.StreamBatch(fmt, VOCAB)
    seqs = [Twins(fmt, f"turn-{s}") for s in range(rows)]
    ids = list(range(rows))
    for s in ids:
        batch.add(s, f"turn-{s}")
    for _ in range(MAX_STEPS):
        if fdp.remaining_bytes() == 0:
            break
        k = fdp.ConsumeIntInRange(1, MAX_K)
        corrections = [fdp.ConsumeIntInRange(-1, N - 1) for _ in ids]
        if fdp.ConsumeBool():  # a linear draft, ragged
            tokens = [[fdp.ConsumeIntInRange(0, N - 1) for _ in range(k)] for _ in ids]
            lengths = [fdp.ConsumeIntInRange(0, k) for _ in ids]
            accepted = [fdp.ConsumeIntInRange(0, n) for n in lengths]
            drafted = batch.draft(ids, tokens, lengths)
            for s in ids:
                same(s, drafted, seqs[s].lone.draft(tokens[s][: lengths[s]]), seqs)
            verified = batch.verify(ids, accepted, corrections)
            for s in ids:
                c = None if corrections[s] < 0 else corrections[s]
                same(s, verified, seqs[s].lone.verify(accepted[s], c), seqs)
                seqs[s].accept(tokens[s][: accepted[s]], corrections[s])
        else:  # a token tree per sequence, one path of it accepted
            trees = [tree_of(fdp, k) for _ in ids]
            tips = [fdp.ConsumeIntInRange(-1, k - 1) for _ in ids]
            paths = [path_to(tip, parents) for tip, (_, parents) in zip(tips, trees, strict=True)]
            drafted = batch.draft_trees(ids, [t for t, _ in trees], [p for _, p in trees])
            for s in ids:
                same(s, drafted, seqs[s].lone.draft_tree(*trees[s]), seqs)
            padded = [p + [-1] * (k - len(p)) for p in paths]
            verified = batch.verify_paths(ids, padded, corrections)
            for s in ids:
                c = None if corrections[s] < 0 else corrections[s]
                same(s, verified, seqs[s].lone.verify_path(paths[s], c), seqs)
                seqs[s].accept([trees[s][0][i] for i in paths[s]], corrections[s])
    for s in ids:
        same(s, {s: batch.finish(s)}, seqs[s].lone.finish(), seqs)
        seqs[s].line_kept += kept(seqs[s].line.finish())
        one = seqs[s]
        text, line_text = one.lone.accepted_text(), one.line.accepted_text()
        if text != line_text:
            raise AssertionError(f"{fmt} sequence {s}: accepted {text!r} != accepted-only {line_text!r}")
        if one.lone_kept != one.line_kept:
            raise AssertionError(f"{fmt} sequence {s}: kept {one.lone_kept} != accepted-only {one.line_kept}")


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input, internal_libfuzzer=True)
    atheris.Fuzz()
