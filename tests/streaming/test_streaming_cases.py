"""Streaming output, case by case: delimiters split across tokens or bound to special
token ids, UTF-8 characters cut by tokens, anchored formats, reasoning, calls that
turn out malformed after their deltas went out, and what finish() releases."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import inert
from inert import Released
from streams import steps


def content(rs: list[Released]) -> list[str]:
    return [r[0] for r in rs]


def test_a_delimiter_split_across_tokens_never_goes_out_as_content() -> None:
    rs = steps("hermes", ["Hi ", "<", "tool", "_call>", '{"name": "f", "arguments": {}}', "</tool_call>", " bye"])
    assert content(rs) == ["Hi ", "", "", "", "", "", " bye", ""]
    assert "".join(content(rs)) == "Hi  bye"


def test_text_that_only_looked_like_a_delimiter_goes_out_once_it_cannot_be_one() -> None:
    assert content(steps("hermes", ["a <", "tool", "box"])) == ["a ", "", "<toolbox", ""]
    assert content(steps("hermes", ["x <tool"])) == ["x ", "<tool"], "held to the end, where finish releases it"


def test_json_arguments_stream_before_the_block_closes() -> None:
    rs = steps("hermes", ['<tool_call>{"name": "get", ', '"arguments": {"city": "Pa', 'ris"}}', "</tool_call>"])
    first, second, third, closing, _ = (r[2] for r in rs)
    assert first == [
        {"index": 0, "id": first[0]["id"], "type": "function", "function": {"name": "get", "arguments": ""}}
    ]
    assert first[0]["id"].startswith("call_")
    assert second == [{"index": 0, "function": {"arguments": '{"city": "Pa'}}]
    assert third == [{"index": 0, "function": {"arguments": 'ris"}'}}]
    assert closing == []
    assert json.loads(second[0]["function"]["arguments"] + third[0]["function"]["arguments"]) == {"city": "Paris"}


def test_arguments_written_before_the_name_wait_for_it() -> None:
    rs = steps("hermes", ['<tool_call>{"arguments": {"a": 1}', ', "name": "f"}</tool_call>'])
    assert rs[0][2] == []
    deltas = rs[1][2]
    assert deltas[0]["function"]["name"] == "f"
    assert deltas[1] == {"index": 0, "function": {"arguments": '{"a": 1}'}}


def test_string_encoded_arguments_stream_as_the_text_they_hold() -> None:
    """Granite 4 and others write the object as a string: what goes out is the object text
    it holds, decoded as accepted (an escape or a character cut by tokens waits whole, and
    blanks at the end wait: the parser trims them)."""
    rs = steps(
        "hermes",
        [
            '<tool_call>{"name": "f", "arguments": " {\\"a\\": \\',
            '"x\\u00',
            'e9 y\\", \\n',
            ' \\"b\\": \\"z\\ud83d',
            '\\ude00\\"} "}',
            "</tool_call>",
        ],
    )
    fragments = [[d["function"]["arguments"] for d in r[2]] for r in rs]
    assert fragments == [["", '{"a":'], [' "x'], ['é y",'], [' \n "b": "z'], ['😀"}'], [], []]
    assert json.loads("".join(f for r in fragments for f in r)) == {"a": "xé y", "b": "z😀"}


def test_string_encoded_arguments_that_are_no_json_string_mark_the_call() -> None:
    rs = steps("hermes", ['<tool_call>{"name": "f", "arguments": "{\\"a\\": 1\\q}"}', "</tool_call>"])
    deltas = [d for r in rs for d in r[2]]
    assert "".join(d["function"]["arguments"] for d in deltas if "function" in d) == '{"a": 1'
    assert deltas[-1]["inert"]["malformed"] == "invalid_json"


def test_special_token_delimiters_are_never_content() -> None:
    vocab = inert.Vocabulary(
        {0: "Hi ", 1: '{"name": "f", "arguments": {}}', 2: " bye", 3: "</"},
        special_tokens={7: "<tool_call>", 8: "</tool_call>"},
    )
    rs = steps("hermes", [0, 7, 1, 8, 8, 2], vocab=vocab)
    assert "".join(content(rs)) == "Hi  bye", "a stray closer sent as its special token is hidden too"
    assert [d["function"]["name"] for r in rs for d in r[2] if "name" in d["function"]] == ["f"]


def test_a_utf8_character_cut_by_tokens_goes_out_whole() -> None:
    snow = "☃".encode()
    rs = steps("hermes", [b"a" + snow[:1], snow[1:2], snow[2:] + b"b"])
    assert content(rs) == ["a", "", "☃b", ""]


def test_utf8_cut_inside_streamed_arguments_goes_out_whole() -> None:
    e = "é".encode()
    rs = steps("hermes", [b'<tool_call>{"name": "f", "arguments": {"a": "' + e[:1], e[1:] + b'"}}</tool_call>'])
    fragments = [d["function"]["arguments"] for r in rs for d in r[2]]
    assert "".join(fragments) == '{"a": "é"}' and all("\ufffd" not in f for f in fragments)


def test_anchored_formats_hold_blanks_that_a_call_may_still_claim() -> None:
    rs = steps("llama3_json", ["\n", " ", '{"name": "f", "parameters": {"x": 1}}'])
    assert "".join(content(rs)) == ""
    assert [d["function"]["name"] for d in rs[2][2] if "name" in d["function"]] == ["f"]
    rs = steps("llama3_json", ["\n", " ", "Hello"])
    assert content(rs) == ["", "", "\n Hello", ""]
    rs = steps("pythonic", ["[get(a=1)]", " done"])
    assert "".join(content(rs)) == " done"


def test_reasoning_streams_apart_from_content() -> None:
    rs = steps("hermes", ["<think>", "let me ", "see</th", "ink>", "Answer"])
    assert "".join(r[1] for r in rs) == "let me see"
    assert "".join(content(rs)) == "Answer"
    rs = steps("hermes", ["thinking", "</think>", "Answer"], in_reasoning=True)
    assert ("".join(r[1] for r in rs), "".join(content(rs))) == ("thinking", "Answer")


def test_a_call_inside_reasoning_is_reasoning_text() -> None:
    rs = steps("hermes", ['<think>maybe <tool_call>{"name": "f", "arguments": {}}</tool_call></think>ok'])
    assert rs[0][1].startswith("maybe <tool_call>")
    assert all(r[2] == [] for r in rs)


def test_a_block_that_turns_out_malformed_after_its_deltas_is_marked() -> None:
    orch = inert.Orchestrator({}, {"f": lambda **_: "ok"}, format="hermes", turn_key="t", stream=True)
    orch.draft(['<tool_call>{"name": "f", "arguments": {"a": 1}}'])
    step = orch.verify(1)
    assert [d["function"] for d in step.tool_call_deltas] == [{"name": "f", "arguments": ""}, {"arguments": '{"a": 1}'}]
    orch.draft([" trailing junk</tool_call>"])
    step = orch.verify(1)
    assert list(step.tool_call_deltas) == [
        {"index": 0, "function": {"arguments": ""}, "inert": {"malformed": "invalid_json"}}
    ]
    report = orch.finish()
    assert report.results == [] and [m.tool_call_index for m in report.malformed] == [0]


def test_a_block_reported_whole_lists_every_call_that_streamed_from_it() -> None:
    """Two calls of one pythonic block stream, then the block outgrows its limit: both are
    marked, and the one malformed entry lists both (it named only the first)."""
    orch = inert.Orchestrator(
        {},
        {"f": lambda **_: "ok", "g": lambda **_: "ok"},
        format="pythonic",
        turn_key="t",
        stream=True,
        max_block_bytes=8,
    )
    marks = []
    for piece in "[f(), g()]":
        orch.draft([piece])
        marks += [(d["index"], d["inert"]) for d in orch.verify(1).tool_call_deltas if "inert" in d]
    report = orch.finish()
    assert marks == [(0, {"malformed": "too_large"}), (1, {"malformed": "too_large"})]
    assert [(m.kind, m.tool_call_indices, m.tool_call_index) for m in report.malformed] == [("too_large", [0, 1], 0)]


@pytest.mark.parametrize(
    ("fmt", "text", "committed"),
    [
        (
            "minimax",
            '<tool_calls>x\n{"name": "f", "arguments": {"a": "v"}}\n{"name": "g", "arguments": {}}\n'
            '{"name": "h", "arguments": {}}\n</tool_calls>',
            ["f", "g", "h"],
        ),
        (
            "xlam",
            '[{}{"name": "f", "arguments": {}}, {"name": "g", "arguments": {}}, {"name": "h", "arguments": {}}]',
            ["g", "h"],
        ),
        ("jamba", '<tool_calls>[{}{"name": "f", "arguments": {}}, {"name": "g", "arguments": {}}]</tool_calls>', ["g"]),
        ("mistral", '[TOOL_CALLS][{}{"name": "f", "arguments": {}}, {"name": "g", "arguments": {}}]', ["g"]),
    ],
    ids=["minimax-stray-line", "xlam-merged-element", "jamba-merged-element", "mistral-array-merged-element"],
)
def test_text_the_parse_counts_as_an_item_keeps_each_call_tied_to_its_own(
    fmt: str, text: str, committed: list[str]
) -> None:
    """The parse counts a stray line, or an array element holding two objects, as one item;
    the stream numbered only call objects, so the calls after it were tied to the items
    before them: a call that ran was marked dropped (``diverged``) and never sent again,
    and a malformed entry listed a committed call."""
    orch = inert.Orchestrator({}, {n: (lambda **_: "ok") for n in "fgh"}, format=fmt, turn_key="t", stream=True)
    deltas = []
    for piece in [text[: len(text) // 2], text[len(text) // 2 :]]:
        orch.draft([piece])
        deltas += orch.verify(1).tool_call_deltas
    report = orch.finish()
    deltas += report.tail.tool_call_deltas if report.tail is not None else []
    names = {d["index"]: d["function"]["name"] for d in deltas if "id" in d}
    marked = {d["index"] for d in deltas if "inert" in d}
    assert [r.name for r in report.results] == committed
    assert [names[i] for i in sorted(names) if i not in marked] == committed, deltas
    assert {i for m in report.malformed for i in m.tool_call_indices} == marked


def test_a_block_cut_by_the_end_of_the_turn_is_marked_in_the_tail() -> None:
    orch = inert.Orchestrator({}, {"f": lambda **_: "ok"}, format="hermes", turn_key="t", stream=True)
    orch.draft(['ok <tool_call>{"name": "f", "arguments": {"a": '])
    step = orch.verify(1)
    assert step.content == "ok " and step.tool_call_deltas[0]["function"]["name"] == "f"
    report = orch.finish()
    assert report.tail is not None
    assert [d.get("inert") for d in report.tail.tool_call_deltas] == [{"malformed": "unterminated"}]
    assert report.malformed[0].tool_call_index == 0


def test_finish_releases_the_held_tail() -> None:
    orch = inert.Orchestrator({}, {}, format="hermes", turn_key="t", stream=True)
    step = orch.draft(["Done <tool"])
    assert step.content == ""
    assert orch.verify(1).content == "Done "
    report = orch.finish()
    assert report.tail is not None and report.tail.content == "<tool"


def test_harmony_framing_is_never_content() -> None:
    text = (
        "<|channel|>analysis<|message|>Need weather.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.get <|constrain|>json<|message|>"
        '{"city": "Paris"}<|call|>'
        "<|start|>assistant<|channel|>final<|message|>It rains.<|return|>"
    )
    for pieces in ([text], [text[i : i + 3] for i in range(0, len(text), 3)]):
        rs = steps("openai", pieces)
        assert ("".join(r[1] for r in rs), "".join(content(rs))) == ("Need weather.", "It rains.")
        args = "".join(d["function"]["arguments"] for r in rs for d in r[2])
        assert json.loads(args) == {"city": "Paris"}


def test_model_ids_are_kept_where_the_format_has_them() -> None:
    text = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get:0<|tool_call_argument_begin|>"
        '{"a": 1}<|tool_call_end|><|tool_calls_section_end|>'
    )
    deltas = [d for r in steps("kimi_k2", [text]) for d in r[2]]
    assert deltas[0]["id"] == "functions.get:0" and deltas[0]["function"]["name"] == "get"


def test_xml_formats_render_json_arguments() -> None:
    text = "<tool_call>\n<function=get>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n"
    rs = steps(
        "qwen3_coder",
        [text, "</function>\n</tool_call>"],
        schemas={"get": {"properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}},
    )
    args = "".join(d["function"]["arguments"] for r in rs for d in r[2])
    assert json.loads(args) == {"city": "Paris", "days": 3}


def test_ids_are_unique_and_stable_per_turn_key() -> None:
    text = '<tool_call>{"name": "f", "arguments": {}}</tool_call><tool_call>{"name": "g", "arguments": {}}</tool_call>'
    ids = [d["id"] for r in steps("hermes", [text]) for d in r[2] if "id" in d]
    assert len(set(ids)) == 2
    assert ids == [d["id"] for r in steps("hermes", [text]) for d in r[2] if "id" in d]


def test_without_stream_steps_release_nothing() -> None:
    orch = inert.Orchestrator({}, {}, format="hermes", turn_key="t")
    orch.draft(["Hello"])
    assert orch.verify(1).content == ""
    s = inert.TokenStream("hermes")
    s.draft(["Hello"])
    s.verify(1)
    assert s.take_released() == ("", "", []) and not s.has_released


def test_batches_stream_each_sequence() -> None:
    vocab = inert.Vocabulary(
        {0: "Hi ", 1: "<tool_call>", 2: '{"name": "f", "arguments": {"a": 1}}', 3: "</tool_call>", 4: " bye"}
    )
    batch = inert.BatchOrchestrator({}, {"f": lambda **_: "ok"}, format="hermes", vocab=vocab, stream=True)
    batch.add(1, "t1")
    batch.add(2, "t2")
    seen: dict[int, list[inert.Step]] = {1: [], 2: []}
    for col in range(5):
        ids = np.array([[col], [4 - col]])
        batch.draft([1, 2], ids)
        for seq, step in batch.verify([1, 2], [1, 1]).items():
            seen[seq].append(step)
    reports = {seq: batch.finish(seq) for seq in (1, 2)}
    batch.close()
    assert "".join(s.content for s in seen[1]) == "Hi  bye"
    assert [d["function"]["arguments"] for s in seen[1] for d in s.tool_call_deltas] == ["", '{"a": 1}']
    # Backwards: a stray closer (bound by id: the vocabulary spells it exactly) is hidden, the
    # object is prose, and the block the last tokens open is cut by the end of the turn.
    assert "".join(s.content for s in seen[2]) == ' bye{"name": "f", "arguments": {"a": 1}}'
    assert reports[2].tail is not None and reports[2].tail.content == ""
    assert [m.kind for m in reports[2].malformed] == ["unterminated"]


def test_a_batch_verify_of_a_generator_of_seqs_streams_what_it_released() -> None:
    """The core used the generator of seqs up, and what the verify released was then taken
    for no sequence: the step's content was lost to the caller."""
    batch = inert.BatchOrchestrator({}, {}, format="hermes", vocab=inert.Vocabulary(["Hi", " there"]), stream=True)
    batch.add(1, "t1")
    batch.draft(iter([1]), np.array([[0, 1]]))  # type: ignore[arg-type]  # an iterator: untyped, taken at run time
    steps = batch.verify((s for s in [1]), [2])  # type: ignore[arg-type]  # an iterator: untyped, taken at run time
    assert steps[1].content == "Hi there"
    batch.finish(1)
    batch.close()


