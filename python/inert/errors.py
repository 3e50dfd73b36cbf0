"""inert's exception hierarchy, declared once.

Every error the package raises derives from :class:`InertError`. Caller
mistakes also derive from the matching builtin, so ``except ValueError`` keeps
working. Bad model output never raises: it is reported as data.

The Rust core raises these classes by name; keep the names stable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .report import Report, Violation

__all__ = [
    "BatchError",
    "CancelledCallError",
    "EffectTableError",
    "FormatSpecError",
    "IdempotencyConflictError",
    "InDoubtError",
    "InFlightError",
    "InertError",
    "InertTypeError",
    "InertValueError",
    "JournalError",
    "LoopError",
    "MissingToolError",
    "PieceTypeError",
    "PolicyError",
    "ReasoningWarning",
    "RecordedError",
    "ReentrancyError",
    "ReplayedError",
    "SpeculativeEffectViolation",
    "StaleClaimError",
    "StreamFinishedError",
    "StreamLimitError",
    "ToolTimeoutError",
    "TraceWarning",
    "TreeError",
    "TurnAbandonedWarning",
    "UnknownFormatError",
    "UnknownSequenceError",
    "UnstorableResultError",
    "VerifyError",
    "VocabularyError",
    "closest_name",
    "describe",
]


class InertError(Exception):
    """Base of every error inert raises."""


class InertValueError(InertError, ValueError):
    """A call was given a value it cannot use."""


class InertTypeError(InertError, TypeError):
    """A call was given an object of the wrong type."""


class VerifyError(InertValueError):
    """``verify(n)`` with a negative ``n`` or more tokens than are pending."""


class UnknownFormatError(InertValueError):
    """A tool-call format name inert does not know; the message lists the known ones."""


class FormatSpecError(InertValueError):
    """A custom format description that cannot be used; the message says which field."""


class VocabularyError(InertValueError):
    """A token id that the stream's vocabulary does not hold, or a bad vocabulary entry."""


class StreamLimitError(InertValueError):
    """A turn grew past what the core addresses (4 GiB of text)."""


class StreamFinishedError(InertError, RuntimeError):
    """Tokens were given to a turn after ``finish()``, or a ``BatchOrchestrator`` was
    used after ``close()``."""


class TreeError(InertValueError):
    """A token tree whose parents or verified path do not describe a tree, or a tree
    mixed with a linear draft (``draft`` or ``verify`` while a tree awaits ``verify_path``)."""


class BatchError(InertValueError):
    """A batch call whose arguments do not fit together: shapes that disagree, a
    sequence added twice or named twice in one call."""


class UnknownSequenceError(BatchError, KeyError):
    """A batch call naming a sequence the batch does not hold."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class PieceTypeError(InertTypeError):
    """A token that is neither a ``str`` or ``bytes`` piece nor an ``int`` id."""


class EffectTableError(InertValueError):
    """An effect table entry that is not an effect class or a ``ToolSpec``."""


class PolicyError(InertValueError):
    """An unknown dispatch policy."""


class MissingToolError(InertError, LookupError):
    """Recorded (not raised) as the error of a call whose tool has no callable."""


class IdempotencyConflictError(InertError, ValueError):
    """Recorded (not raised) when a commit key already journaled comes back with other arguments."""


class InDoubtError(InertError, RuntimeError):
    """Recorded (not raised) for a write whose key the journal holds without an outcome
    and no live holder it knows of: it may or may not have happened, so it is not run
    again. Resolve it with ``inert recover``. (A key a live worker of a shared journal
    holds is an ``InFlightError`` instead.)"""


class InFlightError(InertError, RuntimeError):
    """Raised by a shared journal's ``begin`` (and recorded as the call's error) when
    another live worker holds the key and its outcome did not come within the
    journal's wait: the call may still complete there, so it was not run here."""


class JournalError(InertError):
    """The journal could not be opened, read or written: the message names it and
    says what to do. A call whose intent or outcome it could not record is in doubt."""


class StaleClaimError(JournalError):
    """Raised by a journal's ``complete`` when this worker no longer holds the key's
    claim: its lease lapsed (or, in a SQLite journal, its call read as in doubt) and
    another worker took the key over to run it again; or it never claimed the key. The
    outcome of whoever holds the claim stands, so this one was not recorded: the
    journal, and every replay of the key, keep the other worker's."""


class ReplayedError(InertError, RuntimeError):
    """Recorded for a call whose key already has an error outcome in the journal: the
    tool is not run again, and the earlier error is returned."""


class ToolTimeoutError(InertError, TimeoutError):
    """Recorded (not raised) when a tool outlives its timeout."""


class CancelledCallError(InertError, RuntimeError):
    """Recorded for a speculative call cancelled because its block was rejected."""


class LoopError(InertError, RuntimeError):
    """An ``AsyncOrchestrator`` used from an event loop other than the one of its first call."""


class ReentrancyError(InertError, RuntimeError):
    """A tool called back into the orchestrator that is running it (``draft``,
    ``verify`` or ``finish`` from inside its own tool would deadlock or corrupt the turn)."""


class ConcurrentUseError(InertError, RuntimeError):
    """Two threads stepped one ``Orchestrator``, ``BatchOrchestrator`` or ``StreamBatch`` at
    once: each is one per inference loop. The second call is refused before it changes anything."""


class UnstorableResultError(InertError, ValueError):
    """Recorded (not raised) when a tool returns a result the journal cannot store
    (a cycle, an integer too long for JSON, an object whose ``repr`` raises, two keys
    that JSON spells alike: ``1`` and ``"1"``)."""


class RecordedError(InertError, RuntimeError):
    """An error as a trace or another stack's dispatch log recorded it (its text)."""


class TraceWarning(UserWarning):
    """The trace file could not be written whole (a full disk, a closed file): the turn
    ran and its report is right, but the audit trail stops where the write failed."""


class TurnAbandonedWarning(UserWarning):
    """A turn was abandoned rather than finished: a ``BatchOrchestrator`` closed (or left
    its ``with`` block) with sequences still in it, or an orchestrator left its ``with``
    block without ``finish()``. Every call not yet committed was retracted (a prepared
    two-phase call aborted, journaled) and nothing new ran; ``close()`` returns the reports."""


class ReasoningWarning(UserWarning):
    """A reasoning closer arrived while the turn was not in reasoning: the chat template
    opened the section in the prompt, so calls before it may have been thoughts, and ran.
    Pass ``in_reasoning=True`` for this template. ``Report.notices`` lists the closers."""


class SpeculativeEffectViolation(InertError, RuntimeError):
    """A dispatched effect diverged from the accepted stream.

    Raised by ``Orchestrator.finish()``; ``report`` holds the whole
    reconciliation and ``violations`` what diverged.
    """

    def __init__(self, report: Report) -> None:
        self.report = report
        self.violations: list[Violation] = list(report.violations)
        lines = [v.message for v in self.violations]
        super().__init__(f"{len(lines)} speculative-effect violation(s):\n  " + "\n  ".join(lines))


def describe(error: BaseException) -> str:
    """``Type: message`` for any exception, even one whose ``str()`` raises."""
    try:
        text = str(error)
    except BaseException:  # noqa: BLE001 - a broken __str__ (even one raising SystemExit) must not break the turn
        text = f"<unprintable {type(error).__name__}>"
    return f"{type(error).__name__}: {text}"


def closest_name(name: str, known: list[str]) -> str | None:
    """The known name ``name`` is most likely a typo of, if any is close."""
    import difflib

    matches = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    return matches[0] if matches else None
