"""The dispatch journal: an intent recorded before each call, its outcome after.

The orchestrator talks to a journal only through :class:`Journal`. Back ends:
:class:`MemoryJournal` (one process), :class:`SqliteJournal` (one host, a
file), :class:`PostgresJournal` (a fleet, a shared database with leases).
:func:`recover` lists what a journal holds, read-only.
"""

from __future__ import annotations

from ..canonical import canonical_arguments, fingerprint
from .address import is_dsn
from .memory import MemoryJournal
from .postgres import PostgresJournal
from .postgres_connection import redact
from .postgres_schema import SCHEMA_VERSION, init_schema
from .protocol import ERROR, OK, STATUSES, TIMEOUT, Journal, JournalEntry, Recovery
from .recover import recover
from .spec import OwnedJournal, init_journal, open_journal
from .sqlite import SqliteJournal

__all__ = [
    "ERROR",
    "OK",
    "SCHEMA_VERSION",
    "STATUSES",
    "TIMEOUT",
    "Journal",
    "JournalEntry",
    "MemoryJournal",
    "OwnedJournal",
    "PostgresJournal",
    "Recovery",
    "SqliteJournal",
    "canonical_arguments",
    "fingerprint",
    "init_journal",
    "init_schema",
    "is_dsn",
    "open_journal",
    "recover",
    "redact",
]
