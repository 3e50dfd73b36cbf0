"""A minimal OpenAI-compatible streaming loop on inert, without a network: a
speculative engine drafts and verifies tokens, inert gates the tool calls and
releases what the client may see (accepted tokens only, so nothing is ever
retracted), and each step becomes a ``ChatCompletionChunk`` for a server-sent event.

Run it: ``python examples/streaming_server.py`` (needs ``pip install 'inert[openai]'``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import inert
from inert.openai import chunk

Token = str | bytes | int


def chunks(
    orch: inert.Orchestrator,
    engine: Iterable[tuple[list[Token], int, Token | None]],
    *,
    id: str,
    model: str,
    created: int,
) -> Iterator[Any]:
    """The ``ChatCompletionChunk``s of one streamed turn. ``engine`` yields each
    speculative step: the draft window, how many of it the target accepted, its correction."""
    first = True
    for window, n_accepted, correction in engine:
        orch.draft(window)  # drafts release nothing
        step = orch.verify(n_accepted, correction)
        if step.content or step.reasoning or step.tool_call_deltas:
            yield chunk(step, id=id, model=model, created=created, role=first)
            first = False
    report = orch.finish()  # the calls ran; report.tail: what the end released
    assert report.tail is not None
    yield chunk(
        report.tail,
        id=id,
        model=model,
        created=created,
        role=first,
        finish_reason="tool_calls" if report.results else "stop",
    )


def sse(stream: Iterable[Any]) -> Iterator[str]:
    """Server-sent events, as an OpenAI-compatible server writes them."""
    for c in stream:
        yield f"data: {c.model_dump_json(exclude_none=True)}\n\n"
    yield "data: [DONE]\n\n"


def engine() -> Iterator[tuple[list[Token], int, Token | None]]:
    """A draft model that guesses wrong twice; the target corrects it."""
    yield ["<think>", "The user ", "wants weather"], 3, None
    yield ["</think>", "Let me ", "<tool", "_call>"], 4, None
    yield ['{"name": "get_weather", ', '"arguments": {"city": "Par', 'is"}}'], 1, '"arguments": {"city": "Lyon"}}'
    yield ["</tool_call>", "\nOne moment: ", "<tool_call>"], 1, "\nChecking."


def main() -> list[Any]:
    effects = inert.EffectTable({"get_weather": "read_only"})
    orch = inert.Orchestrator(
        effects, {"get_weather": lambda city: f"rain in {city}"}, format="hermes", turn_key="req-7/turn-1", stream=True
    )
    out = list(chunks(orch, engine(), id="chatcmpl-7", model="qwen3", created=1_700_000_000))
    for event in sse(out):
        print(event, end="")
    return out


if __name__ == "__main__":
    main()
