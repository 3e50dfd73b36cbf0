"""Vectors of what real models write (issue 10), built from the layouts in
tests/render.py: reasoning sections, closers cut by the end of the turn,
broken siblings, names, arguments as JSON strings, literal tags in raw-text
XML values, typing by schema, and the layouts of Phi-4-mini, Olmo 3 and
Intern-S1. Written by generate.py to tests/vectors/real/<format>.jsonl.

The cases learn from vLLM's and SGLang's parser tests (see the research notes
quoted in docs/formats.md); each expectation follows from how its output is
built here, never from inert's parser.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from render import ANCHORED, CLOSER, THINK, XML_FORMATS, param, reasoning, render, xml_call

SECTIONED = {"deepseek_v3", "deepseek_v31", "deepseek_v32", "kimi_k2", "minimax_m2"}

Call = tuple[str, dict[str, Any]]
WEATHER: Call = ("get_weather", {"city": "Paris"})
TIME: Call = ("get_time", {"zone": "PST"})
DELETE: Call = ("delete_repo", {"repo": "prod"})
LIST: Call = ("list_repos", {})


def C(call: Call, call_id: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": call[0], "arguments": call[1]}
    if call_id is not None:
        out["call_id"] = call_id
    return out


def M(kind: str) -> dict[str, Any]:
    return {"malformed": kind}


def row(case: str, fmt: str, output: str, expect: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"case": case, "format": fmt, "output": output, "expect": expect, **extra}


def calls(fmt: str, *cs: Call) -> list[dict[str, Any]]:
    """The expected calls of ``render(fmt, cs)``: Kimi's carry the ids render() writes."""
    if fmt == "kimi_k2":
        return [C(c, f"functions.{c[0]}:{i}") for i, c in enumerate(cs)]
    return [C(c) for c in cs]


# -- 7. reasoning: a call inside it is a thought ------------------------------------------------


def reasoning_cases(fmt: str) -> list[dict[str, Any]]:
    sep = "\n" if fmt in ANCHORED else "\nLet me list them.\n"
    out = []
    pair = reasoning(fmt)
    if pair is not None:
        o, c = pair
        out += [
            row(
                "thought_then_call",
                fmt,
                f"{o}I could run {render(fmt, [DELETE])} but no.{c}{sep}{render(fmt, [LIST])}",
                calls(fmt, LIST),
            ),
            row(
                "prompt_opened_reasoning",
                fmt,
                f"Thinking: {render(fmt, [DELETE])} is too risky.{c}{sep}{render(fmt, [LIST])}",
                calls(fmt, LIST),
                in_reasoning=True,
            ),
            # Harmony's <|end|> ends every message: it says nothing of reasoning opened in the prompt.
            row(
                "reasoning_closer_without_open",
                fmt,
                f"Thinking about it.{c}{sep}{render(fmt, [LIST])}",
                calls(fmt, LIST),
                unopened=0 if fmt == "openai" else 1,
            ),
            row("unclosed_reasoning_holds_no_call", fmt, f"{o}Let me {render(fmt, [DELETE])}", []),
        ]
    o, c = pair or THINK
    # Reasoning off: the thought is text, so a call there counts unless the format needs the message start.
    off = [] if fmt in ("pythonic", "xlam") else calls(fmt, DELETE)
    out.append(row("reasoning_off", fmt, f"{o}x {render(fmt, [DELETE])}{c}", off, reasoning=None))
    return out


SPECIAL_REASONING: dict[str, list[dict[str, Any]]] = {
    "openai": [
        row(
            "analysis_channel_with_recipient_is_a_call",
            "openai",
            '<|channel|>analysis<|message|>Need grep.<|end|><|start|>assistant<|channel|>analysis to=functions.get_weather code<|message|>{"city": "Paris"}<|call|>',
            [C(WEATHER)],
        ),
        row(
            "analysis_text_mentions_a_call",
            "openai",
            '<|channel|>analysis<|message|>Maybe to=functions.delete_repo {"repo": "prod"}? No.<|end|><|start|>assistant<|channel|>final<|message|>Which repository?<|return|>',
            [],
        ),
    ],
    "granite": [
        row(
            "thought_process_prose_is_not_reasoning",
            "granite",
            "Here is my thought process: I need the weather. Here is my response: " + render("granite", [WEATHER]),
            [C(WEATHER)],
        ),
    ],
    "mistral": [
        row(
            "custom_think_pair",
            "mistral",
            "<think>[TOOL_CALLS]delete_repo[ARGS]{}</think>" + render("mistral", [LIST]),
            [C(LIST)],
            reasoning=["<think>", "</think>"],
        ),
    ],
}


# -- 8. the end of the turn ----------------------------------------------------------------------


