"""Where a warning points: the caller's line, however deep inside inert it is made."""

from __future__ import annotations

import os
import sys

__all__ = ["outside_stacklevel"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def outside_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` called by this function's caller that names
    the first frame outside the inert package. A fixed level was right for one path only:
    the same warning made under ``BatchOrchestrator.finish`` or a ``with`` block's exit
    named a line of inert, or ``sys:1``."""
    frame = sys._getframe(1)  # the function that warns: stacklevel 1
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back  # type: ignore[assignment]  # None ends the loop
        level += 1
    return level
