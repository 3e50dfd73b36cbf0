"""One-shot parsing of a finished model output, with the stream's own scanner."""

from __future__ import annotations

from collections.abc import Mapping
from types import EllipsisType
from typing import Any

from . import _core
from ._core import Call, Malformed, ReasoningUnopened

__all__ = ["parse"]


def parse(
    text: str | bytes,
    format: str | Mapping[str, Any] = "hermes",
    *,
    schemas: Mapping[str, Mapping[str, Any]] | None = None,
    max_block_bytes: int = 1 << 20,
    reasoning: tuple[str, str] | EllipsisType | None = ...,
    in_reasoning: bool = False,
) -> list[Call | Malformed | ReasoningUnopened]:
    """Parses a whole output in one shot: its calls and malformed blocks, in order.

    The same scanner as the streaming path, fed the text as one accepted
    token, so it finds exactly what a turn that accepted this text commits.

    Args:
        text: the model's whole output.
        format: a format name (see ``inert.formats()``) or a custom format dict.
        schemas: tool name -> JSON schema of its parameters; types raw XML values.
        max_block_bytes: a block longer than this is reported malformed.
        reasoning: the reasoning delimiters ``(open, close)``; a call inside
            reasoning is a thought, never a call. ``...`` (the default) is the
            format's own (``<think>``/``</think>`` for most, ``[THINK]`` for
            mistral, the analysis channel for openai, none for granite);
            ``None`` turns reasoning off.
        in_reasoning: the prompt already opened a reasoning section (Qwen3
            thinking, DeepSeek-R1 and MiniMax templates do).

    Returns:
        Calls and malformed blocks in stream order, and a ``ReasoningUnopened``
        where a reasoning closer arrived while the text was not in reasoning
        (pass ``in_reasoning=True`` for such a template).

    Raises:
        UnknownFormatError: ``format`` is not a known format.
        FormatSpecError: a custom ``format`` dict cannot be used.
        InertTypeError: ``text`` is neither str nor bytes, or ``reasoning`` or
            ``in_reasoning`` has the wrong type.
        InertValueError: empty reasoning delimiters, or ``in_reasoning=True``
            with reasoning off.
    """
    return _core.parse(
        text, format, schemas=schemas, max_block_bytes=max_block_bytes, reasoning=reasoning, in_reasoning=in_reasoning
    )
