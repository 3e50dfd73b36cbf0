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
    "EffectTableError",
    "FormatSpecError",
    "IdempotencyConflictError",
    "InDoubtError",
    "InertError",
    "InertTypeError",
    "InertValueError",
    "MissingToolError",
    "PieceTypeError",
    "PolicyError",
    "ReplayedError",
    "SpeculativeEffectViolation",
    "StreamFinishedError",
    "StreamLimitError",
    "ToolTimeoutError",
    "TreeError",
    "UnknownFormatError",
    "UnknownSequenceError",
    "VerifyError",
    "VocabularyError",
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
    """Tokens were given to a turn after ``finish()``."""


class PieceTypeError(InertTypeError):
    """A token that is neither a ``str`` or ``bytes`` piece nor an ``int`` id."""


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


class EffectTableError(InertValueError):
    """An effect table entry that is not an effect class or a ``ToolSpec``."""


class PolicyError(InertValueError):
    """An unknown dispatch policy."""


class MissingToolError(InertError, LookupError):
    """Recorded (not raised) as the error of a call whose tool has no callable."""


class IdempotencyConflictError(InertError, ValueError):
    """Recorded (not raised) when a commit key already journaled comes back with other arguments."""


class InDoubtError(InertError, RuntimeError):
    """Recorded (not raised) for a write whose key the journal holds without an outcome:
    it may have run before a crash, so it is not run again. Resolve it with ``inert recover``."""


class ReplayedError(InertError, RuntimeError):
    """Recorded for a call whose key already has an error outcome in the journal: the
    tool is not run again, and the earlier error is returned."""


class ToolTimeoutError(InertError, TimeoutError):
    """Recorded (not raised) when a tool outlives its timeout."""


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
