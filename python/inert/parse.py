"""One-shot parsing of a finished model output, with the stream's own scanner."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import _core
from ._core import Call, Malformed

__all__ = ["parse"]


def parse(
    text: str | bytes,
    format: str | Mapping[str, Any] = "hermes",
    *,
    schemas: Mapping[str, Mapping[str, Any]] | None = None,
    max_block_bytes: int = 1 << 20,
) -> list[Call | Malformed]:
    """Parses a whole output in one shot: its calls and malformed blocks, in order.

    The same scanner as the streaming path, fed the text as one accepted
    token, so it finds exactly what a turn that accepted this text commits.

    Raises:
        UnknownFormatError: ``format`` is not a known format.
        FormatSpecError: a custom ``format`` dict cannot be used.
        InertTypeError: ``text`` is neither str nor bytes.
    """
    return _core.parse(text, format, schemas=schemas, max_block_bytes=max_block_bytes)
