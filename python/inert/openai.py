"""OpenAI-compatible streaming chunks from a streaming step (``stream=True``).

``chunk(step, id=..., model=..., created=...)`` builds the ``ChatCompletionChunk``
an OpenAI-compatible server sends for one step: ``content``, the reasoning as
``reasoning_content`` (the field vLLM and DeepSeek use), and the tool-call deltas.
It needs the ``openai`` package (``pip install 'inert[openai]'``); the step's own
dicts need nothing."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .errors import InertError, InertTypeError

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionChunk

    from .turn import Step

__all__ = ["chunk", "delta"]


def delta(step: Step) -> dict[str, Any]:
    """The step's ``choices[0].delta`` as a plain dict (only the fields it has).

    Raises:
        InertTypeError: ``step`` is not a step (no str ``content`` and ``reasoning``, no list of
            ``tool_call_deltas``).
    """
    content, reasoning, deltas = _released(step, "delta")
    out: dict[str, Any] = {}
    if content:
        out["content"] = content
    if reasoning:
        out["reasoning_content"] = reasoning
    if deltas:
        out["tool_calls"] = [dict(d) for d in deltas]
    return out


def _released(step: object, caller: str) -> tuple[str, str, Sequence[Any]]:
    """What a step released, checked: anything with a step's three fields will do."""
    content = getattr(step, "content", None)
    reasoning = getattr(step, "reasoning", None)
    deltas = getattr(step, "tool_call_deltas", None)
    if (
        not isinstance(content, str)
        or not isinstance(reasoning, str)
        or not isinstance(deltas, Sequence)
        or isinstance(deltas, (str, bytes))
        or not all(isinstance(d, dict) for d in deltas)
    ):
        raise InertTypeError(
            f"inert.openai.{caller}(step): expected a Step (what an orchestrator built with stream=True "
            f"returns from verify, or report.tail), got {type(step).__name__}"
        )
    return content, reasoning, deltas


def _int(value: object, what: str) -> int:
    """An int argument (numpy's integer scalars too), never a bool."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)  # type: ignore[arg-type]  # checked by the call itself
        except TypeError:
            pass
    raise InertTypeError(f"inert.openai.chunk: {what} must be an int, got {type(value).__name__}")


def chunk(
    step: Step,
    *,
    id: str,
    model: str,
    created: int,
    index: int = 0,
    finish_reason: str | None = None,
    role: bool = False,
) -> ChatCompletionChunk:
    """The ``ChatCompletionChunk`` of one step.

    Args:
        step: a ``Step`` of an orchestrator built with ``stream=True`` (or ``report.tail``).
        id, model, created: the completion's id, model name and creation time (Unix seconds).
        index: the choice's index.
        finish_reason: for the last chunk (``"stop"``, ``"tool_calls"``, ...).
        role: put ``role="assistant"`` in the delta (the first chunk of a message).

    Returns:
        An ``openai.types.chat.ChatCompletionChunk``.

    Raises:
        InertError: the ``openai`` package is not installed (``pip install 'inert[openai]'``).
        InertTypeError: ``step`` is not a step, or ``id``, ``model`` (str), ``created``, ``index`` (int),
            ``finish_reason`` (str or None) or ``role`` (bool) of another type.
    """
    for name, value in (("id", id), ("model", model)):
        if not isinstance(value, str):
            raise InertTypeError(f"inert.openai.chunk: {name} must be a str, got {type(value).__name__}")
    created, index = _int(created, "created"), _int(index, "index")
    if finish_reason is not None and not isinstance(finish_reason, str):
        raise InertTypeError(
            f"inert.openai.chunk: finish_reason must be a str or None, got {type(finish_reason).__name__}"
        )
    if not isinstance(role, bool):
        raise InertTypeError(f"inert.openai.chunk: role must be a bool, got {type(role).__name__}")
    _released(step, "chunk")  # before the openai import, so the mistake is named either way
    d = delta(step)
    try:
        from openai.types.chat import ChatCompletionChunk
    except ImportError as e:
        raise InertError(f"inert.openai.chunk needs the openai package: pip install 'inert[openai]' ({e})") from None
    if role:
        d["role"] = "assistant"
    return ChatCompletionChunk.model_validate(
        {
            "id": id,
            "model": model,
            "created": created,
            "object": "chat.completion.chunk",
            "choices": [{"index": index, "delta": d, "finish_reason": finish_reason}],
        }
    )
