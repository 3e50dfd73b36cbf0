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
import math
import os
import tomllib
from dataclasses import dataclass, field
from typing import Any

from .._core import TokenStream
from ..errors import InertError, InertValueError
from .decoding import ModelProfile
from .world import Latency, SimTool

__all__ = ["AGENTS", "MODELS", "Agent", "Workload", "default_workloads", "load_workloads"]


@dataclass(frozen=True)
class Agent:
    """An assistant turn: its text (in ``format``), its tools, the world's starting rows."""

    name: str
    transcript: str
    tools: dict[str, SimTool]
    rows: dict[str, str] = field(default_factory=dict)
    format: str | dict[str, Any] = "hermes"
    """A format name (see ``inert.formats()``) or a custom format description."""


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
        alpha = 0.8                   # 0 <= alpha <= 1
        k = 4                         # a whole number >= 1
        verify_s = 0.004              # seconds >= 0, as is draft_s
        [agents.lookup]
        format = "hermes"             # optional: a format name or a custom format table
        transcript = '''<tool_call>{"name": "get", "arguments": {"key": "a"}}</tool_call>'''
        rows = { a = "1" }            # optional starting rows
        [agents.lookup.tools.get]
        kind = "read"                 # read | write | delete
        key = "key"                   # the argument naming the resource
        median_s = 0.05               # seconds >= 0
        p99_s = 0.4                   # optional, >= median_s: lognormal tail
        [[workloads]]                 # optional; default: every model with every agent
        model = "fast"                # a model here or a built-in one
        agent = "lookup"              # an agent here or a built-in one

    Raises:
        InertValueError: the file is not valid TOML, or a field is missing, unknown, of the
            wrong type or out of range; the message names the file and the field.
        OSError: the file cannot be read.
    """
    return _Loader(os.fspath(path)).load()


class _Loader:
    """Reads a workload file, checking every field before anything is built from it."""

    MODEL_FIELDS = ("alpha", "k", "verify_s", "draft_s", "alpha_decay", "adaptive")
    AGENT_FIELDS = ("transcript", "format", "rows", "tools")
    TOOL_FIELDS = ("kind", "key", "median_s", "p99_s")
    KINDS = ("read", "write", "delete")

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, where: str, problem: str) -> InertValueError:
        return InertValueError(f"{self.path}: {where}: {problem}")

    def load(self) -> list[Workload]:
        with open(self.path, "rb") as f:
            raw = f.read()
        try:
            doc = tomllib.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise InertValueError(f"{self.path}: not a TOML file: byte {e.start} is not UTF-8") from None
        except tomllib.TOMLDecodeError as e:
            raise InertValueError(f"{self.path}: not valid TOML: {e}") from None
        self.only(doc, "the top level", ("models", "agents", "workloads"))
        models = dict(MODELS) | {n: self.model(n, m) for n, m in self.tables(doc, "models").items()}
        agents = dict(AGENTS) | {n: self.agent(n, a) for n, a in self.tables(doc, "agents").items()}
        chosen = doc.get("workloads")
        if chosen is None or chosen == []:
            return [Workload(models[m], agents[a]) for m in (self.tables(doc, "models") or models)
                    for a in (self.tables(doc, "agents") or agents)]
        if not isinstance(chosen, list):
            raise self.fail("workloads", f"must be an array of tables ([[workloads]]), got {self.show(chosen)}")
        out = []
        for i, w in enumerate(chosen):
            where = f"workloads[{i}]"
            if not isinstance(w, dict):
                raise self.fail(where, f"must be a table with model and agent, got {self.show(w)}")
            self.only(w, where, ("model", "agent"))
            model = self.name(w, where, "model", models)
            agent = self.name(w, where, "agent", agents)
            out.append(Workload(models[model], agents[agent]))
        return out

    # -- the parts --

    def model(self, name: str, m: dict[str, Any]) -> ModelProfile:
        where = f"models.{name}"
        self.only(m, where, self.MODEL_FIELDS)
        if "alpha" not in m:
            raise self.fail(f"{where}.alpha", "missing (the per-token acceptance rate, between 0 and 1)")
        fields: dict[str, Any] = {"alpha": self.number(m, where, "alpha", low=0.0, high=1.0)}
        if "k" in m:
            fields["k"] = self.whole(m, where, "k", low=1)
        for f in ("verify_s", "draft_s"):
            if f in m:
                fields[f] = self.number(m, where, f, low=0.0)
        if "alpha_decay" in m:
            fields["alpha_decay"] = self.number(m, where, "alpha_decay", low=0.0, high=1.0, low_open=True)
        if "adaptive" in m:
            if not isinstance(m["adaptive"], bool):
                raise self.fail(f"{where}.adaptive", f"must be true or false, got {self.show(m['adaptive'])}")
            fields["adaptive"] = m["adaptive"]
        return ModelProfile(name=name, **fields)

    def agent(self, name: str, a: dict[str, Any]) -> Agent:
        where = f"agents.{name}"
        self.only(a, where, self.AGENT_FIELDS)
        if not isinstance(a.get("transcript"), str):
            problem = "missing" if "transcript" not in a else f"must be a string, got {self.show(a['transcript'])}"
            raise self.fail(f"{where}.transcript", f"{problem} (the assistant turn's text, with its tool calls)")
        fmt = a.get("format", "hermes")
        if not isinstance(fmt, (str, dict)):
            raise self.fail(f"{where}.format", f"must be a format name or a custom format table, got {self.show(fmt)}")
        try:
            TokenStream(fmt, "check")
        except InertError as e:
            raise self.fail(f"{where}.format", str(e)) from None
        rows = a.get("rows", {})
        if not isinstance(rows, dict):
            raise self.fail(f"{where}.rows", f"must be a table of name = \"value\", got {self.show(rows)}")
        for key, value in rows.items():
            if not isinstance(value, str):
                raise self.fail(f"{where}.rows.{key}", f"must be a string, got {self.show(value)}")
        tools = {t: self.tool(f"{where}.tools.{t}", t, spec) for t, spec in self.tables(a, "tools", where).items()}
        return Agent(name, a["transcript"], tools, dict(rows), fmt)

    def tool(self, where: str, name: str, spec: dict[str, Any]) -> SimTool:
        self.only(spec, where, self.TOOL_FIELDS)
        kind = spec.get("kind")
        if kind not in self.KINDS:
            problem = "missing" if "kind" not in spec else f"unknown tool kind {self.show(kind)}"
            raise self.fail(f"{where}.kind", f"{problem}; use one of {', '.join(self.KINDS)}")
        key = spec.get("key", "key")
        if not isinstance(key, str):
            raise self.fail(f"{where}.key", f"must be the name of an argument (a string), got {self.show(key)}")
        if "median_s" not in spec:
            raise self.fail(f"{where}.median_s", "missing (the tool's median latency in seconds)")
        median = self.number(spec, where, "median_s", low=0.0)
        p99 = None
        if "p99_s" in spec:
            p99 = self.number(spec, where, "p99_s", low=median)
        return SimTool(name, kind, Latency(median, p99), key=key)

    # -- checks --

    def tables(self, doc: dict[str, Any], field: str, where: str = "") -> dict[str, dict[str, Any]]:
        """``doc[field]``: a table whose values are tables."""
        path = f"{where}.{field}" if where else field
        value = doc.get(field, {})
        if not isinstance(value, dict):
            raise self.fail(path, f"must be a table of tables ([{path}.NAME]), got {self.show(value)}")
        for name, entry in value.items():
            if not isinstance(entry, dict):
                raise self.fail(f"{path}.{name}", f"must be a table ([{path}.{name}]), got {self.show(entry)}")
        return value

    def only(self, table: dict[str, Any], where: str, allowed: tuple[str, ...]) -> None:
        for key in table:
            if key not in allowed:
                at = key if where == "the top level" else f"{where}.{key}"
                raise self.fail(at, f"unknown field; {where} takes {', '.join(allowed)}")

    def name(self, w: dict[str, Any], where: str, field: str, known: dict[str, Any]) -> str:
        value = w.get(field)
        if value is None:
            raise self.fail(f"{where}.{field}", "missing")
        if not isinstance(value, str) or value not in known:
            raise self.fail(f"{where}.{field}", f"unknown {field} {self.show(value)}; known: {', '.join(known)}")
        return value

    def number(self, table: dict[str, Any], where: str, field: str, *, low: float, high: float | None = None,
               low_open: bool = False) -> float:
        value = table[field]
        bound = (f"between {low:g} (excluded) and {high:g}" if low_open else f"between {low:g} and {high:g}") \
            if high is not None else f"at least {low:g}"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(f"{where}.{field}", f"must be a number {bound}, got {self.show(value)}")
        if not math.isfinite(value) or value < low or (low_open and value == low) or (high is not None and value > high):
            raise self.fail(f"{where}.{field}", f"must be a number {bound}, got {value!r}")
        return float(value)

    def whole(self, table: dict[str, Any], where: str, field: str, *, low: int) -> int:
        value = table[field]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"{where}.{field}", f"must be a whole number of at least {low}, got {self.show(value)}")
        if value < low:
            raise self.fail(f"{where}.{field}", f"must be a whole number of at least {low}, got {value}")
        return value

    @staticmethod
    def show(value: Any) -> str:
        kinds = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", list: "an array",
                 dict: "a table"}
        text = repr(value)
        if len(text) > 40:
            text = text[:37] + "..."
        return f"{text} ({kinds.get(type(value), type(value).__name__)})"
