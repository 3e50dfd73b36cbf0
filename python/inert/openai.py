"""OpenAI-compatible streaming chunks from a streaming step (``stream=True``).

``chunk(step, id=..., model=..., created=...)`` builds the ``ChatCompletionChunk``
an OpenAI-compatible server sends for one step: ``content``, the reasoning as
``reasoning_content`` (the field vLLM and DeepSeek use), and the tool-call deltas.
It needs the ``openai`` package (``pip install 'inert[openai]'``); the step's own
dicts need nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import InertError

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionChunk

    from .turn import Step

__all__ = ["chunk", "delta"]


def delta(step: Step) -> dict[str, Any]:
    """The step's ``choices[0].delta`` as a plain dict (only the fields it has)."""
    out: dict[str, Any] = {}
    if step.content:
        out["content"] = step.content
    if step.reasoning:
        out["reasoning_content"] = step.reasoning
    if step.tool_call_deltas:
        out["tool_calls"] = [dict(d) for d in step.tool_call_deltas]
    return out


def chunk(step: Step, *, id: str, model: str, created: int, index: int = 0,
          finish_reason: str | None = None, role: bool = False) -> ChatCompletionChunk:
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
    """
    try:
        from openai.types.chat import ChatCompletionChunk
    except ImportError as e:
        raise InertError(f"inert.openai.chunk needs the openai package: pip install 'inert[openai]' ({e})") from None
    d = delta(step)
    if role:
        d["role"] = "assistant"
    return ChatCompletionChunk.model_validate({
        "id": id, "model": model, "created": created, "object": "chat.completion.chunk",
        "choices": [{"index": index, "delta": d, "finish_reason": finish_reason}],
    })