def end_of_turn_cases(fmt: str) -> list[dict[str, Any]]:
    full = render(fmt, [WEATHER, TIME])
    cut = full[: full.rindex("PST") + 2]
    out = [row("cut_inside_last_call", fmt, cut, [*calls(fmt, WEATHER), M("unterminated")])]
    if fmt in CLOSER:
        assert full.endswith(CLOSER[fmt]), fmt
        out.append(row("closer_cut_by_eos", fmt, full.removesuffix(CLOSER[fmt]), calls(fmt, WEATHER, TIME)))
    return out


# -- 4. broken siblings are reported, valid ones kept -----------------------------------------------

BAD_OBJECTS = [
    ("arguments_not_object", '{"name": "b", "arguments": 7}'),
    ("missing_name", '{"arguments": {}}'),
    ("non_finite", '{"name": "b", "arguments": {"x": 1e999}}'),
    ("invalid_name", '{"name": "get weather", "arguments": {}}'),
    ("invalid_json", '{"name": "b", "arguments": {"x": }}'),
]
LIST_WRAP = {
    "granite": ("<|tool_call|>[", "]"),
    "jamba": ("<tool_calls>[", "]</tool_calls>"),
    "xlam": ("[", "]"),
    "phi4_mini_json": ("<|tool_call|>[", "]<|/tool_call|>"),
    "mistral": ("[TOOL_CALLS][", "]"),
}
BAD_PYTHON = [
    ("non_finite", "calc(x=1e999)"),
    ("invalid_literal", "bad(x=b'z')"),
    ("positional", "f(1)"),
    ("duplicate_argument", "f(a=1, a=2)"),
    ("invalid_name", "fé(a=1)"),
]


def obj(c: Call) -> str:
    return json.dumps({"name": c[0], "arguments": c[1]})


def py(c: Call) -> str:
    return f"{c[0]}(" + ", ".join(f"{k}={v!r}" for k, v in c[1].items()) + ")"


def sibling_cases(fmt: str) -> list[dict[str, Any]]:
    good = [C(WEATHER), C(TIME)]
    out = []
    if fmt in LIST_WRAP:
        o, c = LIST_WRAP[fmt]
        for kind, bad in BAD_OBJECTS:
            out.append(
                row(
                    f"broken_sibling_{kind}",
                    fmt,
                    f"{o}{obj(WEATHER)}, {bad}, {obj(TIME)}{c}",
                    [good[0], M(kind), good[1]],
                )
            )
        out.append(
            row(
                "broken_sibling_not_an_object",
                fmt,
                f"{o}{obj(WEATHER)}, 3, {obj(TIME)}{c}",
                [good[0], M("invalid_json"), good[1]],
            )
        )
    if fmt == "minimax":
        for kind, bad in [*BAD_OBJECTS, ("invalid_json", "{invalid json here}"), ("invalid_json", "not json at all")]:
            text = f"<tool_calls>\n{obj(WEATHER)}\n{bad}\n{obj(TIME)}\n</tool_calls>"
            out.append(row(f"broken_line_{kind}_{len(out)}", fmt, text, [good[0], M(kind), good[1]]))
    if fmt == "pythonic":
        for kind, bad in BAD_PYTHON:
            want = "invalid_literal" if kind == "positional" else kind
            out.append(
                row(f"broken_sibling_{kind}", fmt, f"[{py(WEATHER)}, {bad}, {py(TIME)}]", [good[0], M(want), good[1]])
            )
            out.append(
                row(
                    f"olmo3_broken_line_{kind}",
                    fmt,
                    f"<function_calls>{py(WEATHER)}\n{bad}\n{py(TIME)}</function_calls>",
                    [good[0], M(want), good[1]],
                )
            )
    return out


# -- 3. names -----------------------------------------------------------------------------------------

BAD_NAMES = {"space": "get weather", "template": "{{ tc.name }}", "bracket": "junk ["}
GOOD_NAMES = ["mcp__portal__search-documents", "github.create_issue", "fs:read"]


def name_cases(fmt: str) -> list[dict[str, Any]]:
    if fmt == "pythonic":  # a Python identifier cannot hold these; see broken_sibling_invalid_name
        return []
    out = []
    for slug, bad in BAD_NAMES.items():
        if fmt == "openai" and " " in bad:
            continue  # a Harmony recipient ends at whitespace: the rest is the content type
        if fmt == "mistral" and slug == "template":
            continue  # `{{` after [TOOL_CALLS] reads as an argument object: a block with no name
        text = render(fmt, [(bad, {"city": "Paris"}), TIME])
        expect = [M("invalid_name"), *calls(fmt, TIME)]
        if fmt == "kimi_k2":
            expect = [M("invalid_name"), C(TIME, "functions.get_time:1")]
        out.append(row(f"name_{slug}", fmt, text, expect))
    good: list[Call] = [(n, {}) for n in GOOD_NAMES]
    out.append(row("names_with_dash_dot_colon", fmt, render(fmt, good), calls(fmt, *good)))
    return out


