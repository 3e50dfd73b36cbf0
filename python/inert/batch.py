"""Many sequences' turns at once, as a serving engine runs them: one ``StreamBatch``
(one crossing into the core per step for every sequence), and, for the tools, one
pool of workers, per-tool limits that hold across the sequences, and one journal."""

from __future__ import annotations

import operator
import os
import warnings
import weakref
from collections.abc import Mapping
from types import EllipsisType, TracebackType
from typing import Any, Self, SupportsIndex, cast

from . import _core
from .caller_frame import outside_stacklevel
from .effects import EffectLike, EffectTable
from .errors import (
    BatchError,
    InertTypeError,
    ReentrancyError,
    SpeculativeEffectViolation,
    StreamFinishedError,
    TurnAbandonedWarning,
)
from .inputs import Ids, Token, TokenRows, Tokens, reiterable
from .interrupts import InterruptsHeld
from .journal import Journal, OwnedJournal
from .one_caller import OneCaller
from .report import Report
from .runtime import ThreadEngine, ThreadRuntime, running_for
from .stream import ReleasedTuple
from .turn import Step, Tooling, Tools, TurnDriver, journal_for, strict_flag

__all__ = ["BatchOrchestrator"]

Vocab = _core.Vocabulary | Mapping[int, str | bytes] | list[str | bytes]


def _seq_id(seq: object) -> int:
    """``seq`` as the int the core keys it by; refused as the core refuses it (an
    InertTypeError, not the bare TypeError of ``int(None)``), and never rounded (``int(1.5)``)."""
    if isinstance(seq, bool) or not hasattr(type(seq), "__index__"):
        raise InertTypeError(f"seq: expected an int, got {type(seq).__name__}")
    return operator.index(cast("SupportsIndex", seq))  # checked above: it has __index__


def _release(engine: ThreadEngine, owned: OwnedJournal | None) -> None:
    """Stops a batch's workers and timer, and closes the journal it opened from a path once no
    tool still runs (one past its deadline still journals what it did)."""
    engine.close()
    if owned is not None:
        engine.after_tools(owned.close)


