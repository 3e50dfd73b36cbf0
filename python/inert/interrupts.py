"""A Ctrl-C held off while inert's own bookkeeping runs on the main thread.

A KeyboardInterrupt can land between any two bytecodes of the thread that steps a
turn. Inside a runtime's command (the scheduler's chains and slots, a call's launch
and its hand-over to a worker or a task) that leaves the bookkeeping half made: the
scheduler counts a call running that nothing runs, and finish() waits for it for
ever. ``InterruptsHeld`` makes each command one step that a Ctrl-C cannot split: a
SIGINT arriving meanwhile is noted by a handler of its own, and the handler it
replaced is called with it once the command is done (by default it raises the
KeyboardInterrupt there, where the caller can retry the step).

Only the main thread receives signals, so elsewhere it does nothing. It never holds
off a wait on a tool: only bookkeeping that ends by itself runs under it.
"""

from __future__ import annotations

# The C module: ``signal``'s wrappers turn every handler into an enum, ten times the cost.
import _signal  # type: ignore[import-not-found]  # typeshed has no stub for the C module
import threading
from types import FrameType, TracebackType
from typing import Any

__all__ = ["InterruptsHeld"]

_MAIN = threading.main_thread().ident
_SIGINT = _signal.SIGINT
_caught: tuple[int, FrameType | None] | None = None
"""The SIGINT that arrived while held, until it is handed to the handler it found."""


def _note(signum: int, frame: FrameType | None) -> None:
    global _caught  # the main thread's only: a handler has nowhere else to say it
    if _caught is None:
        _caught = (signum, frame)


class InterruptsHeld:
    """``with InterruptsHeld():`` a SIGINT is acted on at the end of the block, not inside it.
    Nested blocks hold it until the outermost ends."""

    __slots__ = ("_previous",)

    def __enter__(self) -> None:
        self._previous: Any = None
        if threading.get_ident() != _MAIN:
            return
        previous = _signal.getsignal(_SIGINT)
        if previous is _note or not callable(previous):
            return  # held already by an outer block, or no Python handler could raise in it
        # Checks pending signals first, under the handler it found: one that arrived just
        # before is raised here, before anything is done.
        _signal.signal(_SIGINT, _note)
        self._previous = previous

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        global _caught
        previous = self._previous
        if previous is None:
            return
        _signal.signal(_SIGINT, previous)  # a pending signal is noted first, under ``_note``
        caught, _caught = _caught, None
        if caught is not None:
            previous(*caught)  # the handler it found: by default, KeyboardInterrupt, here
