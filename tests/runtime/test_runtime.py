"""The runtimes never hang, never misreport, and refuse caller mistakes before
anything changes: one regression test per way they used to break. Concurrency
is ordered with events; no test depends on a sleep winning a race."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from typing import Any

import pytest

import inert
from tools import WATCHDOG, block, finish_within


def run_turn(orch: inert.Orchestrator, *texts: str, accept: bool = True) -> inert.Report:
    orch.draft(list(texts))
    orch.verify(len(texts) if accept else 0)
    return finish_within(orch)


# -- hangs --


def test_async_read_rejected_before_its_task_started_settles() -> None:
    """draft then verify with no await between (an engine's loop): finish() used to wait for ever."""
    ran: list[str] = []

    async def get(k: str) -> str:
        ran.append(k)
        return k

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"get": "read_only"}, {"get": get})
        await orch.draft([block("get", k="x")])
        await orch.verify(0)
        return await asyncio.wait_for(orch.finish(), WATCHDOG)

    report = asyncio.run(main())
    assert report.results == [] and ran == [], "a rejected read that never started never runs"


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit, GeneratorExit])
def test_a_tool_raising_a_base_exception_settles_its_call(exc: type[BaseException]) -> None:
    def bad() -> None:
        raise exc("from the tool")

    orch = inert.Orchestrator({"bad": "write", "ok": "write"}, {"bad": bad, "ok": lambda: "fine"})
    report = run_turn(orch, block("bad"), block("ok"))
    assert isinstance(report.results[0].error, exc)
    assert report.results[1].result == "fine", "later calls still run"


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_an_async_tool_raising_a_base_exception_settles_its_call(exc: type[BaseException]) -> None:
    async def bad() -> None:
        raise exc("from the tool")

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"bad": "write"}, {"bad": bad})
        await orch.draft([block("bad")])
        await orch.verify(1)
        return await asyncio.wait_for(orch.finish(strict=False), WATCHDOG)

    assert isinstance(asyncio.run(main()).results[0].error, exc)


class _Cycle:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


def _cycle() -> list[Any]:
    c: list[Any] = []
    c.append(c)
    return c


@pytest.mark.parametrize(
    "result",
    [_cycle(), 10**5000, _Cycle(), {"deep": _cycle()}, {1: "a", "1": "b"}, [{"x": {None: 1, "null": 2}}]],
    ids=["cycle", "huge-int", "repr-raises", "nested-cycle", "keys-one-as-json", "nested-keys-one-as-json"],
)
def test_a_result_the_journal_cannot_store_is_an_error_with_a_reason(result: Any, tmp_path: Any) -> None:
    orch = inert.Orchestrator({"f": "write"}, {"f": lambda: result}, journal=tmp_path / "j.sqlite", turn_key="t")
    report = run_turn(orch, block("f"))
    error = report.results[0].error
    assert isinstance(error, inert.UnstorableResultError) and "cannot store" in str(error)
    (entry,) = inert.recover(tmp_path / "j.sqlite").completed
    assert entry.status == "error" and "UnstorableResultError" in (entry.error or "")


def test_keys_json_spells_apart_are_stored_as_text(tmp_path: Any) -> None:
    """Non-text keys that stay distinct as JSON are stored, as JSON spells them."""
    orch = inert.Orchestrator(
        {"f": "write"}, {"f": lambda: {1: "a", "2": "b", None: "c"}}, journal=tmp_path / "j.sqlite", turn_key="t"
    )
    assert run_turn(orch, block("f")).results[0].error is None
    (entry,) = inert.recover(tmp_path / "j.sqlite").completed
    assert entry.result == {"1": "a", "2": "b", "null": "c"}


