"""OpenTelemetry spans for tool calls (when opentelemetry is installed)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

import inert
from inert import telemetry

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace", reason="opentelemetry-sdk is not installed")
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.sdk.trace.id_generator import IdGenerator  # noqa: E402
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult  # noqa: E402


class _DuringTheseTests(Sampler):
    """Records spans only while a test here runs. The provider is global for the whole
    process (OpenTelemetry sets it once), and every other test's tool calls would fill the
    exporter."""

    recording = False

    def should_sample(  # noqa: PLR0917 - the SDK calls it so
        self,
        parent_context: Any,
        trace_id: int,
        name: str,
        kind: Any = None,
        attributes: Any = None,
        links: Any = None,
        trace_state: Any = None,
    ) -> SamplingResult:
        if not self.recording:
            return SamplingResult(Decision.DROP)
        return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes)  # a sampled span keeps what this returns

    def get_description(self) -> str:
        return "only during tests/runtime/test_telemetry.py"


class _OwnRandomIds(IdGenerator):
    """Span ids from a generator of its own: the SDK's default draws from the global
    `random` in worker threads, which Hypothesis, drawing in other tests, reports."""

    def __init__(self) -> None:
        self._rng = random.Random(0)

    def generate_span_id(self) -> int:
        return self._rng.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self._rng.getrandbits(128) or 1


EXPORTER = InMemorySpanExporter()
SAMPLER = _DuringTheseTests()
_provider = sdk_trace.TracerProvider(sampler=SAMPLER, id_generator=_OwnRandomIds())
_provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(_provider)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    EXPORTER.clear()
    SAMPLER.recording = True
    yield EXPORTER
    SAMPLER.recording = False
    telemetry.record_content(False)


def run(tools: dict[str, Any], effects: dict[str, Any]) -> inert.Report:
    orch = inert.Orchestrator(effects, tools)
    orch.draft(
        [
            '<tool_call>{"name": "get", "arguments": {"q": "x"}}</tool_call>',
            '<tool_call>{"name": "put", "arguments": {}}</tool_call>',
        ]
    )
    orch.verify(2)
    return orch.finish(strict=False)


def boom(idempotency_key: str) -> None:
    raise KeyError("nope")


def test_each_call_is_an_execute_tool_span(spans: InMemorySpanExporter) -> None:
    report = run({"get": lambda q: "r", "put": boom}, {"get": "read_only", "put": "idempotent"})
    by_name = {s.name: s for s in spans.get_finished_spans()}
    assert set(by_name) == {"execute_tool get", "execute_tool put"}
    get = dict(by_name["execute_tool get"].attributes or {})
    assert get["gen_ai.operation.name"] == "execute_tool"
    assert get["gen_ai.tool.name"] == "get"
    assert get["gen_ai.tool.call.id"] == get["inert.commit_key"] == report.results[0].commit_key
    assert (get["inert.effect"], get["inert.early"]) == ("read_only", True)
    assert "gen_ai.tool.call.arguments" not in get, "arguments only when opted in"
    put = dict(by_name["execute_tool put"].attributes or {})
    assert put["error.type"] == "KeyError"


def test_content_only_when_opted_in(spans: InMemorySpanExporter) -> None:
    telemetry.record_content(True)
    run({"get": lambda q: "r", "put": lambda idempotency_key: 1}, {"get": "read_only", "put": "idempotent"})
    get = next(dict(s.attributes or {}) for s in spans.get_finished_spans() if s.name == "execute_tool get")
    assert get["gen_ai.tool.call.arguments"] == '{"q": "x"}' and get["gen_ai.tool.call.result"] == '"r"'
