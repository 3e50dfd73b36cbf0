"""Running tool calls as asyncio tasks: coroutine tools natively, plain
functions in a worker thread. A speculative read whose block is rejected is
cancelled if it is still running."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from typing import Any

from .dispatch import Dispatcher, Node, _State
from .errors import InertError
from .journal import Journal
from .telemetry import tool_span
from .trace import TraceWriter

__all__ = ["AsyncDispatcher", "CancelledCallError"]

_CANCEL = object()  # retracted before its task was created


class CancelledCallError(InertError, RuntimeError):
    """Recorded for a speculative call cancelled because its block was rejected."""


class AsyncDispatcher(Dispatcher):
    """Runs calls on the running event loop; journal writes go to a thread."""

    def __init__(self, journal: Journal, turn_key: str, *, ordered: bool = True,
                 limits: Mapping[str, int] | None = None, trace: TraceWriter | None = None) -> None:
        super().__init__(journal, turn_key, ordered=ordered, limits=limits, trace=trace)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._done: asyncio.Event | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Runs calls on ``loop`` (the loop of the first draft)."""
        if self._loop is None:
            self._loop, self._done = loop, asyncio.Event()
            self._done.set()

    async def drain(self) -> None:
        """Waits for every permitted call; a timed-out one counts as finished."""
        with self._cond:
            idle = self._in_flight == 0
        if not idle and self._done is not None:
            await self._done.wait()

    def permit(self, node: Node, *, early: bool) -> None:
        with self._cond:
            if node.state is _State.GATED and self._done is not None:
                self._done.clear()
        super().permit(node, early=early)

    def retract(self, node: Node) -> bool:
        started = super().retract(node)
        if started:  # a rejected speculative read: its result must never count
            if node.task is None:
                node.task = _CANCEL
            elif node.task is not _CANCEL and not node.task.done():
                node.task.cancel()
        return started

    def _idle(self) -> None:
        if self._done is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._done.set)

    def _launch(self, node: Node) -> None:
        # Called with the lock held, possibly from a worker thread (after a journal write).
        assert self._loop is not None, "bind() happens on the first draft"
        self._loop.call_soon_threadsafe(self._spawn, node)

    def _spawn(self, node: Node) -> None:
        cancel = node.task is _CANCEL
        node.task = asyncio.ensure_future(self._run(node))
        if cancel:
            node.task.cancel()

    async def _run(self, node: Node) -> None:
        result, error, owns_outcome = None, None, False
        begun = asyncio.ensure_future(asyncio.to_thread(self._begin, node))
        try:
            # Shielded: a cancel must not leave the journal not knowing whether it holds the intent.
            owns_outcome = await asyncio.shield(begun)
            if owns_outcome:
                with tool_span(node.record) as span:
                    result = span.result = await asyncio.wait_for(self._call(node), node.timeout)
            else:
                result, error = node.record.result, node.record.error
        except TimeoutError:
            await asyncio.to_thread(self._time_out, node)
            return
        except asyncio.CancelledError:
            owns_outcome = await _outcome_owner(begun)
            error = CancelledCallError(f"{node.record.name!r} was cancelled: its block was rejected")
        except Exception as exc:  # noqa: BLE001 - a tool's failure is its outcome, never the loop's
            error = exc
        await asyncio.to_thread(self._finish, node, result, error, owns_outcome)

    async def _call(self, node: Node) -> Any:
        kwargs = self._kwargs(node)
        tool = node.tool
        assert tool is not None
        if inspect.iscoroutinefunction(tool):
            return await tool(**kwargs)
        result = await asyncio.to_thread(tool, **kwargs)
        if inspect.isawaitable(result):
            return await result
        return result


async def _outcome_owner(begun: asyncio.Future[bool]) -> bool:
    """Whether the journal took this call's intent, once its write has finished."""
    try:
        return await begun
    except Exception:  # noqa: BLE001 - the journal refused it (a key conflict): nothing to complete
        return False