def test_an_exception_whose_str_raises_is_recorded(tmp_path: Any) -> None:
    class Weird(Exception):
        def __str__(self) -> str:
            raise ValueError("no str")

    def f() -> None:
        raise Weird

    trace = tmp_path / "t.jsonl"
    orch = inert.Orchestrator({"f": "write"}, {"f": f}, journal=tmp_path / "j.sqlite", turn_key="t", trace=trace)
    report = run_turn(orch, block("f"))
    assert isinstance(report.results[0].error, Weird)
    assert "unprintable" in (inert.recover(tmp_path / "j.sqlite").completed[0].error or "")


def test_an_async_tools_own_cancelled_error_is_its_error_not_a_rejection() -> None:
    """Found by a helper: an accepted write whose tool raised CancelledError itself was
    reported as "cancelled: its block was rejected"."""

    async def t() -> None:
        raise asyncio.CancelledError("the tool's own")

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"t": "write"}, {"t": t})
        await orch.draft([block("t")])
        await orch.verify(1)
        return await asyncio.wait_for(orch.finish(strict=False), WATCHDOG)

    error = asyncio.run(main()).results[0].error
    assert isinstance(error, asyncio.CancelledError) and not isinstance(error, inert.CancelledCallError)
    assert str(error) == "the tool's own"


class _Unspeakable:
    """A result whose repr raises a BaseException: the journal cannot spell it."""

    def __init__(self, exc: type[BaseException]) -> None:
        self.exc = exc

    def __repr__(self) -> str:
        raise self.exc("from __repr__")


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_a_result_or_error_that_raises_a_base_exception_when_spelled_still_settles(exc: type[BaseException]) -> None:
    """Found by a helper: describing the outcome caught only Exception, so the worker died
    before the call ended, and finish() waited for ever (threads) or the exception left
    the event loop (asyncio)."""

    class Odd(Exception):
        def __str__(self) -> str:
            raise exc("from __str__")

    def odd() -> None:
        raise Odd

    tools = {"r": lambda: _Unspeakable(exc), "e": odd, "ok": lambda: "fine"}
    effects = dict.fromkeys(tools, "write")
    report = run_turn(inert.Orchestrator(effects, tools), block("r"), block("e"), block("ok"))
    assert isinstance(report.results[0].error, inert.UnstorableResultError)
    assert isinstance(report.results[1].error, Odd)
    assert report.results[2].result == "fine"

    async def unspeakable() -> _Unspeakable:
        return _Unspeakable(exc)

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"r": "write"}, {"r": unspeakable})
        await orch.draft([block("r")])
        await orch.verify(1)
        return await asyncio.wait_for(orch.finish(strict=False), WATCHDOG)

    assert isinstance(asyncio.run(main()).results[0].error, inert.UnstorableResultError)


class _Staged:
    """A two-phase tool whose ``phase`` raises ``exc``."""

    def __init__(self, phase: str, exc: type[BaseException]) -> None:
        self.phase, self.exc = phase, exc

    def _maybe(self, phase: str) -> None:
        if phase == self.phase:
            raise self.exc(f"from {phase}")

    def prepare(self) -> str:
        self._maybe("prepare")
        return "staged"

    def commit(self, prepared: str, *, idempotency_key: str) -> str:
        self._maybe("commit")
        return "done"

    def abort(self, prepared: str) -> None:
        self._maybe("abort")


@pytest.mark.parametrize("phase", ["prepare", "commit"])
@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_an_async_two_phase_tool_raising_a_base_exception_settles_its_call(
    phase: str, exc: type[BaseException]
) -> None:
    """Found by a helper: a sync phase ran in a task of its own, and asyncio re-raises these
    two out of the event loop from any task: asyncio.run died instead of recording them."""

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"t": "write"}, {"t": _Staged(phase, exc)})
        await orch.draft([block("t")])
        await orch.verify(1)
        return await asyncio.wait_for(orch.finish(strict=False), WATCHDOG)

    error = asyncio.run(main()).results[0].error
    assert isinstance(error, exc) and str(error) == f"from {phase}"


