"""Runs workloads under each policy on the same seeds and summarises what
waiting costs and what eager dispatch risks."""

from __future__ import annotations

import random
import sys
import warnings
from dataclasses import asdict, dataclass, replace
from typing import Any

from .clock import VirtualLoop
from .decoding import Decoded, decode, tokenize
from .runner import SimOrchestrator
from .workloads import Workload
from .world import World

__all__ = ["POLICIES", "Summary", "TurnOutcome", "alpha_sweep", "run_turn", "simulate"]

POLICIES = ("end_of_turn", "defer", "read_eager", "eager_unsafe")
"""``end_of_turn``: every call after the whole turn is verified (most agent frameworks);
the other three are inert's policies."""


@dataclass(frozen=True)
class TurnOutcome:
    latency: float
    """Virtual seconds from the turn's start to its last tool result (or its end, with no calls)."""
    decode: Decoded
    wasted_reads: int
    orphans: int
    stale_reads: int
    diverged: bool
    """The world's final rows differ from the accepted calls applied in stream order."""


def run_turn(workload: Workload, policy: str, seed: int) -> TurnOutcome:
    """One turn of ``workload`` under ``policy``; the seed fixes acceptance, corruptions and latencies."""
    agent = workload.agent
    tokens = tokenize(agent.transcript)
    loop, world = VirtualLoop(), World(agent.rows)
    rng = random.Random(seed)
    gate_policy = "defer" if policy == "end_of_turn" else policy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager_unsafe warns by design
        orch = SimOrchestrator(agent.tools, loop, world, seed, format=agent.format, turn_key=f"sim-{seed}",
                               policy=gate_policy)
    if policy == "end_of_turn":
        decoded = decode(tokens, workload.model, rng, lambda w: None, lambda n, c: None, loop.run_until)
        orch.draft(tokens)  # the whole verified turn, handed over at its end
        orch.verify(len(tokens), None)
    else:
        decoded = decode(tokens, workload.model, rng, orch.draft, orch.verify, loop.run_until)
    report = orch.finish()
    finished = [r.finished for r in report.dispatch_log if r.finished is not None and not r.discarded]
    reference = World(agent.rows)
    for call in report.accepted:
        tool = agent.tools.get(call.name)
        if tool is not None:
            reference.apply(tool, call.arguments, 0.0)
    kinds = [v.kind for v in report.violations]
    return TurnOutcome(
        latency=max([decoded.end, *finished]),
        decode=decoded,
        wasted_reads=len(report.discarded),
        orphans=kinds.count("orphan") + kinds.count("key_divergence"),
        stale_reads=kinds.count("stale_read"),
        diverged=world.rows() != reference.rows(),
    )


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


@dataclass(frozen=True)
class Summary:
    workload: str
    policy: str
    turns: int
    p50: float
    p90: float
    p99: float
    saved_p50: float
    """Median time saved against ``end_of_turn`` on the same seeds (seconds)."""
    wasted_reads: float
    """Speculative reads discarded, per turn."""
    orphans: int
    stale_reads: int
    diverged: int
    tokens_per_step: float

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


class _Progress:
    """A progress bar on stderr for sweeps that take more than a moment."""

    def __init__(self, total: int) -> None:
        self.total, self.done = total, 0
        self.enabled = sys.stderr.isatty() and total > 200

    def step(self) -> None:
        self.done += 1
        if self.enabled and (self.done % 20 == 0 or self.done == self.total):
            filled = 30 * self.done // self.total
            sys.stderr.write(f"\r  [{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} turns")
            if self.done == self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()


def simulate(workloads: list[Workload], seeds: int = 100, first_seed: int = 0) -> list[Summary]:
    """Every workload under every policy, on the same ``seeds`` seeds."""
    progress = _Progress(len(workloads) * len(POLICIES) * seeds)
    out = []
    for w in workloads:
        runs: dict[str, list[TurnOutcome]] = {}
        for policy in POLICIES:
            runs[policy] = []
            for seed in range(first_seed, first_seed + seeds):
                runs[policy].append(run_turn(w, policy, seed))
                progress.step()
        base = [r.latency for r in runs["end_of_turn"]]
        for policy, turns in runs.items():
            lat = [t.latency for t in turns]
            saved = [b - x for b, x in zip(base, lat)]
            steps = sum(t.decode.steps for t in turns) or 1
            out.append(Summary(
                w.name, policy, len(turns), _pct(lat, 0.5), _pct(lat, 0.9), _pct(lat, 0.99), _pct(saved, 0.5),
                sum(t.wasted_reads for t in turns) / len(turns), sum(t.orphans for t in turns),
                sum(t.stale_reads for t in turns), sum(t.diverged for t in turns),
                sum(t.decode.tokens for t in turns) / steps,
            ))
    return out


def alpha_sweep(workload: Workload, alphas: list[float], seeds: int = 50) -> dict[float, list[Summary]]:
    """``workload`` at each acceptance rate in ``alphas``: alpha -> one ``Summary`` per policy
    (in ``POLICIES`` order), every policy on the same ``seeds`` seeds."""
    return {a: simulate([replace(workload, model=replace(workload.model, alpha=a))], seeds) for a in alphas}
