"""Renders tool calls the way each model writes them, from the layouts in
shared/FORMATS.md: the test oracle for the vectors and the format properties.

``render(format, calls)`` returns the model output for ``calls`` (a list of
``(name, arguments)``). XML-style formats write values as raw text, so their
arguments should be strings unless the test passes schemas.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Calls = list[tuple[str, dict[str, Any]]]

FORMATS = [
    "hermes",
    "qwen3_coder",
    "llama3_json",
    "pythonic",
    "mistral",
    "deepseek_v3",
    "deepseek_v31",
    "deepseek_v32",
    "kimi_k2",
    "glm45",
    "glm47",
    "openai",
    "granite",
    "internlm",
    "jamba",
    "xlam",
    "phi4_mini_json",
    "minimax",
    "minimax_m2",
]
"""Every built-in format, in the order ``inert.formats()`` lists them (test_format_api checks it)."""

XML_FORMATS = {"qwen3_coder", "glm45", "glm47", "deepseek_v32", "minimax_m2"}
ANCHORED = {"llama3_json", "pythonic", "xlam"}
"""Whole-message formats: the calls must open the message."""

CLOSER = {
    "hermes": "</tool_call>",
    "qwen3_coder": "</tool_call>",
    "deepseek_v3": "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    "deepseek_v31": "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    "deepseek_v32": "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
    "kimi_k2": "<|tool_call_end|><|tool_calls_section_end|>",
    "glm45": "</tool_call>",
    "glm47": "</tool_call>",
    "openai": "<|call|>",
    "internlm": "<|action_end|>",
    "jamba": "</tool_calls>",
    "phi4_mini_json": "<|/tool_call|>",
    "minimax": "</tool_calls>",
    "minimax_m2": "</invoke>\n</minimax:tool_call>",
}
"""What ends a rendering's last call, for formats whose calls end on a closer (the others end on a bracket)."""

THINK = ("<think>", "</think>")
REASONING: dict[str, tuple[str, str] | None] = {
    "mistral": ("[THINK]", "[/THINK]"),
    "openai": ("<|channel|>analysis<|message|>", "<|end|>"),
    "granite": None,
}
"""Each format's reasoning delimiters by default (``THINK`` unless listed)."""


def reasoning(format: str) -> tuple[str, str] | None:
    return REASONING.get(format, THINK)


def j(value: Any, ascii_: bool = False) -> str:
    return json.dumps(value, ensure_ascii=ascii_)


def raw(value: Any) -> str:
    return value if isinstance(value, str) else j(value)


def _hermes(calls: Calls) -> str:
    return "\n".join(f"<tool_call>\n{j({'name': n, 'arguments': a})}\n</tool_call>" for n, a in calls)


def param(format: str, key: str, value: Any) -> str:
    """One parameter as a raw-text XML format writes it (values as raw text)."""
    v = raw(value)
    marked = str(isinstance(value, str)).lower()
    return {
        "qwen3_coder": f"<parameter={key}>\n{v}\n</parameter>\n",
        "glm45": f"<arg_key>{key}</arg_key>\n<arg_value>{v}</arg_value>\n",
        "glm47": f"<arg_key>{key}</arg_key><arg_value>{v}</arg_value>",
        "minimax_m2": f'<parameter name="{key}">{v}</parameter>\n',
        "deepseek_v32": f'<｜DSML｜parameter name="{key}" string="{marked}">{v}</｜DSML｜parameter>\n',
    }[format]


def xml_call(format: str, name: str, params: list[tuple[str, Any]]) -> str:
    """One call of a raw-text XML format from its parameters in order (a key may repeat)."""
    body = "".join(param(format, k, v) for k, v in params)
    if format == "qwen3_coder":
        return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"
    if format in ("glm45", "glm47"):
        newline = "\n" if format == "glm45" else ""
        return f"<tool_call>{name}{newline}{body}</tool_call>"
    if format == "minimax_m2":
        return f'<minimax:tool_call>\n<invoke name="{name}">\n{body}</invoke>\n</minimax:tool_call>'
    invoke = f'<｜DSML｜invoke name="{name}">\n{body}</｜DSML｜invoke>\n'
    return f"<｜DSML｜function_calls>\n{invoke}</｜DSML｜function_calls>"


def _qwen3_coder(calls: Calls) -> str:
    return "\n".join(xml_call("qwen3_coder", n, list(a.items())) for n, a in calls)


