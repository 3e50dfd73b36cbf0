"""Simulated speculative decoding: a draft window per step, per-token
acceptance, a verify step, and the target's own token as bonus or correction.

A draft is handed to inert whole, the way engines propose a window and then
verify it; the verify step resolves all of it. So a call can start early (a
read, or a two-phase tool's prepare) only from the moment its block closes in
a draft, and that draft is verified one step later: the lead an early start
has over acceptance is at most one verify step, whatever the depth. What depth
changes is how often a call's last token is drafted at all (rather than being
the target's own correction or bonus token, which closes the call on
acceptance) and how long a verify step takes (longer windows cost more under
batch load). ``ModelProfile`` states each knob; ``workloads.py`` the values."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["Decoded", "ModelProfile", "corrupt", "decode", "tokenize"]


@dataclass(frozen=True)
class ModelProfile:
    """How a target/draft pair decodes. Times in seconds."""

    name: str
    alpha: float
    """Probability that the verifier accepts a draft token (the first of a window)."""
    k: int = 5
    """Draft window size (the start size when ``adaptive``)."""
    verify_s: float = 0.005
    draft_s: float = 0.0005
    """Draft latency per token."""
    alpha_decay: float = 1.0
    """Acceptance of the i-th token of a window is ``alpha * alpha_decay**i``."""
    adaptive: bool = False
    """Grow the window after a fully accepted one, shrink it after a rejection (between 1 and 2k)."""
    verify_per_token_s: float = 0.0
    """Verify cost per drafted token, on top of ``verify_s``. Near 0 when verification is
    memory-bound (a small batch); under batch load a step verifies batch x window tokens
    and is compute-bound, so a deeper window makes every step longer."""
    call_accuracy: float | None = None
    """The drafter predicts tool-call blocks as a whole (suffix decoding over repeated agent
    output, a small model trained on the agent's calls): a block of L tokens drafted in one
    window is right whole with this probability (each of its tokens with
    ``call_accuracy ** (1 / L)``); ``None``: its tokens are drafted like prose (``alpha``)."""
    whole_calls: bool = False
    """A window that reaches a tool-call block ends at the block's last token, however deep
    (``k`` bounds the prose between calls): a model that predicts one whole call at a time."""


@dataclass
class Decoded:
    steps: int = 0
    tokens: int = 0
    """Tokens accepted, the target's own included."""
    end: float = 0.0
    drafted: int = 0
    """Tokens drafted, rejected ones included."""


def tokenize(text: str) -> list[str]:
    """Close enough to BPE for timing: tool-call tags as one token each (special
    tokens in the Qwen and Hermes vocabularies), words, runs of spaces, runs of marks."""
    return re.findall(r"</?tool_call>|\w+|\s+|[^\w\s]+", text)


_PUNCT = '{}[]":,'


def corrupt(token: str, rng: random.Random) -> str:
    """A plausible wrong draft token: a changed letter or digit (a wrong value or tool
    name), or other punctuation (broken JSON). Never the token itself."""
    chars = list(token)
    letters = [i for i, c in enumerate(chars) if c.isalnum()]
    if letters:
        i = rng.choice(letters)
        pool = "0123456789" if chars[i].isdigit() else "abcdefghijklmnopqrstuvwxyz"
        chars[i] = rng.choice([c for c in pool if c != chars[i].lower()])
        return "".join(chars)
    return rng.choice([p for p in _PUNCT if p != token] or ["x"])


class _Blocks:
    """Where the tool-call blocks of a turn lie, for drafters that treat them apart."""

    def __init__(self, n: int, spans: Sequence[tuple[int, int]], accuracy: float | None) -> None:
        self.spans = sorted(spans)
        self.rate: list[float | None] = [None] * n  # a block token's acceptance; None for prose
        for start, end in self.spans:
            for i in range(start, min(end, n)):
                self.rate[i] = None if accuracy is None else accuracy ** (1 / (end - start))

    def window_end(self, pos: int, k: int) -> int:
        """Where a whole-call window from ``pos`` ends: at the end of the first block it reaches."""
        for start, end in self.spans:
            if end > pos and start < pos + k:
                return end
        return pos + k


def decode(  # noqa: PLR0917 - the engine loop's parts
    tokens: list[str],
    profile: ModelProfile,
    rng: random.Random,
    draft: Callable[[list[str]], None],
    verify: Callable[[int, str | None], None],
    advance: Callable[[float], None],
    *,
    calls: Sequence[tuple[int, int]] = (),
) -> Decoded:
    """Decodes ``tokens`` speculatively, calling ``draft`` and ``verify`` the way an
    engine does and ``advance(t)`` to move virtual time to ``t`` before each. ``calls``:
    the token spans of the turn's tool-call blocks (``[start, end)``), which
    ``profile.call_accuracy`` and ``profile.whole_calls`` need."""
    out = Decoded()
    pos, t, k = 0, 0.0, profile.k
    blocks = _Blocks(len(tokens), calls, profile.call_accuracy)
    while pos < len(tokens):
        window = tokens[pos : blocks.window_end(pos, k) if profile.whole_calls else pos + k]
        rejected = len(window)
        for i in range(len(window)):
            rate = blocks.rate[pos + i]
            if rng.random() >= (profile.alpha * profile.alpha_decay**i if rate is None else rate):
                rejected = i
                break
        drafted = list(window)
        if rejected < len(window):
            drafted[rejected] = corrupt(window[rejected], rng)
        t += len(window) * profile.draft_s
        advance(t)
        draft(drafted)
        t += profile.verify_s + profile.verify_per_token_s * len(window)
        advance(t)
        after = pos + rejected
        correction = tokens[after] if after < len(tokens) else None
        verify(rejected, correction)
        pos = after + (correction is not None)
        out.steps += 1
        out.drafted += len(window)
        out.tokens += rejected + (correction is not None)
        if profile.adaptive:
            k = min(k + 1, 2 * profile.k) if rejected == len(window) else max(1, k - 1)
    out.end = t
    return out