class BatchOrchestrator:
    """``Orchestrator`` for a batch of sequences, by the engine's sequence ids.

    ``add(seq, turn_key)`` starts a sequence's turn; ``draft(seqs, tokens, lengths)``
    and ``verify(seqs, n_accepted, corrections)`` advance many sequences in one call
    (token ids in ``(B, k)`` integer arrays, as ``StreamBatch`` takes them) and return
    ``{seq: Step}`` for the sequences whose step did something; ``finish(seq)`` ends a
    turn and returns its ``Report``. Every sequence gets exactly the gate of a lone
    ``Orchestrator``: writes wait for their own sequence's acceptance, and stream order
    holds within each sequence. Tools run on one pool of daemon workers shared by the
    sequences, ``limits`` hold across them, and one journal records every call. One per
    engine loop; not shared between threads (a step while another thread's is running
    raises ``ConcurrentUseError``, and changes nothing).

    Args:
        effects, tools, policy, timeout, max_block_bytes, schemas, reasoning, stream: as for ``Orchestrator``
            (with ``stream=True``, ``verify`` also returns the sequences that only released text).
        format: the tool-call format of every sequence.
        vocab: the model's ``inert.Vocabulary`` (or a mapping or sequence, copied once).
        max_workers: calls running at once, across every sequence.
        limits: tool name -> most calls of it running at once, across every sequence.
        journal: a ``Journal``, a SQLite path or a ``postgresql://`` URI, shared by every
            sequence (each turn's key keeps their calls apart). In memory by default, which
            keeps every call's entry, its result too, for the batch's life (about 10 kB per
            turn whose read returned 10 kB): a server that runs for long passes a path or a URI.

    Raises:
        As ``Orchestrator``.
    """

    def __init__(
        self,
        effects: EffectTable | Mapping[str, EffectLike] | None = None,
        tools: Tools | None = None,
        *,
        format: str | Mapping[str, Any] = "hermes",
        vocab: Vocab | None = None,
        schemas: Mapping[str, Mapping[str, Any]] | None = None,
        max_block_bytes: int = 1 << 20,
        policy: str = "read_eager",
        max_workers: int = 8,
        timeout: float | None = None,
        limits: Mapping[str, int] | None = None,
        journal: Journal | str | os.PathLike[str] | None = None,
        reasoning: tuple[str, str] | EllipsisType | None = ...,
        stream: bool = False,
    ) -> None:
        self._tooling = Tooling.build(
            effects, tools, policy=policy, timeout=timeout, limits=limits, max_workers=max_workers, threads_only=True
        )
        self._batch = _core.StreamBatch(
            format,
            vocab,
            schemas=schemas if schemas is not None else self._tooling.effects.schemas,
            max_block_bytes=max_block_bytes,
            reasoning=reasoning,
            stream=stream,
        )
        self._streaming = stream
        self.journal, self._owned = journal_for(journal)
        self._engine = ThreadEngine(self._tooling.workers, self._tooling.limits)
        # Run by close(), or when the batch is collected without it (every sequence finished,
        # close() never called): a forgotten batch kept an idle worker thread and, a journal
        # opened from a path, its file for ever.
        self._release = weakref.finalize(self, _release, self._engine, self._owned)
        self._turns: dict[int, TurnDriver] = {}
        self._unapplied: dict[int, list[Any]] = {}  # sequences whose drivers hold outcomes not yet applied
        self._ending: dict[int, _Ending] = {}
        """Turns whose ``finish`` was interrupted (a KeyboardInterrupt) while it waited for their
        calls: ``finish(seq)`` again, or ``close()``, waits for them and reports them."""
        self._closed = False
        self._one = OneCaller("BatchOrchestrator")
        self._shut = False  # the workers stopped and the journal closed: close() is over
        self._closing = False
        self._closed_reports: dict[int, tuple[Report, _Ending]] = {}  # made by a close() not returned yet

    def __len__(self) -> int:
        return len(self._turns)

    def __contains__(self, seq: object) -> bool:
        return seq in self._turns

    def add(self, seq: int | SupportsIndex, turn_key: str, *, in_reasoning: bool = False) -> None:
        """Starts the turn of sequence ``seq`` (the engine's non-negative int id);
        ``in_reasoning``: its prompt opened a reasoning section (a thinking template).

        Raises:
            BatchError: ``seq`` is already in the batch.
            InertTypeError: ``turn_key`` is not a str (every turn needs its own: it seeds the keys).
        """
        self._check_open()
        if not isinstance(turn_key, str):
            raise InertTypeError(f"turn_key must be a str, got {type(turn_key).__name__}")
        key = _seq_id(seq)
        if key in self._ending:
            raise BatchError(
                f"sequence {key}'s finish() was interrupted while it waited for its calls; "
                "call finish() on it again before adding it anew"
            )
        runtime = ThreadRuntime(
            self.journal, turn_key, ordered=self._tooling.policy != "eager_unsafe", engine=self._engine, seq=key
        )
        driver = TurnDriver(self._tooling, runtime)
        with InterruptsHeld():  # the core and the drivers hold the same sequences, whatever Ctrl-C
            self._batch.add(seq, turn_key, in_reasoning=in_reasoning)
            self._turns[key] = driver

    def draft(self, seqs: Ids, tokens: TokenRows, lengths: Ids | None = None) -> dict[int, Step]:
        """Drafts row ``i`` of ``tokens`` onto ``seqs[i]`` (see ``StreamBatch.draft``).

        Raises:
            As ``StreamBatch.draft``; nothing changes when it raises.
        """
        self._check_open()
        self._one.enter()
        try:
            with InterruptsHeld():  # see ``_receive``
                self._receive(self._batch.draft(seqs, tokens, lengths))
            return self._apply()
        finally:
            self._one.leave()

    def verify(self, seqs: Ids, n_accepted: Ids, corrections: Ids | None = None) -> dict[int, Step]:
        """Accepts ``n_accepted[i]`` of ``seqs[i]``'s pending tokens (see ``StreamBatch.verify``).

        Raises:
            As ``StreamBatch.verify``; nothing changes when it raises.
        """
        self._check_open()
        if self._streaming:
            seqs = reiterable(seqs)  # read again for what the verify released
        self._one.enter()
        try:
            with InterruptsHeld():
                self._receive(self._batch.verify(seqs, n_accepted, corrections))
            if not self._streaming:
                return self._apply()
            return self._apply(self._batch.take_released(seqs))
        finally:
            self._one.leave()

    def draft_tree(self, seq: int | SupportsIndex, tokens: Tokens, parents: Ids) -> Step:
        """``Orchestrator.draft_tree`` on sequence ``seq``."""
        self._check_open()
        self._one.enter()
        try:
            with InterruptsHeld():
                outcomes = self._batch.draft_tree(seq, tokens, parents)  # first: it refuses an unknown seq
                key = _seq_id(seq)
                self._receive({key: outcomes})
            return self._apply(only=key)[key]
        finally:
            self._one.leave()

    def verify_path(self, seq: int | SupportsIndex, path: Ids, correction: Token | None = None) -> Step:
        """``Orchestrator.verify_path`` on sequence ``seq``."""
        self._check_open()
        self._one.enter()
        try:
            with InterruptsHeld():
                outcomes = self._batch.verify_path(seq, path, correction)
                key = _seq_id(seq)
                self._receive({key: outcomes})
            released = self._released_of(key)
            return self._apply(None if released is None else {key: released}, only=key)[key]
        finally:
            self._one.leave()

    def finish(self, seq: int | SupportsIndex, *, strict: bool = True) -> Report:
        """Ends sequence ``seq``'s turn: waits for its calls (only its own) and reconciles
        them, and frees its slot for a new sequence. If the wait is interrupted (a
        KeyboardInterrupt), the calls go on: ``finish(seq)`` again waits and reports, and
        ``close()`` waits for them.

        Raises:
            UnknownSequenceError: ``seq`` is not in the batch.
            SpeculativeEffectViolation: anything diverged (``strict``).
        """
        self._check_open()
        strict = strict_flag(strict)
        key = _seq_id(seq)
        ending = self._ending.get(key)
        if ending is None:
            notices = self._batch.notices(seq)  # the verifies committed them; finish forgets them
            # Held as ending before the core forgets the turn: an interrupt from here on
            # leaves it where finish(seq) again and close() find it.
            ending = self._ending[key] = _Ending(self._turns[key], notices)
        self._turns.pop(key, None)  # if an interrupt came between holding it and this
        self._unapplied.pop(key, None)  # the end applies them
        if ending.tail is None and key in self._batch:
            with InterruptsHeld():  # the end's outcomes reach the driver whatever Ctrl-C
                ending.driver.receive(self._batch.finish(seq))
                ending.released = self._released_of(seq) or ("", "", [])
        if ending.tail is None and ending.released is not None:
            ending.tail = ending.driver.end([], ending.released)
        elif ending.tail is None:
            # An interrupt cut the end of the turn short after the core gave it: what it did
            # not apply is gone, so the calls it left undecided (a prepared call waiting for
            # its fate) are retracted, as a close does, rather than waited for for ever.
            ending.retracted = ending.driver.abandon()
            ending.tail = Step(())
        ending.wait()
        report = ending.driver.report(False, ending.notices, ending.tail)  # made once: the driver keeps it
        failure = SpeculativeEffectViolation(report) if strict and report.violations else None
        # Let go last, with no call left that a Ctrl-C could land in before the caller has the
        # report: one landing earlier leaves the turn to finish(seq) again. close() in another
        # thread may have taken it already.
        if key in self._ending:
            del self._ending[key]
        if failure is not None:
            raise failure
        return report

    def close(self) -> dict[int, Report]:
        """Ends the batch. A sequence still in it is abandoned: its pending tokens are
        rejected, every call not committed yet is retracted (a prepared two-phase call is
        aborted, journaled; an early read discarded), nothing new runs, and the calls still
        running are waited for (a discarded read too), up to their deadlines, as ``finish``
        waits, and so are the calls of a turn whose ``finish`` was interrupted. Then the shared
        workers stop and a journal opened from a path is closed; every later call raises
        ``StreamFinishedError``. If this wait is interrupted in turn, the calls still running
        keep the workers and the journal until they end, so each is journaled, and ``close()``
        again waits on.
        Leaving a ``with`` block, on an exception too, closes it.

        Returns:
            ``{seq: Report}`` for the sequences it abandoned, and for those whose ``finish`` was
            interrupted (empty when every turn was finished); a ``TurnAbandonedWarning`` says
            how many were abandoned, and what was retracted.

        Raises:
            ReentrancyError: a tool of this batch called it (its sequences still run).
        """
        self._check_not_in_tool()
        if self._shut or self._closing:  # over, or another thread is closing it
            return {}
        self._closed = True  # first: nothing new starts while the open turns are abandoned
        self._closing = True
        retracted = 0
        failure: BaseException | None = None
        try:
            for seq in list(self._turns):
                try:
                    retracted += self._abandon(seq)
                except BaseException as exc:  # noqa: BLE001 - every other turn is still abandoned; raised below
                    failure = failure or exc
            # A KeyboardInterrupt here stops the wait, not the calls: a close() again waits on.
            for seq, ending in list(self._ending.items()):
                try:
                    if ending.abandoned or ending.tail is None:
                        # Again, if an interrupt cut it short (each step is done once); and a
                        # finish cut short before its end of turn was applied: a close is no end.
                        self._abandon(seq)
                except Exception as exc:  # noqa: BLE001 - a turn that cannot be abandoned is not waited for
                    failure = failure or exc
                    self._ending.pop(seq, None)
                    continue
                ending.wait()
                try:
                    # Kept here until close() returns: one cut short by an interrupt after this
                    # report returns it with the rest when called again.
                    self._closed_reports[seq] = ending.driver.report(False, ending.notices, ending.tail), ending
                except Exception as exc:  # noqa: BLE001 - every other turn is still reported; raised below
                    failure = failure or exc
                self._ending.pop(seq, None)  # a finish(seq) in another thread may have taken it already
        finally:
            self._closing = False
            # Calls still running (the wait was interrupted) keep the workers, the timer and
            # the journal until they end, so each of them is journaled.
            if not self._ending and not self._turns:
                self._shut = True
                self._release()
        if failure is not None:
            raise failure
        reports = {seq: report for seq, (report, _) in self._closed_reports.items()}
        abandoned = [seq for seq, (_, ending) in self._closed_reports.items() if ending.abandoned]
        self._closed_reports = {}
        if abandoned:
            warnings.warn(
                TurnAbandonedWarning(
                    f"the BatchOrchestrator was closed with {len(abandoned)} sequence(s) still in it "
                    f"({', '.join(map(str, sorted(abandoned)))}): their turns were abandoned and {retracted} call(s) "
                    "not yet committed were retracted (prepared two-phase calls aborted); close() returns their "
                    "reports. finish(seq) each sequence first to end its turn"
                ),
                stacklevel=outside_stacklevel(),
            )
        return reports

    def _abandon(self, seq: int) -> int:
        """Ends ``seq``'s turn at a close: the slot is freed; the end-of-turn outcomes are not
        applied (a close is no end of turn: a block it would confirm never commits). Returns
        how many calls it retracted; ``close`` then waits for its calls. Held as ending first,
        and each step done once, so a close() interrupted here finishes it when called again."""
        ending = self._ending.get(seq)
        if ending is None:
            ending = self._ending[seq] = _Ending(self._turns[seq], self._batch.notices(seq), abandoned=True)
        self._turns.pop(seq, None)
        if seq in self._batch:
            self._batch.finish(seq)
            if self._streaming:
                self._batch.take_released([seq])  # what the client never got stays unsent
        if ending.retracted is None:
            ending.retracted = ending.driver.abandon()
        return ending.retracted

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def _released_of(self, seq: int | SupportsIndex) -> ReleasedTuple | None:
        """What ``seq``'s last step released for streaming (``None`` without streaming)."""
        return self._batch.take_released([seq]).get(_seq_id(seq)) if self._streaming else None

    def _receive(self, outcomes: Mapping[int, list[Any]]) -> None:
        """Hands each sequence's outcomes to its driver, to apply with ``_apply``. Called under
        ``InterruptsHeld`` with the core's step: a Ctrl-C landing as the core returns would lose
        them (the core went on; later steps would confirm calls never scheduled)."""
        turns = self._turns
        for seq, out in outcomes.items():
            turns[seq].receive(out)
        self._unapplied.update(outcomes)

    def _apply(self, released: Mapping[int, ReleasedTuple] | None = None, only: int | None = None) -> dict[int, Step]:
        """The step of every sequence whose outcomes were received and not yet applied (``only``:
        that sequence's), and of every one that released text. Every sequence's are received
        before any is applied: an interrupt while one is applied leaves it and the others to the
        next step, not lost."""
        turns, pending = self._turns, self._unapplied
        seqs = list(pending) if only is None else [only]
        if released is not None:
            seqs += [seq for seq in released if seq not in pending]
        steps: dict[int, Step] = {}
        for seq in seqs:
            turn = turns.get(seq)
            if turn is not None:  # else finished or closed meanwhile: its end applied them
                steps[seq] = turn.apply([], None if released is None else released.get(seq))
            pending.pop(seq, None)
        return steps

    def _check_open(self) -> None:
        """Refuses a call after ``close()`` (its workers are gone: a call could never
        run, and ``finish`` would wait for it forever) and a tool calling back in."""
        if self._closed:
            raise StreamFinishedError(
                "the BatchOrchestrator is closed (its workers are stopped): finish every "
                "sequence before close(), and make a new batch for new ones"
            )
        self._check_not_in_tool()

    def _check_not_in_tool(self) -> None:
        runtime = running_for()
        if isinstance(runtime, ThreadRuntime) and runtime.engine is self._engine:
            raise ReentrancyError("a tool called back into the batch that is running it")


class _Ending:
    """A turn ended in the core (by ``finish``, or abandoned by ``close``), waiting for its
    calls: what its report needs."""

    def __init__(self, driver: TurnDriver, notices: list[Any], *, abandoned: bool = False) -> None:
        self.driver = driver
        self.notices = notices
        self.abandoned = abandoned
        self.retracted: int | None = None  # the calls left undecided it retracted, once it did
        self.released: ReleasedTuple | None = None  # what the end released, once the core ended the turn
        self.tail: Step | None = None

    def wait(self) -> None:
        runtime = self.driver.runtime
        assert isinstance(runtime, ThreadRuntime)
        runtime.drain()
