"""Runs workloads under each policy on the same seeds and summarises what
waiting costs and what eager dispatch risks."""

from __future__ import annotations

import functools
import json
import random
import sys
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from .._core import CallCommitted, TokenStream
from ..report import Report
from .clock import VirtualLoop
from .decoding import Decoded, decode, tokenize
from .runner import SimOrchestrator
from .workloads import Workload
from .world import World

__all__ = [
    "POLICIES",
    "PlayedTurn",
    "Summary",
    "TurnOutcome",
    "alpha_sweep",
    "call_spans",
    "play_turn",
    "run_turn",
    "simulate",
]

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
    ahead: int = 0
    """Accepted calls that started before their block was accepted (a read, or a prepare, on the draft)."""
    lead: float = 0.0
    """Seconds those calls started ahead of their acceptance, added up."""


@functools.lru_cache(maxsize=64)
def _spans(transcript: str, fmt: str) -> tuple[tuple[int, int], ...]:
    stream = TokenStream(json.loads(fmt), "spans")
    tokens = tokenize(transcript)
    outcomes = [*stream.draft(tokens), *stream.verify(len(tokens)), *stream.finish()]
    return tuple(o.call.span for o in outcomes if isinstance(o, CallCommitted))


def call_spans(workload: Workload) -> tuple[tuple[int, int], ...]:
    """The token spans ``[start, end)`` of the tool-call blocks of ``workload``'s turn."""
    return _spans(workload.agent.transcript, json.dumps(workload.agent.format, sort_keys=True))


@dataclass(frozen=True)
class PlayedTurn:
    """A turn as ``play_turn`` ran it: its outcome, and what to check it against."""

    outcome: TurnOutcome
    report: Report
    """The turn's report: the dispatch log has virtual start and end times."""
    accepted_at: dict[str, float]
    """Commit key -> the virtual time its block was accepted."""


def run_turn(workload: Workload, policy: str, seed: int) -> TurnOutcome:
    """One turn of ``workload`` under ``policy``; the seed fixes acceptance, corruptions and latencies."""
    return play_turn(workload, policy, seed).outcome


def play_turn(workload: Workload, policy: str, seed: int) -> PlayedTurn:
    """``run_turn``, with the turn's report and when each accepted call's block was accepted."""
    agent = workload.agent
    tokens = tokenize(agent.transcript)
    model = workload.model
    calls = call_spans(workload) if model.call_accuracy is not None or model.whole_calls else ()
    loop, world = VirtualLoop(), World(agent.rows)
    rng = random.Random(seed)
    gate_policy = "defer" if policy == "end_of_turn" else policy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager_unsafe warns by design
        orch = SimOrchestrator(
            agent.tools, loop, world, seed, format=agent.format, turn_key=f"sim-{seed}", policy=gate_policy
        )
    if policy == "end_of_turn":
        decoded = decode(tokens, model, rng, lambda w: None, lambda n, c: None, loop.run_until, calls=calls)
        orch.draft(tokens)  # the whole verified turn, handed over at its end
        orch.verify(len(tokens), None)
    else:
        decoded = decode(tokens, model, rng, orch.draft, orch.verify, loop.run_until, calls=calls)
    report = orch.finish()
    finished = [r.finished for r in report.dispatch_log if r.finished is not None and not r.discarded]
    reference = World(agent.rows)
    for call in report.accepted:
        tool = agent.tools.get(call.name)
        if tool is not None:
            reference.apply(tool, call.arguments, 0.0)
    kinds = [v.kind for v in report.violations]
    started = {r.commit_key: r.started for r in report.dispatch_log if not r.discarded and r.started is not None}
    leads = [lead for key, at in orch.accepted_at.items() if key in started and (lead := at - started[key]) > 0]
    outcome = TurnOutcome(
        latency=max([decoded.end, *finished]),
        decode=decoded,
        wasted_reads=len(report.discarded),
        orphans=kinds.count("orphan") + kinds.count("key_divergence"),
        stale_reads=kinds.count("stale_read"),
        diverged=world.rows() != reference.rows(),
        ahead=len(leads),
        lead=sum(leads),
    )
    return PlayedTurn(outcome, report, dict(orch.accepted_at))


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values``, one of them (the upper one of a tie)."""
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def median(values: list[float]) -> float:
    return percentile(values, 0.5)


@dataclass(frozen=True)
class Summary:
    """One workload under one policy over every seed: latencies (seconds), waste and faults."""

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
        """Its fields as a dict, for ``--json`` output."""
        return asdict(self)


class Progress:
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

    def clear(self) -> None:
        """Blanks the bar's line, so a line printed on the same terminal starts at its edge."""
        if self.enabled and 0 < self.done < self.total:
            sys.stderr.write("\r" + " " * 60 + "\r")
            sys.stderr.flush()


def simulate(
    workloads: list[Workload],
    seeds: int = 100,
    first_seed: int = 0,
    *,
    each: Callable[[list[Summary]], None] | None = None,
) -> list[Summary]:
    """Every workload under every policy, on the same ``seeds`` seeds.

    Args:
        each: called with a workload's summaries (one per policy) as soon as that workload
            is done, so that a caller can show them while the rest of the sweep runs.
    """
    progress = Progress(len(workloads) * len(POLICIES) * seeds)
    out: list[Summary] = []
    for w in workloads:
        start = len(out)
        runs: dict[str, list[TurnOutcome]] = {}
        for policy in POLICIES:
            runs[policy] = []
            for seed in range(first_seed, first_seed + seeds):
                runs[policy].append(run_turn(w, policy, seed))
                progress.step()
        base = [r.latency for r in runs["end_of_turn"]]
        for policy, turns in runs.items():
            lat = [t.latency for t in turns]
            saved = [b - x for b, x in zip(base, lat, strict=True)]
            steps = sum(t.decode.steps for t in turns) or 1
            out.append(
                Summary(
                    w.name,
                    policy,
                    len(turns),
                    percentile(lat, 0.5),
                    percentile(lat, 0.9),
                    percentile(lat, 0.99),
                    median(saved),
                    sum(t.wasted_reads for t in turns) / len(turns),
                    sum(t.orphans for t in turns),
                    sum(t.stale_reads for t in turns),
                    sum(t.diverged for t in turns),
                    sum(t.decode.tokens for t in turns) / steps,
                )
            )
        if each is not None:
            progress.clear()
            each(out[start:])
    return out


def alpha_sweep(workload: Workload, alphas: list[float], seeds: int = 50) -> dict[float, list[Summary]]:
    """``workload`` at each acceptance rate in ``alphas``: alpha -> one ``Summary`` per policy
    (in ``POLICIES`` order), every policy on the same ``seeds`` seeds."""
    return {a: simulate([replace(workload, model=replace(workload.model, alpha=a))], seeds) for a in alphas}
