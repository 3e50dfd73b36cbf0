"""Streaming output on hostile model output: what goes out never depends on how the
accepted text was cut into tokens, even where the text is no UTF-8."""

from __future__ import annotations

from typing import Any

import pytest

import inert
from render import xml_call

XML = ["qwen3_coder", "glm45", "glm47", "minimax_m2", "deepseek_v32"]


def released_arguments(fmt: str, pieces: list[bytes], **kw: Any) -> tuple[str, list[str]]:
    """Joined argument text of call 0 and the marks, one verify per piece, then finish."""
    s = inert.TokenStream(fmt, "turn", stream=True, **kw)
    deltas = []
    for p in pieces:
        s.draft([p])
        s.verify(1)
        deltas += s.take_released()[2]
    s.finish()
    deltas += s.take_released()[2]
    args = "".join(d["function"]["arguments"] for d in deltas if d["index"] == 0 and "inert" not in d)
    marks = [d["inert"]["malformed"] for d in deltas if "inert" in d]
    return args, marks


@pytest.mark.parametrize("fmt", XML)
@pytest.mark.parametrize("value", [b"a\xffb", b"a\n\xff", b"\n\xe2", b"ab\xe2\x98"])
def test_a_value_that_is_no_utf8_releases_the_same_under_any_chunking(fmt: str, value: bytes) -> None:
    """The text before the bad byte goes out whether the value arrives whole or a byte at a
    time, and the call is marked malformed either way."""
    text = xml_call(fmt, "f", [("c", "\0"), ("d", "p")]).encode().replace(b"\0", value)
    whole = released_arguments(fmt, [text])
    bytewise = released_arguments(fmt, [text[i:i + 1] for i in range(len(text))])
    assert whole == bytewise
    assert whole[1] == ["invalid_utf8"]
