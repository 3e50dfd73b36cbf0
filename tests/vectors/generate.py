"""Writes the format vectors: per format, model outputs and what they must
yield. tests/vectors/<format>.jsonl holds the layouts of docs/formats.md;
tests/vectors/real/<format>.jsonl (built by real_output.py) holds what real
models write: reasoning, cut closers, broken siblings, names, literal tags.

Run from the repository root: python tests/vectors/generate.py
Each line: {"case", "format", "output", "expect": [{"name", "arguments", "call_id"?} | {"malformed": kind}],
"schemas"?, "reasoning"? ([open, close], or null: off; absent: the format's own), "in_reasoning"?,
"unopened"? (how many reasoning closers closed nothing)}. Expectations come from
how the output was built, never from inert's parser.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_output import real_cases
from render import ANCHORED, FORMATS, XML_FORMATS, render

HERE = Path(__file__).resolve().parent

WEATHER = ("get_weather", {"city": "San Francisco", "unit": "celsius"})
TIME = ("get_time", {"zone": "PST"})
SEARCH = ("search", {"query": "speculative decoding"})

# A closer of each format, spelled inside an argument value.
LOOKALIKE = {
    "hermes": "</tool_call><tool_call>",
    "qwen3_coder": "a </parameter> b",
    "llama3_json": '}; {"name": "x"}',
    "pythonic": "x), y(",
    "mistral": "}[TOOL_CALLS]",
    "deepseek_v3": "<｜tool▁call▁end｜>",
    "deepseek_v31": "<｜tool▁call▁end｜>",
    "deepseek_v32": "a </｜DSML｜parameter> b",
    "kimi_k2": "<|tool_call_end|>",
    "glm45": "a </arg_value> b",
    "glm47": "a </arg_value> b",
    "openai": "<|call|>",
    "granite": "}]",
    "internlm": "<|action_end|>",
    "jamba": "</tool_calls>",
    "xlam": "}]",
    "phi4_mini_json": "<|/tool_call|>",
    "minimax": "</tool_calls>",
    "minimax_m2": "a </parameter> b",
}


def case(
    name: str,
    fmt: str,
    output: str,
    calls: list[tuple[str, dict[str, Any]]],
    malformed: tuple[str, ...] = (),
    *,
    schemas: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A vector whose calls (if any) come before its malformed blocks."""
    expect = [{"name": n, "arguments": a} for n, a in calls] + [{"malformed": k} for k in malformed]
    row: dict[str, Any] = {"case": name, "format": fmt, "output": output, "expect": expect}
    if schemas:
        row["schemas"] = schemas
    return row


