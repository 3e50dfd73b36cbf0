"""Effect tables, footprints and the ecosystem loaders."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import inert
from inert import EffectClass, EffectTable, EffectTableError, Footprint, ToolSpec
from tools import block, finish_within


def test_classify_and_default() -> None:
    t = EffectTable({"a": "read_only", "b": EffectClass.IDEMPOTENT, "c": ToolSpec("write")})
    assert [t.classify(n) for n in "abcz"] == [
        EffectClass.READ_ONLY,
        EffectClass.IDEMPOTENT,
        EffectClass.WRITE,
        EffectClass.WRITE,
    ]
    assert "a" in t and "z" not in t


def test_footprints_from_argument_names_and_callables() -> None:
    spec = ToolSpec("write", reads=lambda a: [a["src"]], writes=["dst"])
    assert spec.footprint({"src": "x", "dst": "y"}) == Footprint(frozenset({"x"}), frozenset({"y"}))
    assert ToolSpec("read_only", reads="k", writes="k").footprint({"k": 1}).writes == frozenset()
    missing = ToolSpec("write", reads="k", writes="k").footprint({})
    assert missing == Footprint(None, None), "a key argument the model left out: unknown, never empty"
    assert ToolSpec("write", reads=["k", "j"], writes="k").footprint({"k": 1}).reads is None
    broken = ToolSpec("write", reads=lambda a: a["missing"])
    assert broken.footprint({}).reads is None, "a footprint that cannot be computed is unknown"


def test_conflicts() -> None:
    unknown = Footprint(None, None)
    read_a = Footprint(frozenset({"a"}), frozenset())
    write_a = Footprint(frozenset({"a"}), frozenset({"a"}))
    write_b = Footprint(frozenset({"b"}), frozenset({"b"}))
    assert not read_a.conflicts(read_a)
    assert write_a.conflicts(read_a) and read_a.conflicts(write_a)
    assert not write_a.conflicts(write_b)
    assert unknown.conflicts(unknown) and unknown.conflicts(write_b)
    assert not Footprint(None, frozenset()).conflicts(read_a), "two reads never conflict"


class McpTool:
    def __init__(self, **data: Any) -> None:
        self.data = data

    def model_dump(self, by_alias: bool = False) -> dict[str, Any]:
        return self.data


def test_from_mcp() -> None:
    tools = [
        McpTool(name="search", annotations={"readOnlyHint": True}),
        {"name": "put", "annotations": {"idempotentHint": True}},
        {"name": "rm"},
    ]
    assert EffectTable.from_mcp(tools).classify("search") is EffectClass.WRITE, "hints are untrusted by default"
    t = EffectTable.from_mcp(tools, trusted=True, overrides={"rm": "idempotent"})
    assert [t.classify(n) for n in ("search", "put", "rm")] == [
        EffectClass.READ_ONLY,
        EffectClass.IDEMPOTENT,
        EffectClass.IDEMPOTENT,
    ]


def test_from_openai() -> None:
    tools = [
        {"type": "function", "function": {"name": "get", "parameters": {}}},
        {"type": "function", "function": {"name": "set"}},
    ]
    t = EffectTable.from_openai(tools, {"get": "read_only"})
    assert (t.classify("get"), t.classify("set")) == (EffectClass.READ_ONLY, EffectClass.WRITE)


def test_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "effects.toml"
    path.write_text(
        'default = "idempotent"\n[tools]\nget = "read_only"\n[tools.rm]\neffect = "write"\nwrites = ["path"]\n'
    )
    t = EffectTable.from_toml(path)
    assert (t.classify("get"), t.classify("rm"), t.classify("other")) == (
        EffectClass.READ_ONLY,
        EffectClass.WRITE,
        EffectClass.IDEMPOTENT,
    )
    assert t.spec("rm").footprint({"path": "/x"}).writes == frozenset({"/x"})


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (
            '[tools.search]\neffect = "read_only"\nspeculat = false\n',
            "[tools.search]: unknown key 'speculat'; did you mean 'speculate'?",
        ),
        (
            '[tools.db]\neffect = "write"\nmax_concurency = 1\n',
            "unknown key 'max_concurency'; did you mean 'max_concurrency'?",
        ),
        ('[tool]\nsearch = "read_only"\n', "unknown key 'tool'; did you mean 'tools'?"),
        ('defaults = "read_only"\n', "unknown key 'defaults'; did you mean 'default'?"),
    ],
    ids=["tool-key", "limit", "tools-table", "default"],
)
def test_from_toml_refuses_a_misspelled_key(tmp_path: Path, text: str, named: str) -> None:
    """A misspelled safety setting was skipped without a word: the read kept speculating,
    the tool kept no limit, or every tool became a write."""
    path = tmp_path / "effects.toml"
    path.write_text(text)
    with pytest.raises(EffectTableError, match=re.escape(named)):
        EffectTable.from_toml(path)


def test_from_mcp_untrusted_hints_never_weaken_safety() -> None:
    tools = [
        {"name": "put", "annotations": {"idempotentHint": True}},
        {"name": "get", "annotations": {"readOnlyHint": True, "openWorldHint": False}},
        McpTool(name="sync", annotations={"idempotentHint": True, "destructiveHint": False}),
    ]
    t = EffectTable.from_mcp(tools)
    assert [t.classify(n) for n in ("put", "get", "sync")] == [EffectClass.WRITE] * 3, (
        "an untrusted server cannot make a write re-runnable after a crash"
    )
    t = EffectTable.from_mcp(tools, overrides={"put": "idempotent", "get": "read_only"})
    assert (t.classify("put"), t.classify("get"), t.classify("sync")) == (
        EffectClass.IDEMPOTENT,
        EffectClass.READ_ONLY,
        EffectClass.WRITE,
    ), "only the caller says otherwise"


def test_from_mcp_contradictory_hints_resolve_to_the_safer_class() -> None:
    tools = [
        {"name": "wipe", "annotations": {"readOnlyHint": True, "destructiveHint": True}},
        {
            "name": "wipe_again",
            "annotations": {
                "readOnlyHint": True,
                "destructiveHint": True,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        },
        {"name": "look", "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}},
        {"name": "rm", "annotations": {"destructiveHint": True, "idempotentHint": True}},
    ]
    t = EffectTable.from_mcp(tools, trusted=True)
    assert [t.classify(n) for n in ("wipe", "wipe_again", "look", "rm")] == [
        EffectClass.WRITE,
        EffectClass.WRITE,
        EffectClass.READ_ONLY,
        EffectClass.IDEMPOTENT,
    ]
    assert not t.spec("wipe").speculate and t.spec("look").speculate


def test_from_mcp_keeps_input_schemas_to_type_xml_arguments() -> None:
    import inert

    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "tags": {"type": "array"}}}
    tools = [McpTool(name="count", inputSchema=schema), {"name": "bare"}]
    t = EffectTable.from_mcp(tools)
    assert t.schemas == {"count": schema}
    seen: list[Any] = []
    orch = inert.Orchestrator(t, {"count": lambda **a: seen.append(a)}, format="qwen3_coder", turn_key="mcp-schema")
    orch.draft(
        [
            "<tool_call>\n<function=count>\n<parameter=n>\n3\n</parameter>\n"
            '<parameter=tags>\n["a"]\n</parameter>\n</function>\n</tool_call>'
        ]
    )
    orch.verify(1)
    orch.finish()
    assert seen == [{"n": 3, "tags": ["a"]}], "the schema types raw XML values"


def test_a_table_built_from_another_copies_its_entries() -> None:
    """EffectTable(table) worked by duck typing (it has items()); the mapping check keeps it."""
    table = EffectTable({"get": "read_only", "put": ToolSpec("write", writes="key")})
    copy = EffectTable(table)
    assert copy.items() == table.items() and copy.classify("get") is EffectClass.READ_ONLY


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), -1.0, 0, 10**400, -(10**400)])
def test_a_tool_spec_refuses_a_timeout_that_is_not_a_positive_finite_number(timeout: float) -> None:
    """Found by a helper: NaN timed every call out at once ("within nan s"), and inf killed
    the timer thread, so no later deadline fired; ``Orchestrator(timeout=)`` refused both."""
    with pytest.raises(inert.EffectTableError, match="positive, finite"):
        ToolSpec("write", timeout=timeout)


def test_an_integer_timeout_past_a_floats_range_is_refused_by_name(tmp_path: Path) -> None:
    """Found by a helper: a TOML integer has no size limit, and one of 400 digits raised
    OverflowError from float() instead of the table's own error."""
    path = tmp_path / "effects.toml"
    path.write_text(f'[tools.get]\neffect = "read_only"\ntimeout = {"9" * 400}\n')
    with pytest.raises(
        inert.EffectTableError,
        match="timeout must be a positive, finite number of seconds, not an integer of 400 digits",
    ):
        EffectTable.from_toml(path)


class _Boom(BaseException):
    """Neither an Exception nor one asyncio or Python treat specially."""


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit, _Boom])
def test_a_footprint_function_raising_a_base_exception_is_an_unknown_footprint(exc: type[BaseException]) -> None:
    """Found by a helper: a footprint function's BaseException escaped draft() halfway through
    the step (the stream had moved on, the gate had not), and finish() then raised KeyError."""

    def footprint(arguments: Mapping[str, Any]) -> list[str]:
        raise exc("from the footprint")

    ran: list[str] = []
    spec = ToolSpec("write", reads=footprint, writes=footprint)
    tools = {"w": lambda: ran.append("w"), "ok": lambda: ran.append("ok")}
    orch = inert.Orchestrator({"w": spec, "ok": "write"}, tools)
    assert orch.effects.spec("w").footprint({}) == Footprint(reads=None, writes=None), "unknown: overlaps everything"
    orch.draft([block("w"), block("ok")])
    orch.verify(2)
    report = finish_within(orch)
    assert [r.name for r in report.results] == ["w", "ok"] and [r.error for r in report.results] == [None, None]
    assert ran == ["w", "ok"], "stream order: an unknown footprint overlaps the call after it"