def kimi_id(head: str, args: str = '{"city": "Paris"}') -> str:
    return f"<|tool_call_begin|>{head}<|tool_call_argument_begin|>{args}<|tool_call_end|>"


def kimi_section(*blocks: str) -> str:
    return "<|tool_calls_section_begin|>" + "".join(blocks) + "<|tool_calls_section_end|>"


SPECIAL_NAMES: dict[str, list[dict[str, Any]]] = {
    "kimi_k2": [
        row(
            "id_without_functions_prefix",
            "kimi_k2",
            kimi_section(kimi_id("get_weather:0")),
            [C(WEATHER, "get_weather:0")],
        ),
        row("bare_counter_id", "kimi_k2", kimi_section(kimi_id("0")), [M("invalid_id")]),
        row(
            "client_style_id_keeps_sibling",
            "kimi_k2",
            kimi_section(kimi_id("call_3"), kimi_id("functions.get_time:1", '{"zone": "PST"}')),
            [M("invalid_id"), C(TIME, "functions.get_time:1")],
        ),
        row("id_without_index", "kimi_k2", kimi_section(kimi_id("functions.get_weather")), [M("invalid_id")]),
        row(
            "id_with_space_before_argument_begin",
            "kimi_k2",
            kimi_section(kimi_id("functions.get_weather:0 ")),
            [C(WEATHER, "functions.get_weather:0")],
        ),
    ],
    "mistral": [
        row(
            "junk_between_marker_and_array",
            "mistral",
            '[TOOL_CALLS]  junk [{"name": "add", "arguments": {"a": 1}}] trail',
            [M("invalid_name")],
        ),
        row(
            "call_id",
            "mistral",
            '[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Paris"}',
            [C(WEATHER, "a1b2c3d4e")],
        ),
    ],
}


# -- 5. arguments written as a JSON string that holds the object ---------------------------------


def string_arguments_cases(fmt: str) -> list[dict[str, Any]]:
    # XML formats have no argument object; pythonic has keyword arguments; a Mistral [ARGS]
    # string never ends on a brace.
    if fmt in XML_FORMATS or fmt in ("pythonic", "mistral"):
        return []
    marker = json.dumps({"__ARGS__": 0})
    template = render(fmt, [(WEATHER[0], {"__ARGS__": 0})])
    assert marker in template, fmt

    def with_args(value: Any) -> str:
        return template.replace(marker, json.dumps(json.dumps(value)))

    held = calls(fmt, WEATHER)
    return [
        row("arguments_as_json_string", fmt, with_args(WEATHER[1]), held),
        row("arguments_string_not_an_object", fmt, with_args([1, 2]), [M("arguments_not_object")]),
    ]


# -- 1 and 2. raw-text XML values hold code; typing by schema ---------------------------------------

FILES = {"write_file": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}}
CALL_CLOSER = {
    "qwen3_coder": "</tool_call>",
    "glm45": "</tool_call>",
    "glm47": "</tool_call>",
    "minimax_m2": "</invoke>",
    "deepseek_v32": "</｜DSML｜invoke>",
}
REPEATED = {  # a parameter given twice with a schema: the second is text inside the first value
    "qwen3_coder": "1\n</parameter>\n<parameter=a>\n2",
    "glm45": "1</arg_value>\n<arg_key>a</arg_key>\n<arg_value>2",
    "glm47": "1</arg_value><arg_key>a</arg_key><arg_value>2",
    "minimax_m2": '1</parameter>\n<parameter name="a">2',
    "deepseek_v32": '1</｜DSML｜parameter>\n<｜DSML｜parameter name="a" string="true">2',
}
TYPED = {
    "f": {
        "type": "object",
        "properties": {
            "obj": {"type": "object"},
            "n": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "flag": {"type": "boolean"},
            "code": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "opt": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "s": {"type": "string"},
            "items": {"type": "array"},
            "x": {"type": "number"},
        },
    }
}


def write(fmt: str, content: str) -> str:
    return xml_call(fmt, "write_file", [("path", "fixture.py"), ("content", content)])


