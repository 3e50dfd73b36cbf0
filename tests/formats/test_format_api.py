"""The format API: names, one-shot parse, schemas, custom formats, multi-call blocks."""

from __future__ import annotations

from typing import Any

import pytest

import inert
from render import FORMATS
from tools import as_call, as_calls, closed


def test_formats_lists_all_nineteen() -> None:
    assert inert.formats() == FORMATS and len(FORMATS) == 19


def test_unknown_format_lists_every_known_one() -> None:
    with pytest.raises(inert.UnknownFormatError) as info:
        inert.parse("x", "qwen9")
    assert all(name in str(info.value) for name in FORMATS)


QWEN = (
    "<tool_call>\n<function=book>\n<parameter=nights>\n3\n</parameter>\n<parameter=city>\nOslo\n</parameter>\n"
    "</function>\n</tool_call>"
)
OPENAI_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "book",
            "parameters": {"type": "object", "properties": {"nights": {"type": "integer"}, "city": {"type": "string"}}},
        },
    }
]


def test_schemas_type_raw_values() -> None:
    assert as_call(inert.parse(QWEN, "qwen3_coder")[0]).arguments == {"nights": "3", "city": "Oslo"}
    schemas = {"book": OPENAI_TOOLS[0]["function"]["parameters"]}
    assert as_call(inert.parse(QWEN, "qwen3_coder", schemas=schemas)[0]).arguments == {"nights": 3, "city": "Oslo"}


def test_orchestrator_takes_schemas_from_an_openai_tool_list() -> None:
    seen: list[dict[str, Any]] = []
    table = inert.EffectTable.from_openai(OPENAI_TOOLS, {"book": "write"})
    orch = inert.Orchestrator(table, {"book": lambda **kw: seen.append(kw)}, format="qwen3_coder")
    orch.draft([QWEN])
    orch.verify(1)
    orch.finish()
    assert seen == [{"nights": 3, "city": "Oslo"}]


def test_calls_of_one_block_are_accepted_together() -> None:
    ran: list[str] = []
    orch = inert.Orchestrator(
        {"a": "write", "b": "write"}, {"a": lambda: ran.append("a"), "b": lambda: ran.append("b")}, format="jamba"
    )
    text = '<tool_calls>[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]</tool_calls>'
    step = orch.draft([text[:-3], text[-3:]])
    assert [c.index for c in closed(step.outcomes)] == [0, 1]
    orch.verify(1)  # the closer's last token is rejected: both calls are retracted
    assert ran == []
    orch.draft([text[-3:]])
    step = orch.verify(1)
    assert [r.name for r in step.dispatched] == ["a", "b"]
    report = orch.finish()
    assert [r.name for r in report.results] == ["a", "b"]
    assert report.results[0].commit_key != report.results[1].commit_key


def test_structural_formats_dispatch_once_the_next_token_confirms() -> None:
    orch = inert.Orchestrator({"f": "read_only"}, {"f": lambda: "r"}, format="pythonic")
    assert orch.draft(["[f()]"]).dispatched == (), "complete, but not yet confirmed"
    assert [r.name for r in orch.draft(["\n"]).dispatched] == ["f"]
    orch.verify(2)
    assert orch.finish().results[0].early


def test_end_of_turn_confirms_a_structural_block() -> None:
    orch = inert.Orchestrator({"f": "write"}, {"f": lambda: "w"}, format="llama3_json")
    orch.draft(['{"name": "f", "parameters": {}}'])
    orch.verify(1)
    assert [r.name for r in orch.finish().results] == ["f"]


def test_call_ids() -> None:
    kimi = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:3<|tool_call_argument_begin|>{}"
        "<|tool_call_end|><|tool_calls_section_end|>"
    )
    assert as_call(inert.parse(kimi, "kimi_k2")[0]).call_id == "functions.f:3"


KIMI_SPECIAL = {
    163595: "<|tool_calls_section_begin|>",
    163596: "<|tool_calls_section_end|>",
    163597: "<|tool_call_begin|>",
    163598: "<|tool_call_argument_begin|>",
    163599: "<|tool_call_end|>",
}
"""Kimi K2's tool-call delimiters, by the ids its tokenizer gives them."""


def test_special_token_ids_of_other_formats() -> None:
    special = KIMI_SPECIAL
    vocab = {1: "functions.f:0", 2: '{"q": "<|tool_call_end|>"}'}
    s = inert.TokenStream("kimi_k2", vocab=vocab, special_tokens=special)
    outcomes = s.draft([163595, 163597, 1, 163598, 2, 163599, 163596])
    assert [(c.name, c.arguments) for c in closed(outcomes)] == [("f", {"q": "<|tool_call_end|>"})]


CUSTOM = {
    "name": "acme",
    "call_open": ["<<call>>"],
    "call_close": ["<</call>>"],
    "syntax": "json",
    "body": "json_object",
}


