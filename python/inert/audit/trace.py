"""JSONL traces of a turn: what was drafted and verified, every outcome of the
turn (calls closed, committed, retracted; malformed blocks), every dispatch and
its result. Schema ``inert.trace/2`` (see ``docs/trace.md``), enough to rebuild
both the dispatched stream and the accepted stream; ``inert audit`` reads it
back, from inert or from any stack that writes the schema."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from typing import IO, Any

from .._core import BlockMalformed
from ..errors import describe
from ..outcomes import Outcome
from ..report import DispatchRecord

__all__ = ["SCHEMA", "TraceWriter", "check_appendable", "read_trace"]

SCHEMA = "inert.trace/2"


def _printable(value: Any) -> str:
    """What a trace writes for a value JSON cannot hold: its repr, or its type when even that fails."""
    try:
        return repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not break the trace
        return f"<{type(value).__name__}>"


def _token(t: Any) -> str | int:
    if isinstance(t, bytes):
        return t.decode("utf-8", errors="backslashreplace")
    if isinstance(t, str):
        return t
    return int(t)  # an int, or a numpy integer


class TraceWriter:
    """Appends one turn's events to a JSONL file; safe to call from worker threads.

    Times (``t``) are ``time.perf_counter()`` seconds: one monotonic clock per process,
    so start and finish times of one turn compare.
    """

    def __init__(self, path: str | os.PathLike[str], turn: str, *, results: bool = False) -> None:
        self._file: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self._lock = threading.Lock()
        self.failure: str | None = None
        """Why the trace stopped being written, if it did."""
        self._turn = turn
        self._results = results

    def emit(self, event: str, t: float | None = None, **fields: Any) -> None:
        """Appends one event. Never raises: a value that cannot be written is written as
        its type name, and a file that cannot be written is noted in ``failure``."""
        row = {"v": SCHEMA, "turn": self._turn, "event": event, "t": time.perf_counter() if t is None else t, **fields}
        try:
            line = json.dumps(row, ensure_ascii=False, default=_printable)
        except (ValueError, TypeError, RecursionError) as e:  # cycles, huge ints, deep nesting
            line = json.dumps({**{k: row[k] for k in ("v", "turn", "event", "t")}, "unwritable": str(e)})
        with self._lock:
            if self._file.closed or self.failure is not None:
                return
            try:
                self._file.write(line + "\n")
            except (OSError, ValueError) as e:
                self.failure = f"the trace stopped at a write that failed: {e}"

    def draft(self, tokens: Any) -> None:
        """A ``draft`` event: the window's tokens (pieces as text, ids as ints)."""
        self.emit("draft", tokens=[_token(t) for t in tokens])

    def verify(self, n: Any, correction: Any) -> None:
        """A ``verify`` event: how many pending tokens were accepted, and the correction."""
        self.emit("verify", n_accepted=int(n), correction=None if correction is None else _token(correction))

    def outcome(self, o: Outcome) -> None:
        """One core outcome, under its kind: where its block sits, its call or what was wrong, its key."""
        if isinstance(o, BlockMalformed):
            m = o.malformed
            self.emit(
                o.kind,
                block=m.block,
                index=m.index,
                span=list(m.span),
                commit_key=m.commit_key,
                kind=m.kind,
                offset=m.offset,
                reason=m.reason,
            )
            return
        c = o.call
        fields: dict[str, Any] = {
            "block": c.block,
            "index": c.index,
            "span": list(c.span),
            "name": c.name,
            "arguments": c.arguments,
            "commit_key": c.commit_key,
        }
        if c.call_id is not None:
            fields["call_id"] = c.call_id
        self.emit(o.kind, **fields)

    def dispatch(self, r: DispatchRecord) -> None:
        """A call handed to its tool, at the time it started: the audit pairs it with the accepted stream."""
        self.emit(
            "dispatch",
            t=r.started,
            commit_key=r.commit_key,
            name=r.name,
            arguments=r.arguments,
            effect=r.effect.value,
            footprint=r.footprint.as_json(),
            span=list(r.span),
            early=r.early,
        )

    def result(self, r: DispatchRecord) -> None:
        """How a dispatched call ended, at the time it finished (its value only with ``results=True``)."""
        fields: dict[str, Any] = {
            "commit_key": r.commit_key,
            "ok": r.error is None,
            "error": None if r.error is None else describe(r.error),
            "timed_out": r.timed_out,
            "replayed": r.replayed,
        }
        if r.phase is not None:
            fields["phase"] = r.phase  # a two-phase tool: the phase it ended in (commit, abort, or prepare)
        if self._results:
            fields["result"] = r.result
        self.emit("result", t=r.finished, **fields)

    def discard(self, r: DispatchRecord) -> None:
        """An early read whose block was rejected: its result was thrown away."""
        self.emit("discard", commit_key=r.commit_key, name=r.name)

    def close(self) -> None:
        """Closes the file; later events are dropped. A failure to close is noted in ``failure``."""
        with self._lock:
            try:
                self._file.close()
            except OSError as e:
                self.failure = self.failure or f"the trace could not be closed: {e}"


