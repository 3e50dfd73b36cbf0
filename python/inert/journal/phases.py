"""The phases of a two-phase tool in the journal.

The commit key stays the key of the call's visible effect: its commit is
journaled under it, as any write is, so a replayed key returns the commit's
outcome and the tool never prepares again. Each prepare (and the abort that may
end it) is journaled under a key of its own, ``KEY/prepare/ATTEMPT`` and
``KEY/abort/ATTEMPT``, so that a call prepared, aborted and prepared again
(rejected tokens drafted again) keeps every attempt on record, and recovery can
list what was prepared and never committed or aborted.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ABORT", "COMMIT", "PREPARE", "PhaseKey", "phase_key", "split_phase"]

PREPARE, COMMIT, ABORT = "prepare", "commit", "abort"


@dataclass(frozen=True)
class PhaseKey:
    """A journal key read back: the call's commit key, its phase, and the prepare attempt."""

    commit_key: str
    phase: str
    attempt: str | None


def phase_key(commit_key: str, phase: str, attempt: str) -> str:
    """The journal key of one phase of one prepare attempt (a commit is journaled under the commit key)."""
    return commit_key if phase == COMMIT else f"{commit_key}/{phase}/{attempt}"


def split_phase(key: str) -> PhaseKey:
    """Which call, phase and attempt a journal key records."""
    parts = key.rsplit("/", 2)
    if len(parts) == 3 and parts[1] in (PREPARE, ABORT):
        return PhaseKey(parts[0], parts[1], parts[2])
    return PhaseKey(key, COMMIT, None)
