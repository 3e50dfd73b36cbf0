"""Simulated speculative decoding: a draft window per step, per-token
acceptance, a verify step, and the target's own token as bonus or correction."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
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


@dataclass
class Decoded:
    steps: int = 0
    tokens: int = 0
    end: float = 0.0


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


def decode(tokens: list[str], profile: ModelProfile, rng: random.Random,
           draft: Callable[[list[str]], None], verify: Callable[[int, str | None], None],
           advance: Callable[[float], None]) -> Decoded:
    """Decodes ``tokens`` speculatively, calling ``draft`` and ``verify`` the way an
    engine does and ``advance(t)`` to move virtual time to ``t`` before each."""
    out = Decoded()
    pos, t, k = 0, 0.0, profile.k
    while pos < len(tokens):
        window = tokens[pos:pos + k]
        rejected = len(window)
        for i in range(len(window)):
            if rng.random() >= profile.alpha * profile.alpha_decay ** i:
                rejected = i
                break
        drafted = list(window)
        if rejected < len(window):
            drafted[rejected] = corrupt(window[rejected], rng)
        t += len(window) * profile.draft_s
        advance(t)
        draft(drafted)
        t += profile.verify_s
        advance(t)
        after = pos + rejected
        correction = tokens[after] if after < len(tokens) else None
        verify(rejected, correction)
        pos = after + (correction is not None)
        out.steps += 1
        out.tokens += rejected + (correction is not None)
        if profile.adaptive:
            k = min(k + 1, 2 * profile.k) if rejected == len(window) else max(1, k - 1)
    out.end = t
    return out
