"""One-shot parsing of a finished model output, with the stream's own scanner."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import _core

__all__ = ["ParsedCall", "parse"]


@dataclass(frozen=True)
class ParsedCall:
    """A block found in a finished output. A malformed block has ``error`` set
    (the reason) and no name or arguments."""

    name: str | None
    arguments: dict[str, Any] | None
    raw_arguments: str | None
    error: str | None = None
    call_id: str | None = None
    """The call id the model wrote, in formats that carry one (Kimi K2, Mistral)."""


def parse(
    text: str | bytes,
    format: str | Mapping[str, Any] = "hermes",
    *,
    schemas: Mapping[str, Mapping[str, Any]] | None = None,
    max_block_bytes: int = 1 << 20,
) -> list[ParsedCall]:
    """Parses a whole output in one shot and returns its blocks in order.

    The same scanner as the streaming path, fed the text as one accepted
    token: the oracle of the differential tests, and handy without speculation.

    Raises:
        UnknownFormatError: ``format`` is not a known format.
        FormatSpecError: a custom ``format`` dict cannot be used.
    """
    return [
        ParsedCall(e.name, e.arguments, e.raw_arguments, e.reason, e.call_id)
        for e in _core.parse(text, format, schemas=schemas, max_block_bytes=max_block_bytes)
    ]
