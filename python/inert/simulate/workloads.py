"""Built-in workloads (a model profile and an agent's turn) and custom ones from TOML.

The model profiles are assumptions, not measurements: verify-step latency and
acceptance in the range reported for EAGLE/Medusa-style speculation on an 8B
model on one H100 (verify ~5 ms, k ~5, acceptance 0.6-0.9) and a 70B model
(verify 10-20 ms). Tool latencies are assumptions too (web search hundreds of
ms with a long tail, file reads and writes tens of ms). Change any of them in
a TOML workload.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field
from typing import Any

from .decoding import ModelProfile
from .world import Latency, SimTool

__all__ = ["Agent", "Workload", "MODELS", "AGENTS", "default_workloads", "load_workloads"]


@dataclass(frozen=True)
class Agent:
    """An assistant turn: its text (in ``format``), its tools, the world's starting rows."""

    name: str
    transcript: str
    tools: dict[str, SimTool]
    rows: dict[str, str] = field(default_factory=dict)
    format: str = "hermes"


@dataclass(frozen=True)
class Workload:
    model: ModelProfile
    agent: Agent

    @property
    def name(self) -> str:
        return f"{self.model.name} / {self.agent.name}"


def call(tool: str, **arguments: Any) -> str:
    return f'<tool_call>\n{json.dumps({"name": tool, "arguments": arguments})}\n</tool_call>\n'


MODELS = {
    "8b-h100": ModelProfile("8b-h100", alpha=0.8, k=5, verify_s=0.005, draft_s=0.0004),
    "70b": ModelProfile("70b", alpha=0.75, k=5, verify_s=0.015, draft_s=0.0006),
}

AGENTS = {
    "research": Agent(
        "research",
        "I'll search a few sources in parallel before answering.\n"
        + "".join(call("search", query=q) for q in ("speculative decoding", "EAGLE-3 acceptance", "Medusa heads", "tree attention"))
        + "Once these come back I will summarise what they agree on.",
        {"search": SimTool("search", "read", Latency(0.30, 1.5), key="query")},
    ),
    "coding": Agent(
        "coding",
        "Let me look at the module first.\n"
        + call("read_file", path="src/app.py") + call("read_file", path="src/util.py") + call("read_file", path="tests/test_app.py")
        + "Now the fix, and a test for it.\n"
        + call("write_file", path="src/util.py", content="def parse(x):\n    return int(x)\n")
        + call("write_file", path="tests/test_util.py", content="def test_parse():\n    assert parse('1') == 1\n")
        + "Done: parse() now returns an int.",
        {"read_file": SimTool("read_file", "read", Latency(0.02, 0.10), key="path"),
         "write_file": SimTool("write_file", "write", Latency(0.03, 0.15), key="path")},
        rows={"src/app.py": "app", "src/util.py": "util", "tests/test_app.py": "tests"},
    ),
    "incident": Agent(
        "incident",
        "I'll publish the Q3 report, retire Q2, and confirm Q2 is gone.\n"
        + call("create_report", name="reports/q3", body="Q3 revenue up 4%")
        + call("delete_report", name="reports/q2") + call("read_report", name="reports/q2"),
        {"create_report": SimTool("create_report", "write", Latency(0.02), key="name"),
         "delete_report": SimTool("delete_report", "delete", Latency(0.08), key="name"),
         "read_report": SimTool("read_report", "read", Latency(0.005), key="name")},
        rows={"reports/q1": "Q1 revenue flat", "reports/q2": "Q2 revenue down 2%"},
    ),
}


def default_workloads() -> list[Workload]:
    return [Workload(m, a) for m in MODELS.values() for a in AGENTS.values()]


def load_workloads(path: str | os.PathLike[str]) -> list[Workload]:
    """Workloads from TOML::

        [models.fast]                 # ModelProfile fields; alpha required
        alpha = 0.8
        k = 4
        verify_s = 0.004
        [agents.lookup]
        format = "hermes"             # optional
        transcript = '''<tool_call>{"name": "get", "arguments": {"key": "a"}}</tool_call>'''
        rows = { a = "1" }            # optional starting rows
        [agents.lookup.tools.get]
        kind = "read"                 # read | write | delete
        key = "key"                   # the argument naming the resource
        median_s = 0.05
        p99_s = 0.4                   # optional: lognormal tail
        [[workloads]]                 # optional; default: every model with every agent
        model = "fast"                # a model here or a built-in one
        agent = "lookup"              # an agent here or a built-in one
    """
    from ..errors import InertValueError

    with open(path, "rb") as f:
        doc = tomllib.load(f)
    try:
        models = dict(MODELS) | {n: ModelProfile(name=n, **m) for n, m in doc.get("models", {}).items()}
        agents = dict(AGENTS)
        for n, a in doc.get("agents", {}).items():
            tools = {t: SimTool(t, spec["kind"], Latency(spec["median_s"], spec.get("p99_s")), key=spec.get("key", "key"))
                     for t, spec in a.get("tools", {}).items()}
            agents[n] = Agent(n, a["transcript"], tools, dict(a.get("rows", {})), a.get("format", "hermes"))
        chosen = doc.get("workloads") or [{"model": m, "agent": a} for m in doc.get("models", {}) or models
                                          for a in doc.get("agents", {}) or agents]
        return [Workload(models[w["model"]], agents[w["agent"]]) for w in chosen]
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise InertValueError(f"{os.fspath(path)}: bad workload description: {e!r}") from None