class _Stubborn:
    """An async tool that swallows every cancel and returns only once ``done`` is set."""

    def __init__(self) -> None:
        self.done = asyncio.Event()
        self.entered = asyncio.Event()
        self.cancels = 0

    async def __call__(self) -> str:
        self.entered.set()
        while not self.done.is_set():
            try:
                await self.done.wait()
            except asyncio.CancelledError:
                self.cancels += 1  # ignored: it goes on waiting
        return "late"


def test_an_async_tool_that_ignores_the_cancel_still_times_out() -> None:
    """Found by a helper: the deadline cancelled the tool and then waited for it, so a tool
    that swallows the cancel ran past ``timeout`` and its late result was a success."""
    stubborn = _Stubborn()

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"s": "write"}, {"s": stubborn}, timeout=0.05)
        await orch.draft([block("s")])
        await orch.verify(1)
        try:
            return await asyncio.wait_for(orch.finish(strict=False), WATCHDOG)
        finally:
            stubborn.done.set()  # lets the abandoned tool end before the loop closes

    report = asyncio.run(main())
    assert isinstance(report.results[0].error, inert.ToolTimeoutError), report.results[0]
    assert stubborn.cancels, "the tool was asked to stop"


def test_a_rejected_async_read_that_ignores_the_cancel_settles_by_its_deadline() -> None:
    """Found by a helper: the wait for a cancelled read was bounded by a timeout whose own
    cancel went on to the tool, which swallowed it too: finish() waited for ever."""
    stubborn = _Stubborn()

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"s": "read_only"}, {"s": stubborn}, timeout=0.05)
        await orch.draft([block("s"), "x"])
        await stubborn.entered.wait()  # the read runs early, in its tool
        await orch.verify(0)
        try:
            return await asyncio.wait_for(orch.finish(strict=False), WATCHDOG)
        finally:
            stubborn.done.set()  # lets the abandoned tool end before the loop closes

    report = asyncio.run(main())
    assert report.results == [] and [d.name for d in report.discarded] == ["s"]
    assert stubborn.cancels, "the tool was asked to stop"


def _meddle(a: dict[str, Any], b: list[Any]) -> str:
    a["x"] = "changed"
    b.append("changed")
    return "ok"


class _MeddlingPrepare:
    """A two-phase tool whose prepare changes the arguments it was given."""

    def prepare(self, a: dict[str, Any], b: list[Any]) -> str:
        return _meddle(a, b)

    def commit(self, prepared: str, *, idempotency_key: str) -> str:
        return "done"

    def abort(self, prepared: str) -> None:
        return None


class _AsyncMeddlingPrepare(_MeddlingPrepare):
    async def prepare(self, a: dict[str, Any], b: list[Any]) -> str:  # type: ignore[override]
        return _meddle(a, b)


async def _async_meddle(a: dict[str, Any], b: list[Any]) -> str:
    return _meddle(a, b)


def test_a_tool_that_changes_its_arguments_changes_neither_the_report_nor_the_journal() -> None:
    """Found by a helper: tools got the call's own nested dicts and lists, so a tool that
    changed them rewrote the report's arguments and, for a two-phase tool, the intent its
    commit journaled (a restart then met arguments the model never wrote)."""
    said = {"a": {"x": 1}, "b": [1]}
    blocks = [block(name, **said) for name in ("r", "w", "tp")]
    effects = {"r": "read_only", "w": "write", "tp": "write", "routed": "write"}

    def check(report: inert.Report, journal: inert.MemoryJournal) -> None:
        assert [r.error for r in report.results] == [None] * len(report.results)
        assert [r.arguments for r in report.results] == [said] * len(report.results)
        assert [e.arguments for e in journal.entries()] == [said] * len(journal.entries())

    journal = inert.MemoryJournal()
    threads: dict[str, Any] = {"r": _meddle, "w": _meddle, "tp": _MeddlingPrepare()}
    check(run_turn(inert.Orchestrator(effects, threads, journal=journal, turn_key="t"), *blocks), journal)

    journal = inert.MemoryJournal()
    router = inert.Orchestrator(effects, lambda name, arguments: _meddle(**arguments), journal=journal, turn_key="t")
    check(run_turn(router, block("routed", **said)), journal)

    async def main(tools: dict[str, Any], journal: inert.MemoryJournal) -> inert.Report:
        orch = inert.AsyncOrchestrator(effects, tools, journal=journal, turn_key="t")
        await orch.draft(blocks)
        await orch.verify(len(blocks))
        return await asyncio.wait_for(orch.finish(strict=False), WATCHDOG)

    for tools in (
        {"r": _async_meddle, "w": _async_meddle, "tp": _AsyncMeddlingPrepare()},
        {"r": _meddle, "w": _meddle, "tp": _MeddlingPrepare()},
    ):
        journal = inert.MemoryJournal()
        check(asyncio.run(main(tools, journal)), journal)


