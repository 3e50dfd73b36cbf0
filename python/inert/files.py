"""What a path the user gave is, before it is read or opened: a device never ends
(/dev/zero, /dev/urandom: reading it runs memory out) and SQLite would block on a FIFO."""

from __future__ import annotations

import os
import stat

__all__ = ["endless", "special_file"]


def special_file(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a directory (a
    FIFO, a device, a socket), which SQLite would block on or misuse; else ``None``."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"


def endless(path: str | os.PathLike[str]) -> str | None:
    """``special_file``, for a file read whole: a device or a socket, which never ends; a
    FIFO ends when its writer closes it (``inert audit <(zcat trace.gz)``), so it is read."""
    kind = special_file(path)
    return kind if kind in ("a device", "a socket") else None
