"""`inert simulate`: what each dispatch policy costs and risks, on a
deterministic discrete-event simulation of a speculative agent loop. The gate,
scanner, scheduler, journal and reconciliation are inert's own; only the clock,
the decoding and the tools are simulated."""

from .decoding import ModelProfile, decode, tokenize
from .sweep import POLICIES, Summary, TurnOutcome, alpha_sweep, run_turn, simulate
from .workloads import AGENTS, MODELS, Agent, Workload, default_workloads, load_workloads
from .world import Latency, SimTool, World

__all__ = [
    "AGENTS", "MODELS", "POLICIES", "Agent", "Latency", "ModelProfile", "SimTool", "Summary", "TurnOutcome",
    "Workload", "World", "alpha_sweep", "decode", "default_workloads", "load_workloads", "run_turn", "simulate",
    "tokenize",
]