def xml_cases(fmt: str) -> list[dict[str, Any]]:
    if fmt not in XML_FORMATS:
        return []
    wrote: Callable[[str], list[dict[str, Any]]] = lambda content: [  # noqa: E731
        C(("write_file", {"path": "fixture.py", "content": content}))
    ]
    nested = 'doc = """\n' + render(fmt, [("write_file", {"path": "notes.txt", "content": "hello"})]) + '\n"""'
    given = "doc:\n" + param(fmt, "path", "other/path") + "end"
    unknown = "doc:\n" + param(fmt, "new_string", "print(1)") + "end"
    closer = f"see {CALL_CLOSER[fmt]} here"
    out = [
        row("value_holds_a_whole_call", fmt, write(fmt, nested), wrote(nested), schemas=FILES),
        row("value_holds_a_whole_call_no_schema", fmt, write(fmt, nested), [M("duplicate_argument")]),
        row("value_holds_opener_of_given_parameter", fmt, write(fmt, given), wrote(given), schemas=FILES),
        row("value_holds_parameter_not_in_schema", fmt, write(fmt, unknown), wrote(unknown), schemas=FILES),
        row("value_holds_the_call_closer", fmt, write(fmt, closer), wrote(closer), schemas=FILES),
        row("value_holds_the_call_closer_no_schema", fmt, write(fmt, closer), wrote(closer)),
        row(
            "parameter_given_twice_no_schema",
            fmt,
            xml_call(fmt, "f", [("a", "1"), ("a", "2")]),
            [M("duplicate_argument")],
        ),
        row(
            "parameter_given_twice_with_schema_is_text",
            fmt,
            xml_call(fmt, "f", [("a", "1"), ("a", "2")]),
            [C(("f", {"a": REPEATED[fmt]}))],
            schemas={"f": {"properties": {"a": {"type": "string"}}}},
        ),
    ]
    if fmt in ("qwen3_coder", "glm45"):
        tag = "<parameter=query>" if fmt == "qwen3_coder" else "<arg_key>query</arg_key>"
        mid = f"Pass {tag} to select the rows."
        out.append(row("no_schema_opener_mid_line_is_text", fmt, write(fmt, mid), wrote(mid)))
    if fmt == "deepseek_v32":
        dsml: Callable[[list[tuple[str, Any]]], str] = lambda ps: xml_call(fmt, "f", ps)  # noqa: E731
        out += [
            row(
                "string_true_decoded_by_schema",
                fmt,
                dsml([("n", "42"), ("obj", '{"a": 1}')]),
                [C(("f", {"n": 42, "obj": {"a": 1}}))],
                schemas=TYPED,
            ),
            row(
                "string_false_is_json",
                fmt,
                dsml([("items", [1, "two"]), ("flag", True)]),
                [C(("f", {"items": [1, "two"], "flag": True}))],
            ),
            row(
                "string_false_not_json",
                fmt,
                xml_call(fmt, "f", [("obj", {"a": 1})]).replace('{"a": 1}', "Hello, world"),
                [M("invalid_json")],
            ),
        ]
        return out
    typed = [
        ("obj", "{'key': 'value'}"),
        ("n", "None"),
        ("flag", "True"),
        ("code", "42"),
        ("opt", "null"),
        ("s", "null"),
        ("items", "[{\"status\": 'pending'}, 1]"),
    ]
    out += [
        row(
            "typed_by_schema",
            fmt,
            xml_call(fmt, "f", typed),
            [
                C(
                    (
                        "f",
                        {
                            "obj": {"key": "value"},
                            "n": None,
                            "flag": True,
                            "code": "42",
                            "opt": None,
                            "s": "null",
                            "items": [{"status": "pending"}, 1],
                        },
                    )
                )
            ],
            schemas=TYPED,
        ),
        row(
            "object_as_json_string",
            fmt,
            xml_call(fmt, "f", [("obj", '"{\\"k\\": 1}"')]),
            [C(("f", {"obj": {"k": 1}}))],
            schemas=TYPED,
        ),
        row(
            "array_written_escaped",
            fmt,
            xml_call(fmt, "f", [("items", '[{\\"status\\": \\"pending\\", \\"n\\": 1}]')]),
            [C(("f", {"items": [{"status": "pending", "n": 1}]}))],
            schemas=TYPED,
        ),
        row(
            "object_as_json_string_of_python_repr",
            fmt,
            xml_call(fmt, "f", [("obj", "\"{'k': 'v', 'n': 1}\"")]),
            [C(("f", {"obj": {"k": "v", "n": 1}}))],
            schemas=TYPED,
        ),
        row("non_finite_number", fmt, xml_call(fmt, "f", [("x", "1e999")]), [M("non_finite")], schemas=TYPED),
        row(
            "untyped_without_schema",
            fmt,
            xml_call(fmt, "f", [("n", "42"), ("flag", "True")]),
            [C(("f", {"n": "42", "flag": "True"}))],
        ),
    ]
    return out


# -- 6 and the other layouts models write -------------------------------------------------------------