_LONGEST_LINE = 256 << 20
"""Bytes of one event line ``read_trace`` takes before it calls the file no trace: an event
holds at most a block's arguments, and a file with no line breaks (/proc/self/pagemap, a
sparse file) was read whole into memory."""


def read_trace(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """The events of a trace file, with their line numbers, in order.

    Raises:
        InertValueError: a line is not UTF-8, not JSON (or nests too deeply, or holds a
            number too long to read), or not an event of this schema, or longer than 256 MiB;
            ``path`` is a folder, a device or a socket, or a FIFO no program writes to, or
            cannot be read (permissions, a symbolic link loop).
        OSError: the file cannot be read.
    """
    from ..errors import InertValueError
    from ..files import open_to_read, refused_to_read, special_file, unwritten_fifo

    where = os.fspath(path)
    if (why := refused_to_read(path, "a trace file", f"give the path of an {SCHEMA} trace")) is not None:
        raise InertValueError(why)
    n = 0
    with open_to_read(path) as f:
        for n, raw in enumerate(iter(lambda: f.readline(_LONGEST_LINE + 1), b""), 1):
            if len(raw) > _LONGEST_LINE:
                raise InertValueError(
                    f"{where}:{n}: a line longer than {_LONGEST_LINE >> 20} MiB is no {SCHEMA} event "
                    "(a file with no line breaks, or not a trace)"
                )
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InertValueError(f"{where}:{n}: not UTF-8 (byte {e.start} of the line)") from None
            try:
                row = json.loads(line)
            except RecursionError:
                raise InertValueError(f"{where}:{n}: the JSON nests too deeply to read") from None
            except ValueError as e:  # JSONDecodeError, and integers past the digit limit
                raise InertValueError(f"{where}:{n}: not JSON ({str(e)[:120]})") from None
            if not isinstance(row, dict) or row.get("v") != SCHEMA:
                version = row.get("v") if isinstance(row, dict) else None
                raise InertValueError(f'{where}:{n}: not an {SCHEMA} event (its "v" is {version!r})')
            yield n, row
    if n == 0 and special_file(path) == "a FIFO":
        raise InertValueError(unwritten_fifo(where))


def check_appendable(path: str | os.PathLike[str]) -> None:
    """Refuses a path a trace must not be appended to, before anything is written: a FIFO
    or a socket (no file to append to), a block device (a disk: the trace would be written
    over what it holds), a folder or a missing folder, a file that cannot be read (see
    ``files.cannot_read``), and a file that holds something other than JSON Lines events
    (a SQLite journal, a binary), which the trace's lines would corrupt. An empty file, a
    missing one (created) and a character device are fine: ``/dev/null`` is how a trace is
    thrown away on purpose; so is a trace of any schema version.

    Raises:
        InertValueError: ``path`` is one of those.
        OSError: the file cannot be read.
    """
    from ..errors import InertValueError
    from ..files import block_device, cannot_read, special_file

    where = os.fspath(path)
    kind = special_file(path)
    if kind in ("a FIFO", "a socket"):
        raise InertValueError(f"{where} is {kind}, not a file to append a trace to; give the path of a file")
    if block_device(path):
        raise InertValueError(
            f"{where} is a block device (a disk), not a file to append a trace to: the trace would be written "
            "over what the disk holds; give the path of a file (or /dev/null to throw the trace away)"
        )
    if kind is not None:
        return  # a character device: /dev/null throws the trace away
    if (why := cannot_read(path)) is not None:
        raise InertValueError(why)
    if os.path.isdir(path):
        raise InertValueError(f"{where} is a folder; give the path of a trace file in it")
    if not os.path.exists(path):
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise InertValueError(f"{where}: no such folder {folder}")
        return
    if (problem := _not_events(path)) is not None:
        raise InertValueError(
            f"{where} holds something other than a JSONL trace ({problem}); appending would corrupt it: "
            "give a new file, or a trace an earlier run wrote"
        )


def _not_events(path: str | os.PathLike[str]) -> str | None:
    """What shows that the file at ``path`` is no JSONL trace: its first line that is not
    blank is not a JSON object with an ``event``. ``None`` for a trace, or a blank file.
    A first byte that opens no object settles it unread (a binary with no line breaks)."""
    with open(path, "rb") as f:
        while chunk := f.read(4096):
            if head := chunk.lstrip():
                break
        else:
            return None
        if not head.startswith(b"{"):
            return "its first line is not a JSON object"
        f.seek(f.tell() - len(head))
        raw = f.readline(_LONGEST_LINE + 1)
    try:
        row = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "its first line is not JSON"
    if not isinstance(row, dict) or "event" not in row:
        return 'its first line is not a JSON object with an "event"'
    return None