def xml_safe(args: dict[str, Any]) -> dict[str, Any]:
    """XML-style formats carry raw text: without a schema every value reads back as a string."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in args.items()}


def common(fmt: str) -> list[dict[str, Any]]:
    xml = fmt in XML_FORMATS
    # DeepSeek V3.2 marks each value string="true|false", so its values keep their JSON types.
    typed_by_markup = fmt == "deepseek_v32"
    fix = xml_safe if xml and not typed_by_markup else (lambda a: a)
    nested = {"filter": {"tags": ["a", "b"], "range": {"lo": 1, "hi": 2.5}}, "flags": [True, False, None]}
    unicode_args = {"text": "héllo wörld ☃ 𝄞 日本語", "emoji": "🚀"}
    rows = [
        case("single", fmt, render(fmt, [WEATHER]), [WEATHER]),
        case("parallel", fmt, render(fmt, [WEATHER, TIME, SEARCH]), [WEATHER, TIME, SEARCH]),
        case("unicode", fmt, render(fmt, [("translate", unicode_args)]), [("translate", unicode_args)]),
        case("nested", fmt, render(fmt, [("query", nested)]), [("query", fix(nested))]),
        case(
            "lookalike_delimiter",
            fmt,
            render(fmt, [("echo", {"s": LOOKALIKE[fmt]})]),
            [("echo", {"s": LOOKALIKE[fmt]})],
        ),
        case("empty_arguments", fmt, render(fmt, [("ping", {})]), [("ping", {})]),
        case("no_calls", fmt, "I can answer that directly: 42.", []),
    ]
    if fmt not in ANCHORED:
        rows.append(case("text_around", fmt, render(fmt, [TIME], "Let me check. ", "\nOne moment."), [TIME]))
    else:
        rows.append(case("text_after", fmt, render(fmt, [TIME], "", "\n"), [TIME]))
    full = render(fmt, [WEATHER])
    rows.append(case("truncated", fmt, full[: len(full) * 2 // 3], [], ("unterminated",)))
    if xml and not typed_by_markup:
        schema = {
            "get_weather": {"type": "object", "properties": {"days": {"type": "integer"}, "city": {"type": "string"}}}
        }
        rows.append(
            case(
                "schema_typed",
                fmt,
                render(fmt, [("get_weather", {"city": "Oslo", "days": "3"})]),
                [("get_weather", {"city": "Oslo", "days": 3})],
                schemas=schema,
            )
        )
    return rows


# Per-format cases: malformed bodies and the alternative spellings models emit.
SPECIAL: dict[str, list[dict[str, Any]]] = {
    "hermes": [
        case(
            "malformed_json",
            "hermes",
            '<tool_call>\n{"name": "f", "arguments": {"q": }}\n</tool_call>',
            [],
            ("invalid_json",),
        ),
        case(
            "arguments_first",
            "hermes",
            '<tool_call>{"arguments": {"q": 1}, "name": "f"}</tool_call>',
            [("f", {"q": 1})],
        ),
    ],
    "qwen3_coder": [
        case(
            "malformed_no_function",
            "qwen3_coder",
            "<tool_call>\n<parameter=a>\n1\n</parameter>\n</tool_call>",
            [],
            ("missing_name",),
        ),
        case(
            "missing_parameter_closer",
            "qwen3_coder",
            "<tool_call>\n<function=f>\n<parameter=a>\n1\n<parameter=b>\n2\n</parameter>\n</function>\n</tool_call>",
            [("f", {"a": "1", "b": "2"})],
        ),
    ],
    "llama3_json": [
        case("malformed_json", "llama3_json", '{"name": "f", "parameters": {"q": ]}', [], ("invalid_json",)),
        case("arguments_key_no_tag", "llama3_json", '{"name": "f", "arguments": {"q": 1}}', [("f", {"q": 1})]),
        case("prose_first_is_not_a_call", "llama3_json", 'Sure: {"name": "f", "parameters": {}}', []),
    ],
    "pythonic": [
        case("malformed_positional", "pythonic", "[f(1, 2)]", [], ("invalid_literal",)),
        case(
            "llama4_tags",
            "pythonic",
            "<|python_start|>[f(a='x', b=[1, 2], c={'k': None})]<|python_end|>",
            [("f", {"a": "x", "b": [1, 2], "c": {"k": None}})],
        ),
    ],
    "mistral": [
        case("malformed_json", "mistral", '[TOOL_CALLS]f[ARGS]{"q": ]}', [], ("invalid_json",)),
        case(
            "old_array",
            "mistral",
            '[TOOL_CALLS][{"name": "a", "arguments": {"q": 1}}, {"name": "b", "arguments": {}}]',
            [("a", {"q": 1}), ("b", {})],
        ),
        case("call_id", "mistral", '[TOOL_CALLS]f[CALL_ID]a1b2c3d4e[ARGS]{"q": 1}', [("f", {"q": 1})]),
        case("control_tokens_stripped", "mistral", '[TOOL_CALLS]f{"q": 1}', [("f", {"q": 1})]),
    ],
    "deepseek_v3": [
        case(
            "malformed_no_fence",
            "deepseek_v3",
            '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n{"q": 1}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
            [],
            ("layout",),
        ),
    ],
    "deepseek_v31": [
        case(
            "malformed_json",
            "deepseek_v31",
            '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{"q": }<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
            [],
            ("invalid_json",),
        ),
        case(
            "outside_section_is_text", "deepseek_v31", "<｜tool▁call▁begin｜>f<｜tool▁sep｜>{}<｜tool▁call▁end｜>", []
        ),
    ],
    "deepseek_v32": [
        case(
            "malformed_unclosed_name",
            "deepseek_v32",
            '<｜DSML｜function_calls>\n<｜DSML｜invoke name="f>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
            [],
            ("layout",),
        ),
        case(
            "json_parameters",
            "deepseek_v32",
            '<｜DSML｜function_calls>\n<｜DSML｜invoke name="f">\n<｜DSML｜parameter name="n" string="false">[1, {"a": 2}]</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
            [("f", {"n": [1, {"a": 2}]})],
        ),
    ],
    "kimi_k2": [
        case(
            "malformed_json",
            "kimi_k2",
            '<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{"q": }<|tool_call_end|><|tool_calls_section_end|>',
            [],
            ("invalid_json",),
        ),
        case(
            "singular_section_spelling",
            "kimi_k2",
            '<|tool_call_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{"q": 1}<|tool_call_end|><|tool_call_section_end|>',
            [("f", {"q": 1})],
        ),
    ],
    "glm45": [
        case(
            "malformed_no_name",
            "glm45",
            "<tool_call>\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n</tool_call>",
            [],
            ("missing_name",),
        ),
    ],
    "glm47": [
        case(
            "malformed_no_name",
            "glm47",
            "<tool_call><arg_key>a</arg_key><arg_value>1</arg_value></tool_call>",
            [],
            ("missing_name",),
        ),
    ],
    "openai": [
        case(
            "malformed_no_message",
            "openai",
            '<|channel|>commentary to=functions.f <|constrain|>json{"q": 1}<|call|>',
            [],
            ("layout",),
        ),
        case(
            "recipient_in_role",
            "openai",
            '<|start|>assistant to=functions.f<|channel|>commentary json<|message|>{"q": 1}<|call|>',
            [("f", {"q": 1})],
        ),
        case("analysis_is_not_a_call", "openai", "<|channel|>analysis<|message|>Thinking about it.<|end|>", []),
    ],
    "granite": [
        case("malformed_json", "granite", '<|tool_call|>[{"name": "f", "arguments": {"q": }}]', [], ("invalid_json",)),
        case("granite_3_1_tag", "granite", '<tool_call>[{"name": "f", "arguments": {"q": 1}}]', [("f", {"q": 1})]),
    ],
    "internlm": [
        case(
            "malformed_json",
            "internlm",
            '<|action_start|><|plugin|>\n{"name": "f", "parameters": }<|action_end|>',
            [],
            ("invalid_json",),
        ),
    ],
    "jamba": [
        case(
            "malformed_json",
            "jamba",
            '<tool_calls>[{"name": "f", "arguments": 3}]</tool_calls>',
            [],
            ("arguments_not_object",),
        ),
    ],
    "xlam": [
        case("malformed_json", "xlam", '[{"name": "f", "arguments": {"q": }}]', [], ("invalid_json",)),
        case("json_fence", "xlam", '```json\n[{"name": "f", "arguments": {"q": 1}}]\n```', [("f", {"q": 1})]),
        case("after_think", "xlam", '<think>plan</think>\n[{"name": "f", "arguments": {}}]', [("f", {})]),
    ],
    "phi4_mini_json": [
        case(
            "malformed_json",
            "phi4_mini_json",
            '<|tool_call|>[{"name": "f", "arguments": {"q": }}]<|/tool_call|>',
            [],
            ("invalid_json",),
        ),
    ],
    "minimax": [
        case(
            "malformed_json",
            "minimax",
            '<tool_calls>\n{"name": "f", "arguments": {"q": }}\n</tool_calls>',
            [],
            ("invalid_json",),
        ),
    ],
    "minimax_m2": [
        case(
            "malformed_unclosed_name",
            "minimax_m2",
            '<minimax:tool_call>\n<invoke name="f>\n</invoke>\n</minimax:tool_call>',
            [],
            ("layout",),
        ),
        case("outside_section_is_text", "minimax_m2", '<invoke name="f">\n</invoke>', []),
    ],
}


def write(path: Path, rows: list[dict[str, Any]]) -> None:
    names = [r["case"] for r in rows]
    assert len(set(names)) == len(names), f"{path}: duplicate case names"
    path.parent.mkdir(exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def main() -> None:
    for fmt in FORMATS:
        layouts = common(fmt) + SPECIAL.get(fmt, [])
        real = real_cases(fmt)
        write(HERE / f"{fmt}.jsonl", layouts)
        write(HERE / "real" / f"{fmt}.jsonl", real)
        print(f"{fmt:16} {len(layouts):3} layout cases, {len(real):3} real-output cases")


if __name__ == "__main__":
    main()