def layout_cases(fmt: str) -> list[dict[str, Any]]:
    arr = json.dumps([{"name": WEATHER[0], "arguments": WEATHER[1]}, {"name": TIME[0], "arguments": TIME[1]}])
    if fmt == "phi4_mini_json":
        return [
            row("functools_list", fmt, f"functools{arr}", [C(WEATHER), C(TIME)]),
            row(
                "functools_multiline_in_prose",
                fmt,
                f"Let me check.\nfunctools[\n  {obj(WEATHER)},\n  {obj(TIME)}\n]\nAnything else?",
                [C(WEATHER), C(TIME)],
            ),
            row("functools_empty_list", fmt, "functools[] That is all.", []),
            row("functools_cut", fmt, f"functools[{obj(WEATHER)[:-3]}", [M("unterminated")]),
            row("functools_module_in_prose", fmt, "Use functools.partial for that.", []),
        ]
    if fmt == "pythonic":
        return [
            row(
                "olmo3_calls_one_per_line",
                fmt,
                f"<function_calls>{py(WEATHER)}\nset(a=null, b=true)</function_calls>",
                [C(WEATHER), C(("set", {"a": None, "b": True}))],
            ),
            row(
                "olmo3_think_opened_in_prompt",
                fmt,
                f"I need Paris.</think>\n<function_calls>{py(WEATHER)}</function_calls>",
                [C(WEATHER)],
                in_reasoning=True,
            ),
        ]
    if fmt == "internlm":
        block: Callable[[Call], str] = lambda c: (  # noqa: E731
            f"<|action_start|> <|plugin|>\n{json.dumps({'name': c[0], 'parameters': c[1]})}\n<|action_end|>"
        )
        return [row("intern_s1_spaced_tokens", fmt, block(WEATHER) + "\n" + block(TIME), [C(WEATHER), C(TIME)])]
    if fmt in SECTIONED:
        section = {
            "deepseek_v3": ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"),
            "deepseek_v31": ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"),
            "deepseek_v32": ("<｜DSML｜function_calls>", "</｜DSML｜function_calls>"),
            "kimi_k2": ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"),
            "minimax_m2": ("<minimax:tool_call>", "</minimax:tool_call>"),
        }[fmt]
        return [
            row("section_without_calls", fmt, f"{section[0]}get_weather {{}}{section[1]}", [M("no_call")]),
            row("section_cut_before_any_call", fmt, f"Let me look.{section[0]}get_weather", [M("unterminated")]),
            row("empty_section", fmt, f"{section[0]}\n{section[1]}", []),
        ]
    return []