class _FailingJournal(inert.MemoryJournal):
    """A journal whose outcome writes fail, as a full disk or a lock held too long would."""

    def complete(self, record: inert.DispatchRecord, status: str) -> None:
        raise OSError(28, "No space left on device")


def test_a_journal_that_cannot_record_an_outcome_leaves_the_call_in_doubt_and_says_so() -> None:
    orch = inert.Orchestrator(
        {"f": "write", "g": "write"}, {"f": lambda: 1, "g": lambda: 2}, journal=_FailingJournal(), turn_key="t"
    )
    report = run_turn(orch, block("f"), block("g"))
    for result in report.results:
        assert isinstance(result.error, inert.JournalError)
        assert "in doubt" in str(result.error) and "No space left" in str(result.error)


@pytest.mark.parametrize(
    ("limits", "exc", "words"),
    [
        ({"t": 0}, inert.InertValueError, "at least 1"),
        ({"t": -1}, inert.InertValueError, "at least 1"),
        ({"t": "2"}, inert.InertTypeError, "must be an int"),
        ({"t": True}, inert.InertTypeError, "must be an int"),
        ([("t", 1)], inert.InertTypeError, "map tool names"),
    ],
)
def test_bad_limits_are_refused_at_construction(limits: Any, exc: type, words: str) -> None:
    with pytest.raises(exc, match=words):
        inert.Orchestrator({"t": "write"}, {"t": lambda: 1}, limits=limits)


def test_a_tool_calling_its_own_orchestrator_gets_a_reentrancy_error() -> None:
    holder: dict[str, inert.Orchestrator] = {}

    def sneaky() -> None:
        holder["orch"].finish()

    orch = holder["orch"] = inert.Orchestrator({"sneaky": "write"}, {"sneaky": sneaky})
    report = run_turn(orch, block("sneaky"))
    error = report.results[0].error
    assert isinstance(error, inert.ReentrancyError) and "called back" in str(error)


def test_a_tool_closing_its_own_batch_gets_a_reentrancy_error() -> None:
    """close() was the one entry point a tool could call back into: it stopped the shared
    workers under every other sequence, whose reports could then never be had."""
    texts = [block("closer"), block("send", n=1)]
    holder: dict[str, inert.BatchOrchestrator] = {}

    def closer() -> None:
        holder["batch"].close()

    sent: list[int] = []

    def send(n: int) -> None:
        sent.append(n)

    batch = holder["batch"] = inert.BatchOrchestrator(
        {"closer": "write", "send": "write"}, {"closer": closer, "send": send}, vocab=inert.Vocabulary(texts)
    )
    batch.add(1, "s1")
    batch.add(2, "s2")
    batch.draft([1, 2], [[0], [1]])
    batch.verify([1, 2], [1, 1])
    [refused] = batch.finish(1, strict=False).results
    assert isinstance(refused.error, inert.ReentrancyError), repr(refused.error)
    assert [(r.name, r.error) for r in batch.finish(2).results] == [("send", None)] and sent == [1]
    batch.close()