def test_custom_format() -> None:
    text = 'Hi <<call>>{"name": "f", "arguments": {"s": "<</call>>"}}<</call>> bye'
    assert [(c.name, c.arguments) for c in as_calls(inert.parse(text, CUSTOM))] == [("f", {"s": "<</call>>"})]
    orch = inert.Orchestrator({}, {"f": lambda s: s}, format=CUSTOM)
    orch.draft([text[:9], text[9:]])
    orch.verify(2)
    assert orch.finish().results[0].result == "<</call>>"
    assert inert.TokenStream(CUSTOM).format == "acme"


def test_custom_format_with_a_separator_body() -> None:
    spec = {"name": "sep", "call_open": ["<c>"], "call_close": ["</c>"], "body": "name_sep_json", "sep": "|"}
    assert as_call(inert.parse('<c>f|{"a": 1}</c>', spec)[0]).arguments == {"a": 1}


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ({"name": "x", "body": "json_object"}, "call_open"),
        ({"name": "x", "call_open": ["<c>"], "body": "yaml"}, "unknown body"),
        ({"name": "x", "call_open": ["<c>"], "body": "json_object", "colour": "red"}, "unknown field `colour`"),
        ({"name": "x", "call_open": [""], "body": "json_object"}, "empty"),
        ({"call_open": ["<c>"], "body": "json_object"}, "missing field `name`"),
    ],
)
def test_bad_custom_formats_say_what_is_wrong(spec: dict[str, Any], words: str) -> None:
    with pytest.raises(inert.FormatSpecError, match=words) as info:
        inert.TokenStream(spec)
    assert isinstance(info.value, ValueError)


def test_custom_delimiters_have_a_length_limit() -> None:
    # A delimiter byte costs about 250 bytes of automaton per stream: a 2 MB delimiter was a
    # 500 MB stream that took 2.5 s to start. At the limits a format is accepted.
    at_limit = {"name": "x", "call_open": ["<" + "a" * 254 + ">"], "call_close": ["</c>"], "body": "json_object"}
    assert inert.TokenStream(at_limit).format == "x"
    long = {**at_limit, "call_open": ["<" + "a" * 255 + ">"]}
    with pytest.raises(inert.FormatSpecError, match=r"is 257 bytes; a delimiter may be at most 256"):
        inert.TokenStream(long)
    many = {**at_limit, "call_open": [f"<{i:03}" + "b" * 250 + ">" for i in range(17)]}
    with pytest.raises(inert.FormatSpecError, match=r"together they may be at most 4096"):
        inert.StreamBatch(many)
    with pytest.raises(inert.FormatSpecError, match=r"at most 256"):
        inert.parse("text", {**at_limit, "call_close": ["x" * 2_000_000]})


def test_an_anchored_formats_arms_have_the_delimiters_length_limit() -> None:
    # An arm is a delimiter of the automata too, and went unchecked: a 20 kB arm took 11 s to build.
    spec = {"name": "x", "call_open": ["<c>"], "call_close": ["</c>"], "body": "json_object"}
    assert inert.TokenStream({**spec, "anchor": {"arm": ["a" * 256], "starts": "{"}}).format == "x"
    with pytest.raises(inert.FormatSpecError, match=r"is 20000 bytes; a delimiter may be at most 256"):
        inert.TokenStream({**spec, "anchor": {"arm": ["a" * 20_000], "starts": "{"}})


def test_format_must_be_a_name_or_a_dict() -> None:
    with pytest.raises(inert.InertTypeError, match="format name or a custom format dict"):
        inert.TokenStream(42)  # type: ignore[arg-type]


THINKING = '<think>maybe <tool_call>{"name": "rm"}</tool_call></think><tool_call>{"name": "ls"}</tool_call>'


def test_reasoning_sections_hold_thoughts_not_calls() -> None:
    assert [c.name for c in as_calls(inert.parse(THINKING))] == ["ls"]
    assert [c.name for c in as_calls(inert.parse(THINKING, reasoning=None))] == ["rm", "ls"]
    # a list for the documented (open, close) tuple, as this test has always passed it
    other = inert.parse(THINKING, reasoning=["<reflect>", "</reflect>"])  # type: ignore[arg-type]
    assert [c.name for c in as_calls(other)] == ["rm", "ls"]
    opened = THINKING.removeprefix("<think>")
    assert [c.name for c in as_calls(inert.parse(opened, in_reasoning=True))] == ["ls"]
    orch = inert.Orchestrator({}, {"rm": lambda: "gone", "ls": lambda: "repos"}, format="hermes")
    orch.draft([THINKING])
    orch.verify(1)
    assert [r.name for r in orch.finish().results] == ["ls"], "the orchestrator's stream has reasoning on"


