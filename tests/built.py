"""Model output with malformed and half-valid blocks, in every format, with the
right answer known from how it was built (as ``render`` knows the calls of the
valid output it writes): the oracle for the malformed-block properties, which
never asks the scanner under test what a block is.

An output is a list of items, each a call or a call broken in one known way
(``Item.flaw``), written in the format's layout: one block per item, or one
list holding them all (``LISTS``), so a broken item sits among good ones. The
answer is each item in order: ``("call", index, name, arguments)`` or
``("malformed", index, kind)``, where ``index`` is the item's place in its
block. The last item may be cut at the end of the turn (``unterminated``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from render import ANCHORED, XML_FORMATS, j, param, xml_call

LISTS = {"pythonic", "granite", "jamba", "xlam", "phi4_mini_json", "minimax"}
"""Formats whose calls share one block (a list): each call is an item with its index."""

JSON_OBJECTS = {
    "hermes": "arguments",
    "llama3_json": "parameters",
    "internlm": "parameters",
    "granite": "arguments",
    "jamba": "arguments",
    "xlam": "arguments",
    "phi4_mini_json": "arguments",
    "minimax": "arguments",
}
"""Formats that write each call as one JSON object, and the field holding its arguments."""

NAMED = {"mistral", "deepseek_v3", "deepseek_v31", "kimi_k2", "openai"}
"""Formats that write the name in the layout and the arguments as a JSON object."""

BAD_NAMES = ["get weather", "junk [", "{{ tc.name }}", "é", "a/b"]
NON_FINITE = ["1e999", "-1e999", "1E+400"]

FLAWS: dict[str, list[str]] = {
    **{f: ["arguments_not_object", "non_finite", "invalid_name", "missing_name", "invalid_json"] for f in JSON_OBJECTS},
    **{f: ["arguments_not_object", "non_finite", "invalid_json"] for f in NAMED},
    **{f: ["duplicate_argument", "invalid_name"] for f in XML_FORMATS},
    "pythonic": ["non_finite", "invalid_literal", "duplicate_argument"],
}
"""What each format lets an item be broken by (beside being cut by the end of the turn).
Bad names: where the name is a JSON string or an XML attribute or tag, any text can
be written there; in the other layouts the name's own syntax ends it (``to=functions.a b``
is the name ``a``), so a bad name is not a layout the model can write.
Kimi K2's name is its id (``invalid_id``, tested in the vectors)."""
FLAWS["deepseek_v32"] += ["non_finite", "invalid_json"]  # its string="false" values are JSON
for _f in ("deepseek_v31", "mistral", "kimi_k2"):
    FLAWS[_f].append("invalid_name")  # the name runs up to the next tag: any text fits


@dataclass(frozen=True)
class Item:
    """One call as written: ``flaw`` None for a call, else the kind it is malformed as."""

    name: str
    arguments: dict[str, Any]
    flaw: str | None = None
    detail: str = ""
    """What the flaw writes: the non-object arguments, the bad name, the number, the literal."""

    def expected(self, index: int) -> tuple[Any, ...]:
        if self.flaw is None:
            return ("call", index, self.name, json.dumps(self.arguments, sort_keys=True))
        return ("malformed", index, self.flaw)


def _args_text(item: Item) -> str:
    """The arguments as JSON text, broken as the item says."""
    if item.flaw == "arguments_not_object":
        return item.detail
    if item.flaw == "non_finite":
        return j({**item.arguments, "n": 0}).replace('"n": 0', f'"n": {item.detail}')
    if item.flaw == "invalid_json":
        return j(item.arguments)[:-1] + (", " if item.arguments else "") + '"n" 1}'  # a value without its colon
    return j(item.arguments)


def _name(item: Item) -> str:
    return item.detail if item.flaw == "invalid_name" else item.name


def _object(fmt: str, item: Item) -> str:
    field = JSON_OBJECTS[fmt]
    if item.flaw == "missing_name":
        return '{"' + field + '": ' + j(item.arguments) + "}"
    if item.flaw == "invalid_json":
        return '{"name": ' + j(item.name) + ' "' + field + '": ' + j(item.arguments) + "}"  # a missing comma
    return '{"name": ' + j(_name(item)) + ', "' + field + '": ' + _args_text(item) + "}"


def _params(item: Item) -> list[tuple[str, Any]]:
    params: list[tuple[str, Any]] = list(item.arguments.items())
    if item.flaw == "duplicate_argument":
        params.append((item.detail, "again"))
    return params