def test_a_timed_out_tool_does_not_keep_the_process_alive() -> None:
    script = textwrap.dedent("""
        import threading, inert
        never = threading.Event()
        orch = inert.Orchestrator({"hang": inert.ToolSpec("write", timeout=0.1)}, {"hang": lambda: never.wait()})
        orch.draft(['<tool_call>{"name": "hang"}</tool_call>'])
        orch.verify(1)
        report = orch.finish(strict=False)
        assert isinstance(report.results[0].error, inert.ToolTimeoutError)
        print("finished")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "finished" in done.stdout, done.stderr


def test_timeouts_do_not_take_the_other_calls_capacity(release: threading.Event) -> None:
    """With one worker, a tool stuck past its deadline must not block the calls after it."""
    orch = inert.Orchestrator(
        {"hang": inert.ToolSpec("write", timeout=0.05, writes="k"), "ok": "read_only"},
        {"hang": release.wait, "ok": lambda: "ran"},
        max_workers=1,
    )
    report = run_turn(orch, block("hang"), block("ok"))
    assert isinstance(report.results[0].error, inert.ToolTimeoutError)
    assert report.results[1].result == "ran"


# -- misreports --


def test_a_coroutine_tool_is_refused_by_the_thread_orchestrator() -> None:
    async def write() -> None: ...

    with pytest.raises(inert.InertTypeError, match="AsyncOrchestrator"):
        inert.Orchestrator({"w": "write"}, {"w": write})

    class Callable:
        async def __call__(self) -> None: ...

    with pytest.raises(inert.InertTypeError, match="AsyncOrchestrator"):
        inert.Orchestrator({"w": "write"}, {"w": Callable()})


def test_a_plain_function_returning_a_coroutine_is_an_error_not_a_success() -> None:
    async def body() -> str:
        return "never"

    orch = inert.Orchestrator({"w": "write"}, {"w": lambda: body()})
    report = run_turn(orch, block("w"))
    error = report.results[0].error
    assert isinstance(error, inert.InertTypeError) and "awaitable" in str(error)


def test_a_tools_own_timeout_error_is_its_error_not_an_inert_timeout(tmp_path: Any) -> None:
    def slow_backend() -> None:
        raise TimeoutError("the backend timed out")

    orch = inert.Orchestrator(
        {"f": inert.ToolSpec("write", timeout=30)}, {"f": slow_backend}, journal=tmp_path / "j.sqlite", turn_key="t"
    )
    report = run_turn(orch, block("f"))
    error = report.results[0].error
    assert type(error) is TimeoutError and not isinstance(error, inert.ToolTimeoutError)
    (entry,) = inert.recover(tmp_path / "j.sqlite").completed
    assert entry.status == "error", "a tool's own timeout is a failure, not in doubt"


def test_an_async_tools_own_timeout_error_is_its_error() -> None:
    async def slow_backend() -> None:
        raise TimeoutError("the backend timed out")

    async def main() -> inert.Report:
        orch = inert.AsyncOrchestrator({"f": inert.ToolSpec("write", timeout=30)}, {"f": slow_backend})
        await orch.draft([block("f")])
        await orch.verify(1)
        return await orch.finish(strict=False)

    error = asyncio.run(main()).results[0].error
    assert type(error) is TimeoutError


def test_an_in_doubt_write_says_what_is_known(tmp_path: Any) -> None:
    journal = inert.SqliteJournal(tmp_path / "j.sqlite")
    key = inert.commit_key("t", [block("w")])
    record = inert.DispatchRecord(key, "w", {}, inert.EffectClass.WRITE, inert.Footprint(None, None), (0, 1), False)
    assert journal.begin(record, "t") is None  # another process took the key and never recorded an outcome
    orch = inert.Orchestrator({"w": "write"}, {"w": lambda: "ran"}, journal=journal, turn_key="t")
    error = run_turn(orch, block("w")).results[0].error
    journal.close()
    assert isinstance(error, inert.InDoubtError)
    assert "still running it or stopped" in str(error) and "crash" not in str(error)


# -- caller mistakes: an inert error, and nothing changed --


@pytest.mark.parametrize(
    ("kwargs", "exc", "words"),
    [
        ({"max_block_bytes": -1}, inert.InertValueError, "max_block_bytes"),
        ({"max_workers": 0}, inert.InertValueError, "max_workers must be at least 1"),
        ({"max_workers": 2.5}, inert.InertTypeError, "max_workers must be an int"),
        ({"turn_key": 7}, inert.InertTypeError, "turn_key"),
        ({"timeout": -1}, inert.InertValueError, "timeout"),
        ({"timeout": float("nan")}, inert.InertValueError, "timeout"),
        ({"tools": 5}, inert.InertTypeError, "tools must be a mapping"),
        ({"tools": {"f": 5}}, inert.InertTypeError, "a tool is a callable"),
    ],
)
def test_constructor_mistakes(kwargs: dict[str, Any], exc: type, words: str) -> None:
    with pytest.raises(exc, match=words):
        inert.Orchestrator({"f": "write"}, **kwargs)


def test_a_durable_journal_needs_a_turn_key_and_a_memory_turn_gets_a_unique_one(tmp_path: Any) -> None:
    with pytest.raises(inert.InertValueError, match="needs turn_key="):
        inert.Orchestrator({"f": "write"}, journal=tmp_path / "j.sqlite")
    a, b = inert.Orchestrator(), inert.Orchestrator()
    assert a.turn_key != b.turn_key and a.turn_key.startswith("turn-")


def test_a_directory_as_journal_or_trace_is_refused_and_nothing_is_left_open(tmp_path: Any) -> None:
    with pytest.raises(inert.JournalError, match="directory"):
        inert.Orchestrator({"f": "write"}, journal=tmp_path, turn_key="t")
    journal_path = tmp_path / "j.sqlite"
    with pytest.raises(inert.InertValueError, match="trace="):
        inert.Orchestrator({"f": "write"}, journal=journal_path, turn_key="t", trace=tmp_path)
    # The journal opened before the bad trace was closed: it can be removed and reopened at once.
    journal_path.unlink(missing_ok=True)


def test_an_async_orchestrator_used_from_a_second_loop_refuses_before_anything_changes() -> None:
    orch = inert.AsyncOrchestrator({"f": "write"}, {"f": lambda: 1})

    async def first() -> None:
        await orch.draft(["<tool_call>"])

    async def second() -> None:
        await orch.draft(['{"name": "f"}</tool_call>'])

    asyncio.run(first())
    before = (orch.stream.pending_len, orch.stream.ledger_len)
    with pytest.raises(inert.LoopError, match="event loop of its first call"):
        asyncio.run(second())
    assert (orch.stream.pending_len, orch.stream.ledger_len) == before


def test_a_typo_in_tools_is_warned_about() -> None:
    with pytest.warns(UserWarning, match="'get_wether' has a callable but no entry.*did you mean 'get_weather'"):
        inert.Orchestrator({"get_weather": "read_only"}, {"get_wether": lambda: 1})


def test_many_tiny_blocks_finish_and_every_call_settles() -> None:
    """Linear scheduling: thousands of calls with unknown footprints (each a barrier)."""
    n = 2000
    orch = inert.Orchestrator({}, {"x": lambda: None})
    text = block("x") * n
    pieces = [text[i : i + 37] for i in range(0, len(text), 37)]
    orch.draft(pieces)
    orch.verify(len(pieces))
    report = finish_within(orch)
    assert len(report.results) == n and all(r.error is None for r in report.results)
    assert report.violations == []
