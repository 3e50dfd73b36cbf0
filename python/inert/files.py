"""What a path the user gave is, before it is read or opened: a device never ends
(/dev/zero, /dev/urandom: reading it runs memory out), SQLite would block on a FIFO, and
opening a FIFO no program writes waits for ever."""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

__all__ = [
    "LONGEST_READ_WHOLE",
    "block_device",
    "cannot_read",
    "cannot_write",
    "endless",
    "open_to_read",
    "read_whole",
    "refused_to_read",
    "special_file",
    "unreadable",
    "unwritten_fifo",
]


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


def block_device(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a block device (a disk, a partition, /dev/loop0): a file written to
    it is written over whatever the disk holds, unlike a character device such as /dev/null."""
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


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


LONGEST_READ_WHOLE = 64 << 20
"""Bytes ``read_whole`` takes before it calls a file too long for what it should be (a TOML
table of effects or workloads is kilobytes): a sparse file of gigabytes was read whole into
memory, and ran it out."""


def refused_to_read(path: str | os.PathLike[str], what: str, fix: str) -> str | None:
    """Why ``path`` is not to be read as ``what`` before it is opened, or ``None``: it cannot be
    read (``cannot_read``), or it is a folder, a device or a socket (``endless``); ``fix`` says
    what to give instead. A FIFO is read (``open_to_read``)."""
    where = os.fspath(path)
    if (why := cannot_read(path)) is not None:
        return why
    if os.path.isdir(path):
        return f"{where} is a folder, not {what}: {fix}"
    if (kind := endless(path)) is not None:
        return f"{where} is {kind}, not {what}: {fix}"
    return None


def read_whole(path: str | os.PathLike[str], what: str) -> bytes:
    """The bytes of a file read whole, ``what`` it should be naming it in the refusals: a
    folder, a device or a socket (which never ends), a FIFO no program writes (it holds
    nothing; opened without waiting for a writer, ``open_to_read``), a file longer than
    ``LONGEST_READ_WHOLE``, and one that cannot be read (``cannot_read``).

    Raises:
        ValueError: ``path`` is one of those, with why (the caller raises its own error).
        OSError: it cannot be read otherwise.
    """
    where = os.fspath(path)
    if (why := refused_to_read(path, what, "give the path of a file")) is not None:
        raise ValueError(why)
    with open_to_read(path) as f:
        raw = f.read(LONGEST_READ_WHOLE + 1)
    if len(raw) > LONGEST_READ_WHOLE:
        raise ValueError(f"{where} is longer than {LONGEST_READ_WHOLE >> 20} MiB, too long for {what}")
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
    read permission, or a folder on the way that may not be searched) or symbolic links on
    the way loop; else ``None``. Only a regular file is opened, so a FIFO is never waited on."""
    try:
        mode = os.stat(path).st_mode
    except PermissionError as e:
        return e.strerror.lower() if e.strerror else "permission denied"
    except OSError as e:
        if e.errno == errno.ELOOP:  # exists() says False, and readers said no file was there
            return "too many levels of symbolic links: a link on the way points back to itself"
        return None  # missing: the reader says so
    except ValueError:  # a name no file can have: the reader says so
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


def cannot_read(path: str | os.PathLike[str]) -> str | None:
    """The one line that says ``path`` is there but cannot be read, and what to do, or
    ``None`` when it can (or is missing: the reader says so). The command line checks every
    path it reads with it first; the library's readers call it too, so both say the same.
    Only a regular file is opened, so a FIFO is never waited on."""
    why = unreadable(path)
    if why is None:
        return None
    fix = (
        "fix or remove the link"
        if why.startswith("too many levels")
        else "give this user read permission on it and search (x) permission on each folder above it, "
        "or run as a user who has them"
    )
    return f"{os.fspath(path)}: cannot be read ({why}); {fix}"


def cannot_write(path: str | os.PathLike[str]) -> str | None:
    """The one line that says a file cannot be written at ``path``, and what to do, or
    ``None`` when it can as far as can be told before writing: a folder, a FIFO, a socket
    or a device there, a symbolic link loop, or permissions that forbid the file (or, when
    it is missing, its folder). For a command that writes its output only at the end (a
    figure after a sweep), so that it refuses before the work, not after it."""
    where = os.fspath(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(folder) and not os.access(folder, os.W_OK | os.X_OK):
            return f"{where}: cannot be written (permission denied in {folder}); give a path in a folder you may write"
        return None  # a missing folder: the writer says so
    except (OSError, ValueError):
        why = unreadable(path)
        return None if why is None else f"{where}: cannot be written ({why})"
    if stat.S_ISDIR(mode):
        return f"{where} is a folder; give the path of a file in it"
    if (kind := special_file(path)) is not None:
        return f"{where} is {kind}, not a file to write; give the path of a file"
    if not os.access(path, os.W_OK):
        return f"{where}: cannot be written (permission denied); give a path you may write, or make it writable"
    return None