def _py(item: Item) -> str:
    from render import _py as literal

    args = [f"{k}={literal(v)}" for k, v in item.arguments.items()]
    if item.flaw == "duplicate_argument":
        args.append(f"{item.detail}=1")
    elif item.flaw in ("non_finite", "invalid_literal"):
        args.append(f"n={item.detail}")
    return f"{item.name}(" + ", ".join(args) + ")"


def _dsml(item: Item) -> str:
    body = "".join(param("deepseek_v32", k, v) for k, v in _params(item))
    if item.flaw in ("non_finite", "invalid_json"):
        value = item.detail if item.flaw == "non_finite" else '{"n" 1}'
        body += f'<｜DSML｜parameter name="n" string="false">{value}</｜DSML｜parameter>\n'
    return f'<｜DSML｜invoke name="{_name(item)}">\n{body}</｜DSML｜invoke>\n'


def item_text(fmt: str, item: Item, i: int) -> str:
    """The text of item ``i`` of the output (its call, without the list's or section's frame)."""
    if fmt in JSON_OBJECTS:
        obj = _object(fmt, item)
        return {
            "hermes": f"<tool_call>\n{obj}\n</tool_call>",
            "internlm": f"<|action_start|><|plugin|>\n{obj}<|action_end|>",
        }.get(fmt, obj)
    name, args = _name(item), _args_text(item)
    match fmt:
        case "mistral":
            return f"[TOOL_CALLS]{name}[ARGS]{args}"
        case "deepseek_v3":
            return f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{args}\n```<｜tool▁call▁end｜>"
        case "deepseek_v31":
            return f"<｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{args}<｜tool▁call▁end｜>"
        case "kimi_k2":
            return f"<|tool_call_begin|>functions.{name}:{i}<|tool_call_argument_begin|>{args}<|tool_call_end|>"
        case "openai":
            head = f"<|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json"
            return f"{head}<|message|>{args}<|call|>"
        case "pythonic":
            return _py(item)
        case "deepseek_v32":
            return _dsml(item)
        case "minimax_m2":
            params = "".join(param("minimax_m2", k, v) for k, v in _params(item))
            return f'<invoke name="{name}">\n{params}</invoke>\n'
        case _:
            return xml_call(fmt, name, _params(item))


FRAMES: dict[str, tuple[str, str, str]] = {
    "llama3_json": ("<|python_tag|>", "; ", ""),
    "pythonic": ("[", ", ", "]"),
    "deepseek_v3": ("<｜tool▁calls▁begin｜>", "", "<｜tool▁calls▁end｜>"),
    "deepseek_v31": ("<｜tool▁calls▁begin｜>", "", "<｜tool▁calls▁end｜>"),
    "deepseek_v32": ("<｜DSML｜function_calls>\n", "", "</｜DSML｜function_calls>"),
    "kimi_k2": ("<|tool_calls_section_begin|>", "", "<|tool_calls_section_end|>"),
    "granite": ("<|tool_call|>[", ", ", "]"),
    "jamba": ("<tool_calls>[", ", ", "]</tool_calls>"),
    "xlam": ("[", ", ", "]"),
    "phi4_mini_json": ("<|tool_call|>[", ", ", "]<|/tool_call|>"),
    "minimax": ("<tool_calls>\n", "\n", "\n</tool_calls>"),
    "minimax_m2": ("<minimax:tool_call>\n", "", "</minimax:tool_call>"),
}
"""(opening, between items, closing) of the formats whose calls sit in one list or section."""


def cut_point(fmt: str, item: Item, text: str, draw: Any) -> int:
    """Where to cut ``text`` (item's text) so that the call is certainly incomplete."""
    if fmt in XML_FORMATS:
        # Inside the first value: a raw value must end at its tag, so it is unterminated.
        k, v = _params(item)[0]
        opening = param(fmt, k, "\x00").split("\x00")[0]
        at = text.index(opening) + len(opening)
        return at + int(draw(st.integers(0, len(str(v)))))
    if fmt == "pythonic":
        # Inside the parentheses, before the flaw: a cut call is unterminated, whatever came before.
        flaw_at = f"{item.detail}=1" if item.flaw == "duplicate_argument" else "n="
        end = text.rindex(flaw_at) if item.flaw else len(text) - 1
        return int(draw(st.integers(len(item.name) + 1, end)))
    if item.flaw == "non_finite":
        return int(draw(st.integers(text.index("{") + 1, text.rindex(item.detail))))  # before the number is read
    if fmt in JSON_OBJECTS:
        start = text.index("{")
        return int(draw(st.integers(start + 1, start + len(_object(fmt, item)) - 1)))  # inside the object
    args = _args_text(item)
    start = text.rindex(args)
    inside = (1, len(args) - 1) if len(args) > 1 else (0, 0)  # `7` cut is no arguments at all
    return int(draw(st.integers(start + inside[0], start + inside[1])))


names = st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True)
keys = st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True).filter(lambda k: k != "n")
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.text(max_size=6)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
    max_leaves=4,
)
xml_values = st.text(st.characters(blacklist_characters="\r", blacklist_categories=["Cs"]), min_size=1, max_size=8)


@st.composite
def items(draw: Any, fmt: str, flaw: str | None) -> Item:
    value = xml_values if fmt in XML_FORMATS else json_values
    min_size = 1 if fmt in XML_FORMATS else 0  # an XML call to be cut needs a value to cut
    arguments = draw(st.dictionaries(keys, value, min_size=min_size, max_size=2))
    if fmt in XML_FORMATS:
        # A value holding its own closer is a case of its own (the look-alike properties).
        closer = {
            "qwen3_coder": "</parameter>",
            "glm45": "</arg_value>",
            "glm47": "</arg_value>",
            "minimax_m2": "</parameter>",
            "deepseek_v32": "</｜DSML｜parameter>",
        }[fmt]
        arguments = {k: v for k, v in arguments.items() if closer not in v and "<" not in v and v.strip() == v} or {
            "k": "v"
        }
    name = draw(names)
    detail = ""
    match flaw:
        case "arguments_not_object":
            detail = draw(st.sampled_from(["[]", "[1, 2]", '[{"a": 1}]', "7", "true", '"text"']))
        case "non_finite":
            detail = draw(st.sampled_from(NON_FINITE))
        case "invalid_name":
            # A brace in a Mistral name would be read as its arguments' first brace.
            detail = draw(st.sampled_from([n for n in BAD_NAMES if fmt != "mistral" or "{" not in n]))
        case "invalid_literal":
            detail = draw(st.sampled_from(["foo", "f(1)", "x.y", "1 + 2"]))
        case "duplicate_argument":
            if not arguments:
                arguments = {"k": 1}
            detail = draw(st.sampled_from(sorted(arguments)))
    return Item(name, arguments, flaw, detail)


@dataclass(frozen=True)
class Output:
    text: str
    expected: list[tuple[Any, ...]]
    """Each item in stream order: ("call", index, name, arguments as sorted JSON) or ("malformed", index, kind)."""


@st.composite
def outputs(draw: Any, fmt: str, max_items: int = 4) -> Output:
    """Prose and items, some broken; sometimes none, sometimes all broken, sometimes
    the last cut by the end of the turn."""
    flaws = [None, *FLAWS[fmt]]
    chosen = draw(st.lists(st.sampled_from(flaws), max_size=max_items))
    its = [draw(items(fmt, f)) for f in chosen]
    before = "" if fmt in ANCHORED else draw(st.sampled_from(["", "Sure. ", "Let me check.\n", "é "]))
    cut = bool(its) and draw(st.integers(0, 3)) == 0
    texts = [item_text(fmt, it, i) for i, it in enumerate(its)]
    expected = [it.expected(i if fmt in LISTS else 0) for i, it in enumerate(its)]
    if cut:
        texts[-1] = texts[-1][: cut_point(fmt, its[-1], texts[-1], draw)]
        # A bad name written whole before the cut keeps its kind (a semantic fault, not text that
        # ran out) where the name is read on its own; a cut JSON object is no object at all.
        # The named layouts judge the name of a call they could read: one whose arguments ran
        # out is unterminated. The XML layouts read the name before any value.
        semantic = its[-1].flaw == "invalid_name" and fmt in XML_FORMATS
        expected[-1] = ("malformed", expected[-1][1], "invalid_name" if semantic else "unterminated")
    if not its:
        return Output(before + draw(st.sampled_from(["", "No tools needed.", "x < y and y > z"])), [])
    opening, between, closing = FRAMES.get(fmt, ("", "\n", ""))
    body = opening + between.join(texts)
    if cut:
        return Output(before + body, expected)
    after = draw(st.sampled_from(["", " Done.", "\n"]))
    return Output(before + body + closing + after, expected)


def seen(found: list[Any]) -> list[tuple[Any, ...]]:
    """Calls and malformed blocks as ``Output.expected`` writes them."""
    import inert

    out: list[tuple[Any, ...]] = []
    for f in found:
        if isinstance(f, inert.Call):
            out.append(("call", f.index, f.name, json.dumps(f.arguments, sort_keys=True)))
        elif isinstance(f, inert.Malformed):
            out.append(("malformed", f.index, str(f.kind)))
    return out