def j(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


ASK = ("internet_search", {"question": "5MW燃气轮机设计参数"})
MORE: dict[str, list[dict[str, Any]]] = {
    "hermes": [
        row(
            "granite4_spaced_tags_string_arguments",
            "hermes",
            f"Here goes:\n<tool_call> {j({'name': WEATHER[0], 'arguments': j(WEATHER[1])})} </tool_call> Now the time:\n"
            f" <tool_call> {j({'name': TIME[0], 'arguments': TIME[1]})} </tool_call> Done.",
            [C(WEATHER), C(TIME)],
        ),
        row(
            "qwq_reasoning_opened_in_prompt",
            "hermes",
            f"好的，用户需要搜索。\n</think>\n\n<tool_call>\n{j({'name': ASK[0], 'arguments': ASK[1]})}\n</tool_call>\n",
            [C(ASK)],
            in_reasoning=True,
        ),
        row(
            "unknown_tool_is_still_a_call",
            "hermes",
            render("hermes", [("invalid_tool", {})]),
            [C(("invalid_tool", {}))],
        ),
    ],
    "llama3_json": [
        row(
            "python_tag_as_separator",
            "llama3_json",
            f"<|python_tag|>{j({'name': WEATHER[0], 'parameters': WEATHER[1]})}<|python_tag|>{j({'name': TIME[0], 'parameters': TIME[1]})}",
            [C(WEATHER), C(TIME)],
        ),
        row("eom_id_ends_the_turn", "llama3_json", render("llama3_json", [WEATHER]) + "<|eom_id|>", [C(WEATHER)]),
        row(
            "json_in_trailing_prose_is_text",
            "llama3_json",
            render("llama3_json", [WEATHER]) + ' The arguments were {"city": "Paris"}.',
            [C(WEATHER)],
        ),
        row("prose_before_json_is_not_a_call", "llama3_json", f"Here: {j({'name': 'f', 'parameters': {}})} ok?", []),
    ],
    "openai": [
        row(
            "recipient_in_role_with_constrain",
            "openai",
            '<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{"city": "Paris"}<|call|>',
            [C(WEATHER)],
        ),
        row(
            "recipient_without_content_type",
            "openai",
            '<|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>{"city": "Paris"}<|call|>',
            [C(WEATHER)],
        ),
        row(
            "non_json_arguments",
            "openai",
            "<|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>foo<|call|>",
            [M("invalid_json")],
        ),
        row(
            "call_then_final_in_the_next_run",
            "openai",
            render("openai", [WEATHER]) + "<|start|>assistant<|channel|>final<|message|>It rains.<|return|>",
            [C(WEATHER)],
        ),
    ],
    "internlm": [
        row(
            "unknown_tool_is_still_a_call",
            "internlm",
            render("internlm", [("delete_everything", {})]),
            [C(("delete_everything", {}))],
        ),
        row(
            "parameters_not_an_object",
            "internlm",
            '<|action_start|><|plugin|>\n{"name": "f", "parameters": "x"}<|action_end|>',
            [M("arguments_not_object")],
        ),
        row("opener_only_then_eos", "internlm", "<|action_start|><|plugin|>\n", [M("unterminated")]),
    ],
    "granite": [
        row(
            "space_after_marker",
            "granite",
            "<|tool_call|> " + j([{"name": WEATHER[0], "arguments": WEATHER[1]}]),
            [C(WEATHER)],
        ),
        row(
            "granite_3_1_tag_with_text_around",
            "granite",
            "Sure.\n<tool_call>" + j([{"arguments": TIME[1], "name": TIME[0]}]) + "\nDone.",
            [C(TIME)],
        ),
    ],
}


# -- what real models write, the rest: GLM edge cases, DSML typing, MiniMax lines, numbers ------------

CN_WEATHER: Call = ("get_weather", {"city": "北京", "date": "2025-08-01"})
CN_NOTE: Call = ("send_message", {"recipient": "张伟", "message": "明天下午三点开会，记得带伞☔。谢谢！"})
SH_WEATHER: Call = ("get_weather", {"city": "上海", "date": "2025-08-01"})


def glm_cases(fmt: str) -> list[dict[str, Any]]:
    if fmt not in ("glm45", "glm47"):
        return []
    two = render(fmt, [CN_WEATHER, SH_WEATHER])
    third = render(fmt, [CN_NOTE])
    return [
        row("cjk_values", fmt, render(fmt, [CN_NOTE, CN_WEATHER]), [C(CN_NOTE), C(CN_WEATHER)]),
        row(
            "call_after_think",
            fmt,
            f"<think>用户想知道北京的天气，我应该调用 {render(fmt, [DELETE])} 不，应该用 get_weather。</think>\n"
            f"好的，我来查询。\n{render(fmt, [CN_WEATHER])}",
            [C(CN_WEATHER)],
        ),
        row(
            "calls_with_prose_between",
            fmt,
            f"I will help you get the weather info.\n\n{render(fmt, [CN_WEATHER])}\n\n"
            f"meanwhile, I will also check the weather in Shanghai.\n\n{render(fmt, [SH_WEATHER])}\nDone.",
            [C(CN_WEATHER), C(SH_WEATHER)],
        ),
        # Cut inside the last call: inside a CJK value, inside a key, right after the name.
        row(
            "cut_inside_last_cjk_value",
            fmt,
            two + third[: third.index("记得")],
            [C(CN_WEATHER), C(SH_WEATHER), M("unterminated")],
        ),
        row(
            "cut_inside_last_key",
            fmt,
            two + third[: third.index("recip") + 3],
            [C(CN_WEATHER), C(SH_WEATHER), M("unterminated")],
        ),
        row(
            "cut_after_last_name",
            fmt,
            two + third[: third.index("send_message") + len("send_message")],
            [C(CN_WEATHER), C(SH_WEATHER), M("unterminated")],
        ),
        row(
            "cut_inside_last_value_closer",
            fmt,
            two + third[: third.rindex("</arg_value>") + 5],
            [C(CN_WEATHER), C(SH_WEATHER), M("unterminated")],
        ),
        # The same with the request's schema, which lists `city` only: GLM passes `date` anyway.
        row(
            "cjk_values_schema_lacks_a_parameter",
            fmt,
            render(fmt, [CN_NOTE, CN_WEATHER]),
            [C(CN_NOTE), C(CN_WEATHER)],
            schemas=CITY,
        ),
        row(
            "call_after_think_schema_lacks_a_parameter",
            fmt,
            f"<think>I want to get the weather.</think>\n\nI will help you get the weather.\n{render(fmt, [CN_WEATHER])}",
            [C(CN_WEATHER)],
            schemas=CITY,
        ),
        row(
            "calls_with_prose_between_schema_lacks_a_parameter",
            fmt,
            f"I will check.\n{render(fmt, [CN_WEATHER])}\nAlso Shanghai.\n{render(fmt, [SH_WEATHER])}",
            [C(CN_WEATHER), C(SH_WEATHER)],
            schemas=CITY,
        ),
        row(
            "cut_inside_last_call_schema_lacks_a_parameter",
            fmt,
            two + render(fmt, [SH_WEATHER])[: -len("01</arg_value>\n</tool_call>")],
            [C(CN_WEATHER), C(SH_WEATHER), M("unterminated")],
            schemas=CITY,
        ),
        row(
            "closer_cut_schema_lacks_a_parameter",
            fmt,
            render(fmt, [CN_WEATHER]).removesuffix("</tool_call>"),
            [C(CN_WEATHER)],
            schemas=CITY,
        ),
    ]


CITY = {"get_weather": {"type": "object", "properties": {"city": {"type": "string"}}}}


def schema_lacks_cases(fmt: str) -> list[dict[str, Any]]:
    """A parameter the request's schema does not list, passed anyway, is a parameter when
    it closes and the call parses; spelled inside a value with text after it, it is text."""
    if fmt not in XML_FORMATS:
        return []
    code = "x = 1\n" + param(fmt, "date", "2025-08-01") + "print(x)"
    return [
        row(
            "parameter_the_schema_lacks",
            fmt,
            xml_call(fmt, "get_weather", [("city", "Paris"), ("date", "2025-08-01")]),
            [C(("get_weather", {"city": "Paris", "date": "2025-08-01"}))],
            schemas=CITY,
        ),
        row(
            "parameter_the_schema_lacks_first",
            fmt,
            xml_call(fmt, "get_weather", [("date", "2025-08-01"), ("city", "Paris")]),
            [C(("get_weather", {"date": "2025-08-01", "city": "Paris"}))],
            schemas=CITY,
        ),
        row(
            "parameter_the_schema_lacks_inside_code",
            fmt,
            xml_call(fmt, "get_weather", [("city", code)]),
            [C(("get_weather", {"city": code}))],
            schemas=CITY,
        ),
    ]


MULTI = {
    "f": {
        "type": "object",
        "properties": {
            "is": {"type": ["integer", "string"]},
            "si": {"type": ["string", "integer"]},
            "ns": {"anyOf": [{"type": "number"}, {"type": "string"}]},
            "bs": {"anyOf": [{"type": "boolean"}, {"type": "string"}]},
            "os": {"anyOf": [{"type": "object"}, {"type": "string"}]},
            "nis": {"type": ["null", "integer", "string"]},
        },
    }
}


def dsml(name: str, params: list[tuple[str, str, bool]], close: bool = True) -> str:
    """A DeepSeek V3.2 invoke with each value as written and its string= mark."""
    body = "".join(
        f'<｜DSML｜parameter name="{k}" string="{str(s).lower()}">{v}</｜DSML｜parameter>\n' for k, v, s in params
    )
    return f'<｜DSML｜invoke name="{name}">\n{body}' + ("</｜DSML｜invoke>\n" if close else "")


def dsml_cases(fmt: str) -> list[dict[str, Any]]:
    if fmt != "deepseek_v32":
        return []
    fc, end = "<｜DSML｜function_calls>\n", "</｜DSML｜function_calls>"
    # The schema's types in its order: the first the value satisfies (string="true" or not).
    typed = [
        ("is", "42", True),
        ("si", "42", True),
        ("ns", "2.5", True),
        ("bs", "true", True),
        ("os", '{"k": [1]}', True),
        ("nis", "7", False),
    ]
    fallback = [("is", "forty-two", True), ("si", "42", False), ("ns", "n/a", False), ("nis", "null", True)]
    get = dsml("get_weather", [("city", "Paris", True)])
    return [
        row(
            "several_types_take_the_first_the_value_satisfies",
            fmt,
            fc + dsml("f", typed) + end,
            [C(("f", {"is": 42, "si": "42", "ns": 2.5, "bs": True, "os": {"k": [1]}, "nis": 7}))],
            schemas=MULTI,
        ),
        row(
            "several_types_fall_through_in_order",
            fmt,
            fc + dsml("f", fallback) + end,
            [C(("f", {"is": "forty-two", "si": 42, "ns": "n/a", "nis": None}))],
            schemas=MULTI,
        ),
        # The turn ends before the last invoke's closer: a whole body is a call, a cut one is not.
        row(
            "invoke_closer_missing_at_end_of_turn",
            fmt,
            fc + get + dsml("get_time", [("zone", "PST", True)], close=False),
            [C(WEATHER), C(TIME)],
        ),
        row(
            "invoke_cut_inside_its_value_at_end_of_turn",
            fmt,
            fc + get + dsml("get_time", [("zone", "PST", True)], close=False)[: -len("ST</｜DSML｜parameter>\n")],
            [C(WEATHER), M("unterminated")],
        ),
        row(
            "section_closed_before_the_invoke",
            fmt,
            fc + get + dsml("get_time", [("zone", "PST", True)], close=False) + end,
            [C(WEATHER), M("unterminated")],
        ),
    ]


def minimax_line_cases(fmt: str) -> list[dict[str, Any]]:
    if fmt != "minimax":
        return []
    lines = [obj(WEATHER), '{"name": "missing_args"}', '{"arguments": {"city": "Portland"}}', obj(TIME)]
    return [
        row(
            "line_missing_name_or_arguments",
            fmt,
            "<tool_calls>\n" + "\n".join(lines) + "\n</tool_calls>",
            [C(WEATHER), M("missing_arguments"), M("missing_name"), C(TIME)],
        ),
        row(
            "empty_arguments_are_arguments",
            fmt,
            "<tool_calls>\n" + obj(LIST) + "\n" + obj(TIME) + "\n</tool_calls>",
            [C(LIST), C(TIME)],
        ),
    ]


def mistral_cases(fmt: str) -> list[dict[str, Any]]:
    if fmt != "mistral":
        return []
    nxt = render(fmt, [TIME])
    out = []
    for slug, args, kind in [
        ("string", '"Paris"', "arguments_not_object"),
        ("number", "7", "arguments_not_object"),
        ("array", '["Paris"]', "arguments_not_object"),
        ("bool", "true", "arguments_not_object"),
        ("objects", '[{"city": "Paris"}]', "arguments_not_object"),
        ("prose", "Paris please", "invalid_json"),
    ]:
        out.append(
            row(
                f"arguments_{slug}_then_next_call", fmt, f"[TOOL_CALLS]get_weather[ARGS]{args}{nxt}", [M(kind), C(TIME)]
            )
        )
        if kind == "arguments_not_object":  # the block ends with its value: the prose after is prose
            out.append(
                row(
                    f"arguments_{slug}_then_prose_then_next_call",
                    fmt,
                    f"[TOOL_CALLS]get_weather[ARGS]{args} Let me also check the time. {nxt}",
                    [M(kind), C(TIME)],
                )
            )
    return out


BIG = 10**29 + 1
BIG_ARGS = {"n": BIG, "m": -BIG, "l": [BIG, -BIG, 3], "o": {"k": -(10**40)}}
BIG_SCHEMA = {
    "f": {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "m": {"type": "integer"},
            "l": {"type": "array"},
            "o": {"type": "object"},
        },
    }
}


