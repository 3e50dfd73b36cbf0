"""What a path the user gave is, before it is read or opened: a device never ends
(/dev/zero, /dev/urandom: reading it runs memory out), SQLite would block on a FIFO, and
opening a FIFO no program writes waits for ever."""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

__all__ = ["endless", "open_to_read", "read_whole", "special_file", "unreadable", "unwritten_fifo"]


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
    FIFO ends when its writer closes it (``inert audit <(zcat trace.gz)``), so it is read,
    opened with ``open_to_read``."""
    kind = special_file(path)
    return kind if kind in ("a device", "a socket") else None


def open_to_read(path: str | os.PathLike[str]) -> BinaryIO:
    """Opens ``path`` to read, a FIFO without waiting for a writer: ``open()`` waits until
    a program opens it to write, for ever when none does. Read, a FIFO no program has open
    to write ends at once, empty: say so with ``unwritten_fifo``.

    Raises:
        OSError: it cannot be opened.
    """
    if special_file(path) != "a FIFO":
        return open(path, "rb")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.set_blocking(fd, True)  # a writer that is there: wait for what it writes
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_whole(path: str | os.PathLike[str], what: str) -> bytes:
    """The bytes of a file read whole, ``what`` it should be naming it in the refusals: a
    device or a socket never ends, and a FIFO no program writes holds nothing (opened
    without waiting for a writer, ``open_to_read``).

    Raises:
        ValueError: ``path`` is one of those, with why (the caller raises its own error).
        OSError: it cannot be read.
    """
    if (kind := endless(path)) is not None:
        raise ValueError(f"{os.fspath(path)} is {kind}, not {what}")
    with open_to_read(path) as f:
        raw = f.read()
    if not raw and special_file(path) == "a FIFO":
        raise ValueError(unwritten_fifo(path))
    return raw


def unwritten_fifo(path: str | os.PathLike[str]) -> str:
    """Why a FIFO ``open_to_read`` opened gave nothing: no program had it open to write."""
    return (
        f"{os.fspath(path)} is a FIFO that no program is writing to: nothing to read "
        "(start its writer first, or give the path of a file)"
    )


def unreadable(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be read when it is there and permissions forbid it (a file with no
    read permission, or a folder on the way that may not be searched); else ``None``.
    Only a regular file is opened, so a FIFO is never waited on."""
    try:
        mode = os.stat(path).st_mode
    except PermissionError as e:
        return e.strerror.lower() if e.strerror else "permission denied"
    except (OSError, ValueError):  # missing, or a name no file can have: the reader says so
        return None
    if not stat.S_ISREG(mode):
        return None
    try:
        with open(path, "rb"):
            return None
    except PermissionError as e:
        return e.strerror.lower() if e.strerror else "permission denied"
    except OSError:
        return None
