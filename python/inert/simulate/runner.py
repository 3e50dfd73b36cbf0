"""inert's own turn (token stream, gate, stream-order scheduler, journal and
reconciliation) with its calls run on virtual time against a `World`: only the
clock and the tools are simulated."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from ..audit.trace import TraceWriter
from ..errors import CancelledCallError
from ..gate import Dispatch
from ..journal import Journal
from ..orchestrator import Session
from ..report import DispatchRecord, Report
from ..runtime import CallNode, CallRun, CallScheduler, CallState, Fate, Invocation, lifecycle, stored_outcome
from .clock import VirtualLoop
from .world import SimTool, World

__all__ = ["SimOrchestrator", "VirtualRuntime"]


class VirtualRuntime:
    """Starts a call at the current virtual time and finishes it ``duration`` later:
    reads observe the world when they start, effects land when they finish."""

    def __init__(  # noqa: PLR0917
        self,
        loop: VirtualLoop,
        world: World,
        tools: Mapping[str, SimTool],
        seed: int,
        journal: Journal,
        turn_key: str,
        *,
        ordered: bool,
        limits: dict[str, int],
        max_workers: int,
        trace: TraceWriter | None,
    ) -> None:
        del max_workers, trace  # virtual time has no threads, and the simulator keeps no trace
        self._loop, self._world, self._sim, self._seed = loop, world, tools, seed
        self._journal, self._turn_key = journal, turn_key
        self._scheduler = CallScheduler(ordered=ordered, limits=limits)
        self._log: list[CallRun] = []
        self.accepted_at: dict[str, float] = {}
        """Commit key -> the virtual time its block was accepted."""

    @property
    def turn_key(self) -> str:
        return self._turn_key

    def schedule(self, dispatch: Dispatch, invocation: Invocation | None) -> CallNode:
        return self._scheduler.add(dispatch, CallRun(dispatch, invocation))

    def run_early(self, node: CallNode) -> None:
        self._start(self._scheduler.permit(node, early=True))

    def confirm(self, node: CallNode) -> None:
        self.accepted_at[node.dispatch.commit_key] = self._loop.now
        self._start(lifecycle.confirm(self._scheduler, node))

    def retract(self, node: CallNode) -> None:
        # A started call's effect still lands when it finishes: that is what an orphan is.
        self._start(lifecycle.retract(self._scheduler, node)[0])

    def after_tools(self, callback: Callable[[], None]) -> None:
        callback()  # virtual time: no tool outlives the turn

    def records(self) -> list[DispatchRecord]:
        return [run.record() for run in self._log]

    def drain(self) -> None:
        self._loop.run()

    def _start(self, nodes: list[CallNode]) -> None:
        for node in nodes:
            run: CallRun = node.owner
            if run.state is CallState.SCHEDULED:  # not a prepared two-phase call resuming for its second phase
                run.launch(node.early, self._loop.now)
                self._log.append(run)
            tool = self._sim.get(run.dispatch.name)
            step = self._phase if tool is not None and tool.two_phase else self._begin
            self._loop.at(self._loop.now, partial(step, node))

    def _phase(self, node: CallNode) -> None:
        """A two-phase tool's next phase: prepare (nothing changes), then commit (the effect
        lands at its end) or abort (nothing lands)."""
        run: CallRun = node.owner
        tool = self._sim[run.dispatch.name]
        arguments = run.dispatch.arguments
        phase = run.take_up_phase()
        if phase == "prepare":
            if run.already_committed(self._journal):  # its outcome is the commit on record; it never prepares again
                self._finish(node, run.result, run.error)
                return
            run.invoke()

            def prepared() -> None:
                run.stage(True)
                if run.fate is not Fate.UNDECIDED:
                    self._phase(node)
                else:
                    self._start(self._scheduler.prepared(node))

            self._loop.at(self._loop.now + tool.duration(self._seed, arguments, "prepare"), prepared)
        elif phase == "commit":
            run.begin(self._journal, self._turn_key)
            run.invoke()
            end = self._loop.now + tool.duration(self._seed, arguments)
            self._loop.at(end, lambda: self._finish(node, self._world.apply(tool, arguments, self._loop.now), None))
        else:
            self._finish(node, None, CancelledCallError(f"{run.dispatch.name!r} was prepared, then aborted"))

    def _begin(self, node: CallNode) -> None:
        run: CallRun = node.owner
        tool = self._sim.get(run.dispatch.name)
        run.take_up()
        if not run.begin(self._journal, self._turn_key) or tool is None:
            error = run.error if tool is not None else KeyError(run.dispatch.name)
            self._finish(node, run.result, error)
            return
        run.invoke()
        arguments = run.dispatch.arguments
        key = str(arguments.get(tool.key, ""))
        result: Any = self._world.read(self._loop.now, key) if tool.kind == "read" else None

        def finish() -> None:
            value = result if tool.kind == "read" else self._world.apply(tool, arguments, self._loop.now)
            self._finish(node, value, None)

        self._loop.at(self._loop.now + tool.duration(self._seed, arguments), finish)

    def _finish(self, node: CallNode, result: Any, error: BaseException | None) -> None:
        run: CallRun = node.owner
        run.settle(result, error, self._loop.now)
        stored_outcome(run, self._journal)
        self._start(self._scheduler.finish(node))


class SimOrchestrator:
    """The turn of ``Orchestrator`` on virtual time: the same scanner, effect table,
    gate, scheduling, journal and reconciliation; only the clock and the tools are simulated.

    Args:
        tools: the simulated tools by name.
        loop, world, seed: the virtual clock, the world the tools act on, and the seed of their latencies.
        **session: as for ``Orchestrator`` (``format``, ``turn_key``, ``policy``, ...).
    """

    def __init__(
        self, tools: Mapping[str, SimTool], loop: VirtualLoop, world: World, seed: int, **session: Any
    ) -> None:
        self._runtime: VirtualRuntime | None = None
        self.accepted_at: dict[str, float] = {}
        """Commit key -> the virtual time its block was accepted."""

        def build(journal: Journal, turn_key: str, **kwargs: Any) -> VirtualRuntime:
            self._runtime = VirtualRuntime(loop, world, tools, seed, journal, turn_key, **kwargs)
            self.accepted_at = self._runtime.accepted_at
            return self._runtime

        two_phase = frozenset(n for n, t in tools.items() if t.two_phase)
        self._s = Session({n: t.spec() for n, t in tools.items()}, None, runtime=build, two_phase=two_phase, **session)

    def draft(self, tokens: list[str]) -> None:
        """``Orchestrator.draft``, at the loop's current virtual time."""
        self._s.draft(tokens)

    def verify(self, n: int, correction: str | None) -> None:
        """``Orchestrator.verify``, at the loop's current virtual time."""
        self._s.verify(n, correction)

    def finish(self) -> Report:
        """Ends the turn, runs the virtual clock until every call is done, and reconciles
        (never strict: the sweep counts violations rather than raising on them)."""
        self._s.finish()
        assert self._runtime is not None
        self._runtime.drain()
        self._s.conclude()
        return self._s.hand_report(strict=False)
