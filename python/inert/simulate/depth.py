"""`inert simulate --depths`: what starting reads and two-phase prepares on the
draft (``read_eager``) saves against starting them on acceptance (``defer``), as
drafts get deeper, on the same seeds.

Where the saving comes from: a call starts early only from the draft in which its
block closes, and that draft is verified in the next step; so a call's lead over
acceptance is one verify step at most, and a call whose last token is the
target's own (a correction or the bonus token) has none. Each point therefore
also reports the mean verify step (the bound per call) and how many calls per
turn started on the draft; see ``workloads.py`` for each drafter's assumptions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from .sweep import Progress, TurnOutcome, median, run_turn
from .workloads import Workload

__all__ = ["DEPTH_POLICIES", "DepthPoint", "depth_lines", "depth_sweep"]

DEPTH_POLICIES = ("defer", "read_eager")
"""The policies the depth sweep compares: waiting for acceptance, and starting reads and prepares on the draft."""


@dataclass(frozen=True)
class DepthPoint:
    """One workload at one draft depth, both policies on the same seeds. Times in seconds."""

    workload: str
    drafter: str
    agent: str
    depth: int
    turns: int
    defer_p50: float
    read_eager_p50: float
    saved_p50: float
    """Median over the seeds of defer's latency less read_eager's (the same turn, the same slips)."""
    saved_mean: float
    slower: int
    """Seeds on which read_eager finished later than defer: a call rejected while it still ran (a
    prepare, a read) holds the later call that conflicts with it until it returns (README, "Simulation")."""
    verify_step: float
    """Mean verify step: how far an early start can lead acceptance (a full window's step is longer)."""
    ahead_per_turn: float
    """Accepted calls per turn that started before their acceptance under read_eager (on the draft)."""
    lead_per_call: float
    """Mean time those calls started ahead of their acceptance: at most one verify step each."""
    tokens_per_step: float
    corruptions: int
    """Orphans, stale reads and diverged worlds under either policy, over every seed: 0, or a bug."""

    def as_json(self) -> dict[str, Any]:
        """Its fields as a dict, for ``--json`` output."""
        return asdict(self)


def _corruptions(turns: list[TurnOutcome]) -> int:
    return sum(t.orphans + t.stale_reads + t.diverged for t in turns)


def depth_sweep(workloads: list[Workload], depths: list[int], seeds: int = 100) -> list[DepthPoint]:
    """Each workload at each draft depth (its model's ``k`` replaced), under ``defer`` and
    ``read_eager`` on the same ``seeds`` seeds; points in workload order, then depth order."""
    progress = Progress(len(workloads) * len(depths) * len(DEPTH_POLICIES) * seeds)
    out = []
    for w in workloads:
        for depth in depths:
            deep = replace(w, model=replace(w.model, k=depth))
            runs: dict[str, list[TurnOutcome]] = {}
            for policy in DEPTH_POLICIES:
                runs[policy] = []
                for seed in range(seeds):
                    runs[policy].append(run_turn(deep, policy, seed))
                    progress.step()
            defer, eager = runs["defer"], runs["read_eager"]
            saved = [d.latency - e.latency for d, e in zip(defer, eager, strict=True)]
            steps = sum(t.decode.steps for t in eager) or 1
            drafted = sum(t.decode.drafted for t in eager) / steps
            out.append(
                DepthPoint(
                    workload=w.name,
                    drafter=w.model.name,
                    agent=w.agent.name,
                    depth=depth,
                    turns=seeds,
                    defer_p50=median([t.latency for t in defer]),
                    read_eager_p50=median([t.latency for t in eager]),
                    saved_p50=median(saved),
                    saved_mean=sum(saved) / seeds,
                    slower=sum(e.latency > d.latency + 1e-9 for d, e in zip(defer, eager, strict=True)),
                    verify_step=w.model.verify_s + w.model.verify_per_token_s * drafted,
                    ahead_per_turn=sum(t.ahead for t in eager) / seeds,
                    lead_per_call=sum(t.lead for t in eager) / (sum(t.ahead for t in eager) or 1),
                    tokens_per_step=sum(t.decode.tokens for t in eager) / steps,
                    corruptions=_corruptions(defer) + _corruptions(eager),
                )
            )
    return out


def _table(points: list[DepthPoint], title: str, cell: Callable[[DepthPoint], str]) -> list[str]:
    depths = sorted({p.depth for p in points})
    names = list(dict.fromkeys(p.workload for p in points))
    width = max(len(n) for n in names) + 2
    by = {(p.workload, p.depth): p for p in points}
    head = f"{'workload':<{width}}" + "".join(f"{f'k={d}':>8}" for d in depths)
    out = ["", title, head, "-" * len(head)]
    for name in names:
        out.append(f"{name:<{width}}" + "".join(f"{cell(by[name, d]):>8}" for d in depths))
    return out


def depth_lines(points: list[DepthPoint]) -> list[str]:
    """The depth sweep as text: what read_eager saves against defer at each depth, what it
    can save at most (one verify step), how often it lost, and how many calls started ahead, by how much."""
    seeds = points[0].turns if points else 0
    safe = not any(p.corruptions for p in points)
    out = [
        f"inert simulate --depths: {len(dict.fromkeys(p.workload for p in points))} workloads x "
        f"{len({p.depth for p in points})} draft depths x defer/read_eager x {seeds} seeds (virtual time)",
        "read_eager starts reads and two-phase prepares when a call closes in the draft; defer, once it is accepted",
        *_table(
            points,
            "median ms read_eager saves against defer (per turn, the same seeds)",
            lambda p: f"{p.saved_p50 * 1e3:.1f}",
        ),
        *_table(points, "mean ms saved (turns read_eager lost pull it down)", lambda p: f"{p.saved_mean * 1e3:.1f}"),
        *_table(points, f"turns of {seeds} in which read_eager finished after defer", lambda p: f"{p.slower}"),
        *_table(
            points,
            "one verify step, mean ms: how far ahead of its acceptance a call can start",
            lambda p: f"{p.verify_step * 1e3:.1f}",
        ),
        *_table(
            points,
            "calls per turn that started ahead of their acceptance under read_eager",
            lambda p: f"{p.ahead_per_turn:.2f}",
        ),
        *_table(points, "mean ms those calls started ahead", lambda p: f"{p.lead_per_call * 1e3:.1f}"),
        "",
        "read_eager loses a turn when a call rejected while it ran holds a later one: a prepare (or read) of a draft",
        "whose slip left the footprint as it was (a wrong amount, a wrong line of content) holds the corrected call",
        "until it returns, which then prepares anew; under defer the rejected call never ran. (A rejected call to a",
        "misspelled, hence unknown, tool holds every later call until the calls before it finish, under both.)",
        "defer and read_eager: no orphans, no stale reads, no diverged world"
        if safe
        else f"VIOLATION: {sum(1 for p in points if p.corruptions)} points corrupted the world",
    ]
    return out
