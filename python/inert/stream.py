"""What a streaming step released for a client, as ``take_released`` returns it."""

from __future__ import annotations

from typing import Any, NamedTuple, TypeAlias

__all__ = ["Released", "ReleasedTuple"]


class Released(NamedTuple):
    """What the steps released since the last ``take_released``, from accepted tokens only, so
    nothing shown is ever retracted. A named tuple: it still unpacks as
    ``content, reasoning, deltas = ...`` and equals the plain 3-tuple it replaced.

    The core builds it with ``tuple.__new__`` (it never calls the Python ``__new__``, which
    costs a frame per step on the serving path)."""

    content: str
    """Accepted text outside calls and reasoning: never part of a delimiter, never half a UTF-8
    character, never text a later token could still turn into a call."""
    reasoning: str
    """Accepted text inside reasoning sections."""
    deltas: list[dict[str, Any]]
    """Tool-call deltas shaped like OpenAI's ``ChoiceDeltaToolCall`` (see ``Step.tool_call_deltas``)."""


ReleasedTuple: TypeAlias = tuple[str, str, list[dict[str, Any]]]
"""``Released`` as a plain tuple, as the orchestrators take it from the core
(``TokenStream._take_released``): they unpack it at once, and a plain tuple costs about
0.1 µs less a step to build. A ``Released`` is one too."""
