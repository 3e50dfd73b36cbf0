"""The outcomes a turn reports after each step, as one type."""

from __future__ import annotations

from ._core import BlockMalformed, CallClosed, CallCommitted, CallRetracted

__all__ = ["Outcome"]

Outcome = CallClosed | CallCommitted | CallRetracted | BlockMalformed
"""One outcome of ``draft``, ``verify`` or ``finish``: a call closed (speculative),
committed or retracted, or a malformed block accepted."""
