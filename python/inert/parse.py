"""One-shot parsing of a finished model output, with the stream's own scanner."""

from __future__ import annotations

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


def parse(text: str | bytes, format: str = "hermes", *, max_block_bytes: int = 1 << 20) -> list[ParsedCall]:
    """Parses a whole output in one shot and returns its blocks in order.

    The same scanner as the streaming path, fed the text as one accepted
    token: the oracle of the differential tests, and handy without speculation.

    Raises:
        UnknownFormatError: ``format`` is not a known format.
    """
    return [
        ParsedCall(e.name, e.arguments, e.raw_arguments, e.reason)
        for e in _core.parse(text, format, max_block_bytes=max_block_bytes)
    ]
