"""The README's streaming loop and examples/streaming_server.py: every chunk is a valid
``openai`` ``ChatCompletionChunk``, and together they are the accepted message."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import inert
from tools import require

ROOT = Path(__file__).resolve().parents[2]


def example() -> Any:
    spec = importlib.util.spec_from_file_location("streaming_server", ROOT / "examples" / "streaming_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["streaming_server"] = module
    spec.loader.exec_module(module)
    return module


def message(events: list[str]) -> dict[str, Any]:
    """What a client assembles from the server-sent events, each checked by the openai types."""
    types = require("openai", "the streaming example builds openai chunks").types.chat
    assert events[-1] == "data: [DONE]\n\n"
    content, reasoning, calls, finish = "", "", {}, None
    for event in events[:-1]:
        c = types.ChatCompletionChunk.model_validate_json(event.removeprefix("data: "))
        assert c.object == "chat.completion.chunk" and c.id == "chatcmpl-7"
        choice = c.choices[0]
        content += choice.delta.content or ""
        reasoning += (choice.delta.model_extra or {}).get("reasoning_content", "")
        for d in choice.delta.tool_calls or []:
            if d.index not in calls:
                assert d.id and d.type == "function" and d.function and d.function.name
                calls[d.index] = {"id": d.id, "name": d.function.name, "arguments": ""}
            assert d.function is not None
            calls[d.index]["arguments"] += d.function.arguments or ""
        finish = choice.finish_reason or finish
    return {"content": content, "reasoning": reasoning, "calls": calls, "finish": finish}


def check(got: dict[str, Any]) -> None:
    assert got["content"] == "Let me \nChecking."
    assert got["reasoning"] == "The user wants weather"
    assert [(c["name"], json.loads(c["arguments"])) for c in got["calls"].values()] == [
        ("get_weather", {"city": "Lyon"})
    ]
    assert "Par" not in json.dumps(got), "nothing from a rejected draft token"
    assert got["finish"] == "tool_calls"


def test_the_streaming_example_sends_valid_chunks_of_the_accepted_message() -> None:
    require("openai", "the streaming example builds openai chunks")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        example().main()
    check(message([e + "\n\n" for e in out.getvalue().split("\n\n") if e]))


def test_the_readme_streaming_loop_runs() -> None:
    require("openai", "the README's streaming loop builds openai chunks")
    readme = (ROOT / "README.md").read_text().split("## Streaming output", 1)[1]
    code = re.search(r"```python\n(.*?)```", readme, re.DOTALL)
    assert code is not None
    namespace: dict[str, Any] = {}
    exec(compile(code.group(1), "README.md", "exec"), namespace)  # noqa: S102 - the README's own example
    ex = example()
    orch = inert.Orchestrator(
        inert.EffectTable({"get_weather": "read_only"}),
        {"get_weather": lambda city: city},
        format="hermes",
        turn_key="t",
        stream=True,
    )
    chunks = namespace["chunks"](orch, ex.engine(), id="chatcmpl-7", model="m", created=1)
    check(message(list(ex.sse(chunks))))


def test_chunk_of_an_empty_step_is_an_empty_delta() -> None:
    require("openai", "inert.openai.chunk builds openai chunks")
    c = inert.openai.chunk(inert.Step(()), id="x", model="m", created=0, finish_reason="stop")
    assert c.choices[0].delta.content is None and c.choices[0].finish_reason == "stop"
