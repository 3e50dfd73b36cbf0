"""The real gate and scheduler, with calls run on virtual time against a `World`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..dispatch import Dispatcher, Node
from ..journal import MemoryJournal
from ..orchestrator import _Gate
from .clock import VirtualLoop
from .world import SimTool, World

__all__ = ["SimOrchestrator", "VirtualDispatcher"]


class VirtualDispatcher(Dispatcher):
    """Starts a call at the current virtual time and finishes it ``duration`` later:
    reads observe the world when they start, effects land when they finish."""

    def __init__(self, loop: VirtualLoop, world: World, tools: Mapping[str, SimTool], seed: int, *,
                 turn_key: str, ordered: bool) -> None:
        super().__init__(MemoryJournal(), turn_key, ordered=ordered)
        self.clock = lambda: loop.now
        self._loop, self._world, self._sim, self._seed = loop, world, tools, seed

    def _launch(self, node: Node) -> None:
        self._loop.at(self._loop.now, lambda: self._start_call(node))

    def _start_call(self, node: Node) -> None:
        owns_outcome = self._begin(node)
        record = node.record
        tool = self._sim.get(record.name)
        if not owns_outcome or tool is None:
            self._finish(node, record.result, record.error if tool else KeyError(record.name), owns_outcome)
            return
        key = str(record.arguments.get(tool.key, ""))
        result: Any = self._world.read(self._loop.now, key) if tool.kind == "read" else None

        def finish() -> None:
            # An effect lands when its call finishes, discarded or not: that is what an orphan is.
            value = result if tool.kind == "read" else self._world.apply(tool, record.arguments, self._loop.now)
            self._finish(node, value, None, owns_outcome)

        self._loop.at(self._loop.now + tool.duration(self._seed, record.arguments), finish)

    def drain(self) -> None:
        self._loop.run()


class SimOrchestrator(_Gate):
    """The gate of ``Orchestrator`` on virtual time: the same scanner, effect table,
    scheduling, journal and reconciliation; only the clock and the tools are simulated."""

    def __init__(self, tools: Mapping[str, SimTool], loop: VirtualLoop, world: World, seed: int, **kwargs: Any) -> None:
        self._sim = (tools, loop, world, seed)
        super().__init__({n: t.spec() for n, t in tools.items()}, {}, **kwargs)

    def _make_dispatcher(self, *, max_workers: int, ordered: bool, limits: dict[str, int]) -> Dispatcher:
        tools, loop, world, seed = self._sim
        return VirtualDispatcher(loop, world, tools, seed, turn_key=self.turn_key, ordered=ordered)

    def draft(self, tokens: list[str]) -> None:
        self._draft(tokens)

    def verify(self, n: int, correction: str | None) -> None:
        self._verify(n, correction)

    def finish(self) -> Any:
        self._end()
        assert isinstance(self._dispatcher, VirtualDispatcher)
        self._dispatcher.drain()
        return self._report(strict=False)