def test_names_and_arguments_go_out_before_the_block_ends_in_every_format() -> None:
    """A call's first delta leaves once its head is accepted; its arguments follow as
    accepted: JSON text as written, XML parameters as the JSON they render to, and
    Python keyword arguments each once its value ends."""
    from render import render

    for fmt in inert.formats():
        text = render(fmt, [("get", {"city": "Paris", "n": 2})]).encode()
        cut = text.index(b"Paris") + 2  # the value has begun, the block has not ended
        s = inert.TokenStream(fmt, "t", stream=True)
        s.draft([text[:cut]])
        s.verify(1)
        deltas = s.take_released()[2]
        assert deltas and deltas[0]["function"]["name"] == "get", fmt
        sent = "".join(d["function"]["arguments"] for d in deltas)
        if fmt == "pythonic":
            assert sent == "", fmt
            s.draft([text[cut : text.index(b"n=")]])
            s.verify(1)
            sent = "".join(d["function"]["arguments"] for d in s.take_released()[2])
            assert sent == '{"city":"Paris"', sent
            continue
        assert '"Pa' in sent, (fmt, sent)


def test_async_orchestrator_steps_stream() -> None:
    import asyncio

    async def run() -> tuple[str, list[dict[str, Any]], inert.Report]:
        orch = inert.AsyncOrchestrator(
            {"f": "read_only"}, {"f": lambda a: a}, format="hermes", turn_key="t", stream=True
        )
        text, deltas = "", []
        for piece in ["Hi ", '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>', " bye"]:
            await orch.draft([piece])
            step = await orch.verify(1)
            text += step.content
            deltas += step.tool_call_deltas
        return text, deltas, await orch.finish()

    text, deltas, report = asyncio.run(run())
    assert text == "Hi  bye" and json.loads("".join(d["function"]["arguments"] for d in deltas)) == {"a": 1}
    assert [r.result for r in report.results] == [1]