def number_cases(fmt: str) -> list[dict[str, Any]]:
    """Integers past 64 bits, positive and negative, stay exact (never 1e29)."""
    extra = {"schemas": BIG_SCHEMA} if fmt in XML_FORMATS else {}
    return [row("integers_past_64_bits", fmt, render(fmt, [("f", BIG_ARGS)]), [C(("f", BIG_ARGS))], **extra)]


UNTYPED = [
    ("n", "42"),
    ("flag", "true"),
    ("py", "True"),
    ("none", "None"),
    ("nul", "null"),
    ("obj", '{"a": 1}'),
    ("html", "&lt;div&gt; &amp; <b>x</b>"),
]


def untyped_cases(fmt: str) -> list[dict[str, Any]]:
    """Without a schema a raw-text value is the text the model wrote: no guess at its type,
    no entity decoding (see docs/formats.md)."""
    if fmt not in XML_FORMATS:
        return []
    if fmt == "deepseek_v32":
        written = [(k, v, True) for k, v in UNTYPED] + [("j", '{"a": 1}', False), ("k", "null", False)]
        text = "<｜DSML｜function_calls>\n" + dsml("f", written) + "</｜DSML｜function_calls>"
        return [
            row("untyped_values_follow_the_mark", fmt, text, [C(("f", {**dict(UNTYPED), "j": {"a": 1}, "k": None}))])
        ]
    return [row("untyped_values_are_text", fmt, xml_call(fmt, "f", UNTYPED), [C(("f", dict(UNTYPED)))])]


def real_cases(fmt: str) -> list[dict[str, Any]]:
    return (
        reasoning_cases(fmt)
        + SPECIAL_REASONING.get(fmt, [])
        + end_of_turn_cases(fmt)
        + sibling_cases(fmt)
        + name_cases(fmt)
        + SPECIAL_NAMES.get(fmt, [])
        + string_arguments_cases(fmt)
        + xml_cases(fmt)
        + layout_cases(fmt)
        + MORE.get(fmt, [])
        + glm_cases(fmt)
        + dsml_cases(fmt)
        + minimax_line_cases(fmt)
        + mistral_cases(fmt)
        + number_cases(fmt)
        + untyped_cases(fmt)
        + schema_lacks_cases(fmt)
    )
