"""What every journal is: the :class:`Journal` protocol, the entries it holds,
and the rules all back ends share (one call per key, outcomes as JSON).

The commit key is the journal's primary key, which makes it an idempotency
key (as with Stripe's and the IETF draft's): a key already journaled is never
dispatched again; its recorded outcome is returned instead, and the same key
with other arguments is a conflict.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..canonical import fingerprint
from ..errors import IdempotencyConflictError, JournalError, describe
from ..report import DispatchRecord

__all__ = ["ERROR", "OK", "STATUSES", "TIMEOUT", "Journal", "JournalEntry", "Recovery"]

OK, ERROR, TIMEOUT = "ok", "error", "timeout"
STATUSES = (OK, ERROR, TIMEOUT)
"""The outcomes a journal records: returned, raised, or outlived its timeout (in doubt)."""


@dataclass(frozen=True)
class JournalEntry:
    """One journaled dispatch. ``status`` is ``None`` until its outcome is recorded."""

    commit_key: str
    turn_key: str
    tool: str
    effect: str
    arguments: dict[str, Any]
    fingerprint: str
    intent_at: float
    """Wall-clock time (``time.time()``) the intent was committed."""
    status: str | None = None
    """``"ok"``, ``"error"``, ``"timeout"``, or ``None`` (no outcome)."""
    result: Any = None
    error: str | None = None
    finished_at: float | None = None
    worker: str | None = None
    """The worker that holds (or held) the key, for journals that many workers share."""
    lease_expires_at: float | None = None
    """When that worker's lease on the key runs out unless renewed (the database's
    clock, seconds since the epoch); ``None`` for journals without leases."""
    in_flight: bool = False
    """When the entry was read, a live worker held the key: no outcome yet, and
    its lease not expired. Such a call is running, not in doubt."""

    @property
    def in_doubt(self) -> bool:
        """Its effect may or may not have happened: no outcome and no live holder,
        or the call timed out."""
        return (self.status is None and not self.in_flight) or self.status == TIMEOUT


@dataclass(frozen=True)
class Recovery:
    """What a journal knows, after a crash or while workers run."""

    in_doubt: list[JournalEntry]
    """No outcome and no live holder (its process died), or timed out: may or may not have happened."""
    completed: list[JournalEntry]
    """Returned or raised, with the outcome recorded."""
    in_flight: list[JournalEntry] = field(default_factory=list)
    """Held by a live worker that has not recorded an outcome yet (shared journals only)."""
    prepared: list[JournalEntry] = field(default_factory=list)
    """Two-phase tools prepared and never committed or aborted (their ``commit_key`` is
    ``KEY/prepare/ATTEMPT``): staged state someone must commit or clean up."""


class Journal(Protocol):
    """Where dispatches are recorded durably. Called from worker threads."""

    def begin(self, record: DispatchRecord, turn_key: str) -> JournalEntry | None:
        """Records the intent of ``record`` before its tool runs (durably, when the
        journal is durable).

        Args:
            record: the call about to run; its commit key is the journal's key.
            turn_key: the turn the call belongs to.

        Returns:
            ``None`` when this call now holds the key and its tool must run; the earlier
            entry when the key was already journaled (the dispatcher replays its outcome,
            or re-runs a read or idempotent call that is in doubt).

        Raises:
            IdempotencyConflictError: the key was journaled with another tool or other arguments.
            InFlightError: (shared journals) another live worker holds the key and its outcome
                did not come in time.
            JournalError: the intent could not be recorded; the tool must not run.
        """

    def complete(self, record: DispatchRecord, status: str) -> None:
        """Records the outcome of ``record`` after its tool returned (or timed out).

        Journals that many workers share record it only under the claim the call ran
        under (its ``begin`` returned ``None``, or took a key in doubt over): a worker
        whose key another took over meanwhile must not replace that worker's outcome.

        Args:
            record: the call, with its ``result`` or ``error`` set.
            status: one of :data:`STATUSES`.

        Raises:
            StaleClaimError: (shared journals) this worker no longer holds the key's claim;
                nothing was recorded, and the holder's outcome stands.
            JournalError: the outcome could not be recorded; the journal holds the call in doubt.
        """

    def entries(self) -> list[JournalEntry]:
        """Every journaled dispatch, in intent order.

        Raises:
            JournalError: the journal could not be read.
        """

    def lookup(self, commit_key: str) -> JournalEntry | None:
        """The entry of ``commit_key``, or ``None``, without claiming it (a two-phase
        tool asks before it prepares, so a key already committed never prepares again).

        Raises:
            JournalError: the journal could not be read.
        """


def new_entry(record: DispatchRecord, turn_key: str) -> JournalEntry:
    """The intent of ``record``, stamped now, with no outcome."""
    return JournalEntry(
        record.commit_key,
        turn_key,
        record.name,
        record.effect.value,
        dict(record.arguments),
        fingerprint(record.arguments),
        time.time(),
    )


def same_call(prior: JournalEntry, record: DispatchRecord) -> JournalEntry:
    """Returns ``prior`` when ``record`` is the call it journaled.

    Raises:
        IdempotencyConflictError: the key was journaled for another tool or other arguments.
    """
    if prior.fingerprint != fingerprint(record.arguments) or prior.tool != record.name:
        raise IdempotencyConflictError(
            f"commit key {record.commit_key} was journaled for {prior.tool}({prior.arguments}) "
            f"and is now dispatched as {record.name}({record.arguments}); a key names one call"
        )
    return prior


def outcome_of(record: DispatchRecord, status: str) -> tuple[Any, str | None]:
    """The result and the error text a journal stores for ``record`` ended with ``status``."""
    error = None if record.error is None else describe(record.error)
    return (record.result if status == OK else None), error


def result_json(result: Any) -> str:
    """A result as the JSON text durable journals store (``repr`` for what JSON cannot spell).

    Raises:
        ValueError: two keys of one dict become the same JSON key (``1`` and ``"1"``: JSON
            keys are text), so the stored result would silently lose one; or what
            ``json.dumps`` refuses (a cycle, an int past the digit limit).
        TypeError, RecursionError: a key JSON cannot hold (a tuple); deep nesting.
    """
    text = json.dumps(result, default=repr)
    if "{" in text:  # only an object can repeat a key
        json.loads(text, object_pairs_hook=_unique_keys)
    return text


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object read back, refused if JSON gave two of its keys one spelling."""
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(
                    f"two keys of one dict are both the JSON key {key!r} (JSON keys are text, so "
                    "1 and '1' collide); return a dict whose keys stay distinct as text"
                )
            seen.add(key)
    return obj