def test_orchestrator_trees_stream_the_accepted_path_only() -> None:
    orch = inert.Orchestrator({}, {}, format="hermes", turn_key="t", stream=True)
    step = orch.draft_tree(["Good ", "Bad ", "day"], [-1, -1, 0])
    assert (step.content, step.tool_call_deltas) == ("", [])
    assert orch.verify_path([0, 2]).content == "Good day"
    assert orch.finish().tail == inert.Step(())


def test_a_block_past_max_block_bytes_is_marked_and_sends_nothing_after() -> None:
    text = '<tool_call>{"name": "f", "arguments": {"a": "' + "x" * 60 + '"}}</tool_call> ok'
    rs = steps("hermes", [text[i : i + 5] for i in range(0, len(text), 5)], max_block_bytes=40)
    deltas = [d for r in rs for d in r[2]]
    marks = [i for i, d in enumerate(deltas) if "inert" in d]
    assert [deltas[i]["inert"] for i in marks] == [{"malformed": "too_large"}] and marks[0] == len(deltas) - 1
    assert "".join(content(rs)) == " ok"


def test_mistral_call_arrays_stream_like_call_objects() -> None:
    text = '[TOOL_CALLS][{"name": "get", "arguments": {"city": "Paris"}}, {"name": "put", "arguments": {}}]'
    cut = text.index("Paris") + 2
    rs = steps("mistral", [text[:cut], text[cut:]])
    assert [d["function"].get("name") for d in rs[0][2]] == ["get", None]
    assert rs[0][2][1]["function"]["arguments"] == '{"city": "Pa'
    args: dict[int, str] = {}
    for d in (d for r in rs for d in r[2]):
        args[d["index"]] = args.get(d["index"], "") + d["function"]["arguments"]
    assert [json.loads(a) for a in args.values()] == [{"city": "Paris"}, {}]


def test_stream_must_be_a_bool() -> None:
    with pytest.raises(inert.InertTypeError, match="stream"):
        inert.TokenStream("hermes", stream=1)  # type: ignore[arg-type]
    with pytest.raises(inert.InertTypeError, match="stream"):
        inert.StreamBatch("hermes", stream="yes")  # type: ignore[arg-type]