def _llama3_json(calls: Calls) -> str:
    return "<|python_tag|>" + "; ".join(j({"name": n, "parameters": a}) for n, a in calls)


def _py(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_py(k)}: {_py(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_py(v) for v in value) + "]"
    return repr(value)


def _pythonic(calls: Calls) -> str:
    return "[" + ", ".join(f"{n}(" + ", ".join(f"{k}={_py(v)}" for k, v in a.items()) + ")" for n, a in calls) + "]"


def _mistral(calls: Calls) -> str:
    return "".join(f"[TOOL_CALLS]{n}[ARGS]{j(a)}" for n, a in calls)


def _deepseek_v3(calls: Calls) -> str:
    body = "".join(
        f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n{j(a)}\n```<｜tool▁call▁end｜>" for n, a in calls
    )
    return f"<｜tool▁calls▁begin｜>{body}<｜tool▁calls▁end｜>"


def _deepseek_v31(calls: Calls) -> str:
    body = "".join(f"<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{j(a)}<｜tool▁call▁end｜>" for n, a in calls)
    return f"<｜tool▁calls▁begin｜>{body}<｜tool▁calls▁end｜>"


def _deepseek_v32(calls: Calls) -> str:
    out = ["<｜DSML｜function_calls>\n"]
    for n, a in calls:
        body = "".join(param("deepseek_v32", k, v) for k, v in a.items())
        out.append(f'<｜DSML｜invoke name="{n}">\n{body}</｜DSML｜invoke>\n')
    return "".join(out) + "</｜DSML｜function_calls>"


def _kimi_k2(calls: Calls) -> str:
    body = "".join(
        f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{j(a)}<|tool_call_end|>"
        for i, (n, a) in enumerate(calls)
    )
    return f"<|tool_calls_section_begin|>{body}<|tool_calls_section_end|>"


def _glm(format: str) -> Callable[[Calls], str]:
    def render(calls: Calls) -> str:
        return ("\n" if format == "glm45" else "").join(xml_call(format, n, list(a.items())) for n, a in calls)

    return render


def _openai(calls: Calls) -> str:
    return "".join(
        f"<|start|>assistant<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>{j(a)}<|call|>"
        for n, a in calls
    )


def _array(calls: Calls) -> str:
    return j([{"name": n, "arguments": a} for n, a in calls])


def _internlm(calls: Calls) -> str:
    return "".join(f"<|action_start|><|plugin|>\n{j({'name': n, 'parameters': a})}<|action_end|>" for n, a in calls)


def _minimax(calls: Calls) -> str:
    return "<tool_calls>\n" + "".join(j({"name": n, "arguments": a}) + "\n" for n, a in calls) + "</tool_calls>"


def _minimax_m2(calls: Calls) -> str:
    out = ["<minimax:tool_call>\n"]
    for n, a in calls:
        params = "".join(param("minimax_m2", k, v) for k, v in a.items())
        out.append(f'<invoke name="{n}">\n{params}</invoke>\n')
    return "".join(out) + "</minimax:tool_call>"


RENDERERS: dict[str, Callable[[Calls], str]] = {
    "hermes": _hermes,
    "qwen3_coder": _qwen3_coder,
    "llama3_json": _llama3_json,
    "pythonic": _pythonic,
    "mistral": _mistral,
    "deepseek_v3": _deepseek_v3,
    "deepseek_v31": _deepseek_v31,
    "deepseek_v32": _deepseek_v32,
    "kimi_k2": _kimi_k2,
    "glm45": _glm("glm45"),
    "glm47": _glm("glm47"),
    "openai": _openai,
    "granite": lambda calls: "<|tool_call|>" + _array(calls),
    "internlm": _internlm,
    "jamba": lambda calls: f"<tool_calls>{_array(calls)}</tool_calls>",
    "xlam": _array,
    "phi4_mini_json": lambda calls: f"<|tool_call|>{_array(calls)}<|/tool_call|>",
    "minimax": _minimax,
    "minimax_m2": _minimax_m2,
}


def render(format: str, calls: Calls, before: str = "", after: str = "") -> str:
    """The model output: ``before`` text, the calls, ``after`` text (anchored formats take no ``before``)."""
    if not calls:
        return before + after
    if format in ANCHORED:
        before = ""
    return before + RENDERERS[format](calls) + after