def test_a_reasoning_closer_that_closed_nothing_is_a_notice() -> None:
    text = 'thinking</think><tool_call>{"name": "ls"}</tool_call>'
    found = inert.parse(text)
    assert isinstance(found[0], inert.ReasoningUnopened) and found[0].kind == "reasoning_unopened"
    assert [type(f).__name__ for f in found] == ["ReasoningUnopened", "Call"]
    s = inert.TokenStream("hermes", "t")
    pieces = ["thinking", "</think>", text.removeprefix("thinking</think>")]
    outcomes = s.draft(pieces)
    assert s.notices() == [], "reported once its tokens are accepted"
    outcomes += s.verify(3)
    assert [type(o).__name__ for o in outcomes] == ["CallClosed", "CallCommitted"], "kept out of the step lists"
    [notice] = s.notices()
    assert notice.span == (1, 2) and repr(notice) == "ReasoningUnopened(span=(1, 2))"
    match notice:
        case inert.ReasoningUnopened(start, end):
            assert (start, end) == (1, 2)
    assert as_call(inert.parse(text, in_reasoning=True)[0]).name == "ls"


def test_a_kimi_section_token_ends_reasoning_its_spelling_does_not() -> None:
    special = KIMI_SPECIAL
    vocab = {1: "<think>I will read it.", 2: "functions.read:0", 3: '{"path": "/a"}'}
    s = inert.TokenStream("kimi_k2", vocab=vocab, special_tokens=special)
    outcomes = s.draft([1, 163595, 163597, 2, 163598, 3, 163599, 163596]) + s.verify(8)
    assert [c.name for c in closed(outcomes)] == ["read"]
    text = "".join([vocab[1], special[163595], special[163597], vocab[2], special[163598], vocab[3], special[163599]])
    assert inert.parse(text, "kimi_k2") == [], "spelled in text it stays a thought"


def test_a_special_closer_makes_its_spelling_inside_a_value_code() -> None:
    special = {151657: "<tool_call>", 151658: "</tool_call>"}
    value = "<function=f>\n<parameter=code>\nprint('</tool_call>')\n</parameter>\n</function>\n</tool_call>\nx"
    vocab = {1: value, 2: "\n</parameter>\n</function>\n"}
    s = inert.TokenStream("qwen3_coder", vocab=vocab, special_tokens=special)
    calls = closed(s.draft([151657, 1, 2, 151658]))
    assert [c.arguments["code"] for c in calls] == ["print('</tool_call>')\n</parameter>\n</function>\n</tool_call>\nx"]


def test_custom_formats_widen_names_and_choose_reasoning() -> None:
    spec = {**CUSTOM, "name_chars": "/", "reasoning": ["<scratch>", "</scratch>"]}
    text = '<scratch><<call>>{"name": "x"}<</call>></scratch><<call>>{"name": "fs/read"}<</call>>'
    assert [c.name for c in as_calls(inert.parse(text, spec))] == ["fs/read"]
    found = inert.parse(text, CUSTOM)
    assert [c.kind if isinstance(c, inert.Malformed) else as_call(c).name for c in found] == ["x", "invalid_name"]
    kimi_like = {
        "name": "k",
        "section_open": ["<s>"],
        "section_close": ["</s>"],
        "call_open": ["<c>"],
        "call_close": ["</c>"],
        "body": "id_sep_json",
        "sep": "|",
        "calls_end_reasoning": True,
    }
    assert as_call(inert.parse('<s><c>functions.f:0|{"a": 1}</c></s>', kimi_like)[0]).call_id == "functions.f:0"
    armed = {"name": "a", "anchor": {"arm": ["CALL:"], "starts": "[", "at_start": False}, "body": "json_objects"}
    assert inert.parse('[{"name": "f"}]', armed) == []
    assert as_call(inert.parse('CALL: [{"name": "f"}]', armed)[0]).name == "f"
    with pytest.raises(inert.FormatSpecError, match="name_chars"):
        inert.TokenStream({**CUSTOM, "name_chars": " "})


def test_a_batch_reads_reasoning_as_its_streams_do() -> None:
    pieces = [
        "</think>",
        "<think>maybe ",
        '<tool_call>{"name": "rm"}</tool_call>',
        "</think>",
        '<tool_call>{"name": "ls"}</tool_call>',
    ]
    batch = inert.StreamBatch("hermes", inert.Vocabulary(pieces))
    batch.add(1, "t")
    out = [batch.draft([1], [list(range(len(pieces)))]), batch.verify([1], [len(pieces)])]
    found = [o for step in out for row in step.values() for o in row]
    assert [o.call.name for o in found if isinstance(o, inert.CallCommitted)] == ["ls"]
    assert not [o for o in found if isinstance(o, inert.ReasoningUnopened)], "batches report calls and blocks"
