"""Built-in workloads (a model profile and an agent's turn) and custom ones from TOML.

The model profiles are assumptions, not measurements: verify-step latency and
acceptance in the range reported for EAGLE/Medusa-style speculation on an 8B
model on one H100 (verify ~5 ms, k ~5, acceptance 0.6-0.9) and a 70B model
(verify 10-20 ms). Tool latencies are assumptions too (web search hundreds of
ms with a long tail, file reads and writes tens of ms). Change any of them in
a TOML workload.

Two-phase tools (``SimTool(..., prepare=Latency(...))``) stage their effect for
the prepare latency, changing nothing, then commit for their own latency. The
built-in ones: a coding agent whose ``write_file`` writes and checks a temporary
file (120 ms median, 400 ms p99: write and fsync it, run the formatter and the
linter on it) and renames it into place (2 ms); a payments agent whose
``pay_invoice`` authorises (holds the funds at the bank, runs the fraud and
limit checks, stages the ledger transaction: 350 ms median, 1.5 s p99) and
captures (COMMIT: 40 ms median, 200 ms p99). A two-phase call's footprint is
its key argument (the path, the invoice): a draft slip in another argument (the
content, the amount) leaves it as it was, so the corrected call conflicts with
the rejected one and waits while the rejected one's prepare is still running.

Draft depth (``DRAFTERS``, swept by ``inert simulate --depths``). An early start
(a read, a prepare) can begin only when its call's block closes in a draft, and
that draft is verified in the next step: the lead over acceptance is one verify
step at most, however deep the draft. Depth matters through two things: how
often a call's last token is drafted at all (a call whose last token is the
target's own correction or bonus token closes on acceptance, with no lead), and
how long the verify step is (deep windows cost more once the batch makes
verification compute-bound). A draft goes on with the right tokens after its
first wrong one (``decoding.decode``), so in a deep window the calls after a slip
close in the draft too, and start for nothing: that is what deep drafts at low
acceptance cost ``read_eager``. The drafters, all on the 8B target of ``8b-h100``:

- ``eagle``: EAGLE/Medusa-style heads, alpha 0.8 per token at any depth (deeper
  windows add rejected tokens, not accepted ones); verify 5 ms + 0.02 ms per
  drafted token (memory-bound: a deep window costs little more at batch 1).
- ``suffix``: suffix decoding over repeated agent output (a suffix tree of
  earlier turns; drafting costs microseconds, 0.02 ms per token here): prose at
  alpha 0.75, and tool-call blocks, which repeat earlier calls' structure and
  mostly their values, drafted whole: a block (25-52 tokens here) is right whole
  in 9 cases out of 10. Deep enough (k >= the block), a call's last token is
  almost always drafted.
- ``suffix-batch32``: the same under batch load, 32 sequences in each verify
  pass: 12 ms a step before any draft token (the weights and 32 sequences' KV
  caches read from memory), and each drafted token per sequence adds 32 tokens
  of compute (32 x 16 GFLOP, ~0.7 ms at ~700 TFLOP/s, most of an H100's dense
  bf16 peak): verify 12 ms + 0.7 ms per drafted token.
- ``call-model``: a small model that predicts a whole call when the target
  reaches it (as in speculative tool-call work), drafted as one window from the
  call's first token to its last, whatever k is (k bounds the prose windows,
  which EAGLE heads draft at alpha 0.8); right whole in 8 cases out of 10.
  The call's tokens cost the heads' drafting time; a prediction made earlier
  than the step that verifies it would give no more lead, since inert's verify
  resolves the whole pending draft.
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
from ..files import read_whole
from .decoding import ModelProfile
from .world import Latency, SimTool

__all__ = [
    "AGENTS",
    "DEPTHS",
    "DEPTH_AGENTS",
    "DRAFTERS",
    "MODELS",
    "Agent",
    "Workload",
    "default_workloads",
    "depth_workloads",
    "load_workloads",
]


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
    """One model's decoding profile running one agent's script of tool calls."""

    model: ModelProfile
    agent: Agent

    @property
    def name(self) -> str:
        """``"model / agent"``, as the tables and ``--json`` name it."""
        return f"{self.model.name} / {self.agent.name}"


def call(tool: str, **arguments: Any) -> str:
    return f"<tool_call>\n{json.dumps({'name': tool, 'arguments': arguments})}\n</tool_call>\n"


def _coding(name: str, plan: str, write_file: SimTool) -> Agent:
    """A coding agent that reads three files, then writes two with ``write_file``
    (done at once, or staged and checked first): the same script, its plan said in ``plan``."""
    return Agent(
        name,
        "Let me look at the module first.\n"
        + call("read_file", path="src/app.py")
        + call("read_file", path="src/util.py")
        + call("read_file", path="tests/test_app.py")
        + plan
        + call("write_file", path="src/util.py", content="def parse(x):\n    return int(x)\n")
        + call("write_file", path="tests/test_util.py", content="def test_parse():\n    assert parse('1') == 1\n")
        + "Done: parse() now returns an int.",
        {"read_file": SimTool("read_file", "read", Latency(0.02, 0.10), key="path"), "write_file": write_file},
        rows={"src/app.py": "app", "src/util.py": "util", "tests/test_app.py": "tests"},
    )


MODELS = {
    "8b-h100": ModelProfile("8b-h100", alpha=0.8, k=5, verify_s=0.005, draft_s=0.0004),
    "70b": ModelProfile("70b", alpha=0.75, k=5, verify_s=0.015, draft_s=0.0006),
}

AGENTS = {
    "research": Agent(
        "research",
        "I'll search a few sources in parallel before answering.\n"
        + "".join(
            call("search", query=q)
            for q in ("speculative decoding", "EAGLE-3 acceptance", "Medusa heads", "tree attention")
        )
        + "Once these come back I will summarise what they agree on.",
        {"search": SimTool("search", "read", Latency(0.30, 1.5), key="query")},
    ),
    "coding": _coding(
        "coding", "Now the fix, and a test for it.\n", SimTool("write_file", "write", Latency(0.03, 0.15), key="path")
    ),
    "coding-staged": _coding(
        "coding-staged",
        "Now the fix, and a test for it; each file is staged and checked, then renamed into place.\n",
        SimTool("write_file", "write", Latency(0.002, 0.01), key="path", prepare=Latency(0.12, 0.40)),
    ),
    "payments": Agent(
        "payments",
        "I'll check both invoices, pay them from the operating account, and confirm.\n"
        + call("get_invoice", invoice="INV-1042")
        + call("get_invoice", invoice="INV-1043")
        + call("pay_invoice", invoice="INV-1042", amount=1250, currency="EUR", source="operating")
        + call("pay_invoice", invoice="INV-1043", amount=880, currency="EUR", source="operating")
        + call("get_invoice", invoice="INV-1042")
        + call("get_invoice", invoice="INV-1043")
        + "Both invoices are paid; the receipts follow by email.",
        {
            "get_invoice": SimTool("get_invoice", "read", Latency(0.03, 0.15), key="invoice"),
            "pay_invoice": SimTool(
                "pay_invoice", "write", Latency(0.04, 0.20), key="invoice", prepare=Latency(0.35, 1.5)
            ),
        },
        rows={"INV-1042": "open 1250 EUR", "INV-1043": "open 880 EUR"},
    ),
    "incident": Agent(
        "incident",
        "I'll publish the Q3 report, retire Q2, and confirm Q2 is gone.\n"
        + call("create_report", name="reports/q3", body="Q3 revenue up 4%")
        + call("delete_report", name="reports/q2")
        + call("read_report", name="reports/q2"),
        {
            "create_report": SimTool("create_report", "write", Latency(0.02), key="name"),
            "delete_report": SimTool("delete_report", "delete", Latency(0.08), key="name"),
            "read_report": SimTool("read_report", "read", Latency(0.005), key="name"),
        },
        rows={"reports/q1": "Q1 revenue flat", "reports/q2": "Q2 revenue down 2%"},
    ),
}


DRAFTERS = {
    "eagle": ModelProfile("eagle", alpha=0.8, verify_s=0.005, draft_s=0.0004, verify_per_token_s=0.00002),
    "suffix": ModelProfile(
        "suffix", alpha=0.75, verify_s=0.005, draft_s=0.00002, verify_per_token_s=0.00002, call_accuracy=0.9
    ),
    "suffix-batch32": ModelProfile(
        "suffix-batch32", alpha=0.75, verify_s=0.012, draft_s=0.00002, verify_per_token_s=0.0007, call_accuracy=0.9
    ),
    "call-model": ModelProfile(
        "call-model",
        alpha=0.8,
        verify_s=0.005,
        draft_s=0.0004,
        verify_per_token_s=0.00002,
        call_accuracy=0.8,
        whole_calls=True,
    ),
}
"""Drafters of different depth on the 8B target (see the module documentation); ``k`` is what the sweep varies."""

DEPTHS = (4, 8, 16, 32, 64)
"""The draft depths (``k``) ``inert simulate --depths`` sweeps by default."""

DEPTH_AGENTS = ("coding-staged", "payments")
"""The agents the depth sweep runs: reads and two-phase writes that may start on the draft."""


def default_workloads() -> list[Workload]:
    """Every model of ``MODELS`` with every agent of ``AGENTS``: what ``inert simulate`` runs by default."""
    return [Workload(m, a) for m in MODELS.values() for a in AGENTS.values()]


def depth_workloads() -> list[Workload]:
    """Every drafter of ``DRAFTERS`` with every agent of ``DEPTH_AGENTS``."""
    return [Workload(d, AGENTS[a]) for a in DEPTH_AGENTS for d in DRAFTERS.values()]


def load_workloads(path: str | os.PathLike[str]) -> list[Workload]:
    """Workloads from TOML::

        [models.fast]                 # ModelProfile fields; alpha required
        alpha = 0.8                   # 0 <= alpha <= 1
        k = 4                         # a whole number >= 1
        verify_s = 0.004              # seconds >= 0, as are draft_s and verify_per_token_s
        call_accuracy = 0.9           # optional, 0-1: tool-call blocks drafted whole, right whole this often
        whole_calls = false           # optional: a window that reaches a call ends at its last token
        [agents.lookup]
        format = "hermes"             # optional: a format name or a custom format table
        transcript = '''<tool_call>{"name": "get", "arguments": {"key": "a"}}</tool_call>'''
        rows = { a = "1" }            # optional starting rows
        [agents.lookup.tools.get]
        kind = "read"                 # read | write | delete
        key = "key"                   # the argument naming the resource
        median_s = 0.05               # seconds >= 0
        p99_s = 0.4                   # optional, >= median_s: lognormal tail
        [agents.lookup.tools.put]
        kind = "write"
        median_s = 0.01               # a two-phase tool: its commit's latency (the effect lands at its end)
        prepare = { median_s = 0.3, p99_s = 1.2 }   # write or delete only: stages, changing nothing
        [[workloads]]                 # optional; default: every model with every agent (a file
                                      # defining none of the three is refused)
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

    MODEL_FIELDS = (
        "alpha",
        "k",
        "verify_s",
        "draft_s",
        "alpha_decay",
        "adaptive",
        "verify_per_token_s",
        "call_accuracy",
        "whole_calls",
    )
    AGENT_FIELDS = ("transcript", "format", "rows", "tools")
    TOOL_FIELDS = ("kind", "key", "median_s", "p99_s", "prepare")
    PREPARE_FIELDS = ("median_s", "p99_s")
    KINDS = ("read", "write", "delete")

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, where: str, problem: str) -> InertValueError:
        return InertValueError(f"{self.path}: {where}: {problem}")

    def load(self) -> list[Workload]:
        try:
            raw = read_whole(self.path, "a TOML file of workloads")
        except ValueError as e:
            raise InertValueError(str(e)) from None
        try:
            doc = tomllib.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise InertValueError(f"{self.path}: not a TOML file: byte {e.start} is not UTF-8") from None
        except tomllib.TOMLDecodeError as e:
            raise InertValueError(f"{self.path}: not valid TOML: {e}") from None
        except RecursionError:  # tomllib parses arrays and inline tables by recursion
            raise InertValueError(f"{self.path}: not a TOML file of workloads: it nests too deeply") from None
        self.only(doc, "the top level", ("models", "agents", "workloads"))
        models = dict(MODELS) | dict(DRAFTERS) | {n: self.model(n, m) for n, m in self.tables(doc, "models").items()}
        agents = dict(AGENTS) | {n: self.agent(n, a) for n, a in self.tables(doc, "agents").items()}
        chosen = doc.get("workloads")
        defines = self.tables(doc, "models") or self.tables(doc, "agents")
        if chosen == [] or (chosen is None and not defines):
            raise InertValueError(
                f"{self.path}: defines no models, agents or workloads: nothing to simulate "
                "(without --workloads, inert simulate runs the built-in ones)"
            )
        if chosen is None:
            return [
                Workload(models[m], agents[a])
                for m in (self.tables(doc, "models") or models)
                for a in (self.tables(doc, "agents") or agents)
            ]
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
        for f in ("verify_s", "draft_s", "verify_per_token_s"):
            if f in m:
                fields[f] = self.number(m, where, f, low=0.0)
        if "alpha_decay" in m:
            fields["alpha_decay"] = self.number(m, where, "alpha_decay", low=0.0, high=1.0, low_open=True)
        if "call_accuracy" in m:
            fields["call_accuracy"] = self.number(m, where, "call_accuracy", low=0.0, high=1.0)
        for f in ("adaptive", "whole_calls"):
            if f in m:
                if not isinstance(m[f], bool):
                    raise self.fail(f"{where}.{f}", f"must be true or false, got {self.show(m[f])}")
                fields[f] = m[f]
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
            raise self.fail(f"{where}.rows", f'must be a table of name = "value", got {self.show(rows)}')
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
        prepare = None
        if "prepare" in spec:
            if kind == "read":
                raise self.fail(f"{where}.prepare", "only a write or delete tool has phases; a read runs whole")
            if not isinstance(spec["prepare"], dict):
                raise self.fail(
                    f"{where}.prepare",
                    "must be a table of the prepare's latency, "
                    f"{{ median_s = ..., p99_s = ... }}, got {self.show(spec['prepare'])}",
                )
            prepare = self.latency(
                f"{where}.prepare", spec["prepare"], self.PREPARE_FIELDS, "the prepare's median latency in seconds"
            )
        return SimTool(
            name,
            kind,
            self.latency(where, spec, self.TOOL_FIELDS, "the tool's median latency in seconds"),
            key=key,
            prepare=prepare,
        )

    def latency(self, where: str, spec: dict[str, Any], allowed: tuple[str, ...], what: str) -> Latency:
        """``median_s`` (required) and ``p99_s`` (optional, at least the median) of ``spec``."""
        self.only(spec, where, allowed)
        if "median_s" not in spec:
            raise self.fail(f"{where}.median_s", f"missing ({what})")
        median = self.number(spec, where, "median_s", low=0.0)
        p99 = self.number(spec, where, "p99_s", low=median) if "p99_s" in spec else None
        return Latency(median, p99)

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

    def number(
        self,
        table: dict[str, Any],
        where: str,
        field: str,
        *,
        low: float,
        high: float | None = None,
        low_open: bool = False,
    ) -> float:
        value = table[field]
        bound = (
            (f"between {low:g} (excluded) and {high:g}" if low_open else f"between {low:g} and {high:g}")
            if high is not None
            else f"at least {low:g}"
        )
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(f"{where}.{field}", f"must be a number {bound}, got {self.show(value)}")
        try:
            value = float(value)  # a TOML integer has no size limit: past a float's range, no number here
        except OverflowError:
            raise self.fail(
                f"{where}.{field}", f"must be a number {bound}, got an integer of {len(str(table[field]))} digits"
            ) from None
        if (
            not math.isfinite(value)
            or value < low
            or (low_open and value == low)
            or (high is not None and value > high)
        ):
            raise self.fail(f"{where}.{field}", f"must be a number {bound}, got {table[field]!r}")
        return value

    def whole(self, table: dict[str, Any], where: str, field: str, *, low: int) -> int:
        value = table[field]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"{where}.{field}", f"must be a whole number of at least {low}, got {self.show(value)}")
        if value < low:
            raise self.fail(f"{where}.{field}", f"must be a whole number of at least {low}, got {value}")
        return value

    @staticmethod
    def show(value: Any) -> str:
        kinds = {
            str: "a string",
            bool: "a boolean",
            int: "an integer",
            float: "a number",
            list: "an array",
            dict: "a table",
        }
        text = repr(value)
        if len(text) > 40:
            text = text[:37] + "..."
        return f"{text} ({kinds.get(type(value), type(value).__name__)})"
