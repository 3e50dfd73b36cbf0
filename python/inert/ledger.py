"""A token's state in the ledger, as ``TokenStream.token_state`` reports it.

The Rust core keeps the states in bitsets; this is their public name. Declared here,
in Python, so that the core hands out these very members (looked up once and cached)
and a member still equals the string the call used to return."""

from __future__ import annotations

import enum

__all__ = ["TokenState"]


class TokenState(enum.StrEnum):
    """Where one drafted token stands: verification has not reached it, it was accepted, or it was
    rejected. A ``str``: each member equals its value (``TokenState.ACCEPTED == "accepted"``), and
    ``str()``/``format()`` give the value, as the plain strings returned before did."""

    UNDECIDED = "undecided"
    """Drafted; verification has not reached it yet."""
    ACCEPTED = "accepted"
    """Verified (or a correction): part of the stream for good."""
    REJECTED = "rejected"
    """Discarded by verification: it can have no effect."""