def stored_text(value: object, what: str, commit_key: object, journal: str) -> str:
    """A text column a durable journal stored (``what`` of ``commit_key``), checked: SQLite
    keeps any type in any column, so a row changed outside inert may hold a BLOB or a number.

    Raises:
        JournalError: ``value`` is not text.
    """
    if isinstance(value, str):
        return value
    raise JournalError(
        f"{journal}: the stored {what} of {commit_key!r} is damaged (a {type(value).__name__}, not text): "
        "it was changed outside inert; restore the journal from a backup, or delete that entry"
    )


def stored_status(value: object, commit_key: object, journal: str) -> str | None:
    """An outcome's status as a durable journal stored it: ``None`` or one of :data:`STATUSES`.

    Raises:
        JournalError: anything else (a status inert never writes would replay as a failure).
    """
    if value is None:
        return None
    if isinstance(value, str) and value in STATUSES:
        return value
    raise JournalError(
        f"{journal}: the stored status of {commit_key!r} is damaged ({str(value)[:40]!r}, not one of "
        f"{', '.join(STATUSES)}): it was changed outside inert; restore the journal from a backup, or delete that entry"
    )


def stored_json(text: str | bytes, what: str, commit_key: str, journal: str) -> Any:
    """JSON text a durable journal stored (``what`` of ``commit_key``), read back.

    Raises:
        JournalError: the text is no JSON inert wrote: the database was changed outside inert.
    """
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # bad JSON or UTF-8, an int past Python's digit limit, deep nesting
        raise JournalError(
            f"{journal}: the stored {what} of {commit_key} is damaged ({describe(exc)[:120]}): "
            "it was changed outside inert; restore the journal from a backup, or delete that entry"
        ) from exc
