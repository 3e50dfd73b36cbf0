"""`inert simulate`: what each dispatch policy costs and risks, on a
deterministic discrete-event simulation of a speculative agent loop. The gate,
scanner, scheduler, journal and reconciliation are inert's own; only the clock,
the decoding and the tools are simulated."""

from .decoding import ModelProfile, decode, tokenize
from .depth import DEPTH_POLICIES, DepthPoint, depth_sweep
from .sweep import POLICIES, PlayedTurn, Summary, TurnOutcome, alpha_sweep, call_spans, play_turn, run_turn, simulate
from .workloads import (
    AGENTS,
    DEPTH_AGENTS,
    DEPTHS,
    DRAFTERS,
    MODELS,
    Agent,
    Workload,
    default_workloads,
    depth_workloads,
    load_workloads,
)
from .world import Latency, SimTool, World

__all__ = [
    "AGENTS",
    "DEPTHS",
    "DEPTH_AGENTS",
    "DEPTH_POLICIES",
    "DRAFTERS",
    "MODELS",
    "POLICIES",
    "Agent",
    "DepthPoint",
    "Latency",
    "ModelProfile",
    "PlayedTurn",
    "SimTool",
    "Summary",
    "TurnOutcome",
    "Workload",
    "World",
    "alpha_sweep",
    "call_spans",
    "decode",
    "default_workloads",
    "depth_sweep",
    "depth_workloads",
    "load_workloads",
    "play_turn",
    "run_turn",
    "simulate",
    "tokenize",
]
