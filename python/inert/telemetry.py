"""OpenTelemetry spans for tool calls, when `opentelemetry-api` is installed.

Each call is an ``execute_tool {name}`` span with the GenAI semantic-convention
attributes (``gen_ai.operation.name``, ``gen_ai.tool.name``,
``gen_ai.tool.call.id``, ``error.type``) and inert's own (``inert.commit_key``,
``inert.effect``, ``inert.early``). Arguments and results are recorded only
after ``record_content(True)``: they may hold user data.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import describe
from .report import DispatchRecord

_trace: Any
try:
    _trace = importlib.import_module("opentelemetry.trace")
except ImportError:  # the optional dependency is absent: spans are no-ops
    _trace = None

__all__ = ["record_content", "tool_span"]

_content = False


def record_content(enabled: bool) -> None:
    """Opt in (or out) of recording tool arguments and results on spans."""
    global _content
    _content = enabled


class SpanResult:
    """Where the caller puts the tool's result for the span to record."""

    __slots__ = ("result",)

    def __init__(self) -> None:
        self.result: Any = None


@contextmanager
def tool_span(record: DispatchRecord) -> Iterator[SpanResult]:
    """A span around one tool call; errors are recorded and re-raised unchanged.
    Nothing here may replace the tool's own outcome: an exception whose ``str()``
    raises, or content JSON cannot spell, is recorded as what can be said of it."""
    out = SpanResult()
    if _trace is None:
        yield out
        return
    tracer = _trace.get_tracer("inert")
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": record.name,
        "gen_ai.tool.call.id": record.commit_key,
        "inert.commit_key": record.commit_key,
        "inert.effect": record.effect.value,
        "inert.early": record.early,
    }
    if _content:
        attributes["gen_ai.tool.call.arguments"] = _json(record.arguments)
    # The SDK's own exception recording calls str() on the exception; do it here, safely.
    with tracer.start_as_current_span(
        f"execute_tool {record.name}", attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield out
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__qualname__)
            span.set_status(_trace.Status(_trace.StatusCode.ERROR, describe(exc)))
            span.add_event("exception", {"exception.type": type(exc).__qualname__, "exception.message": describe(exc)})
            raise
        if _content:
            span.set_attribute("gen_ai.tool.call.result", _json(out.result))


def _json(value: Any) -> str:
    try:
        return json.dumps(value, default=repr)
    except BaseException as exc:  # noqa: BLE001 - content that cannot be spelled is described, never fatal
        return f"<unrecordable: {describe(exc)}>"
