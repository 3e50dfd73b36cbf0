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

``SignalsTold`` is the other half: while a coroutine tool runs on the loop, a Ctrl-C
raises its KeyboardInterrupt inside the tool's own frames, where it looked like one the
tool raised (its outcome). Held, Python's default handler is replaced by one that marks
the KeyboardInterrupt it raises (``from_signal``), so the runtime tells the two apart.
"""

from __future__ import annotations

# The C module: ``signal``'s wrappers turn every handler into an enum, ten times the cost.
import _signal  # type: ignore[import-not-found]  # typeshed has no stub for the C module
import threading
from types import FrameType, TracebackType
from typing import Any

__all__ = ["InterruptsHeld", "SignalsTold", "from_signal"]

_MAIN = threading.main_thread().ident
_SIGINT = _signal.SIGINT


class InterruptsHeld:
    """``with InterruptsHeld():`` a SIGINT is acted on at the end of the block, not inside it:
    each one that arrived is handed, in turn, to the handler the block found (a second Ctrl-C
    reaches asyncio's, which force-quits on it). Nested blocks hold it until the outermost ends."""

    __slots__ = ("_caught", "_previous")

    def __enter__(self) -> None:
        self._previous: Any = None
        if threading.get_ident() != _MAIN:
            return
        previous = _signal.getsignal(_SIGINT)
        if isinstance(getattr(previous, "__self__", None), InterruptsHeld) or not callable(previous):
            return  # held already by an outer block, or no Python handler could raise in it
        self._caught: list[tuple[int, FrameType | None]] = []
        # Checks pending signals first, under the handler it found: one that arrived just
        # before is raised here, before anything is done.
        _signal.signal(_SIGINT, self._note)
        self._previous = previous

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self._caught.append((signum, frame))

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        previous = self._previous
        if previous is None:
            return
        # A signal pending meanwhile is noted first, under ``_note``; one arriving after goes to
        # ``previous`` itself. The notes are this block's own: none is left for a later block.
        _signal.signal(_SIGINT, previous)
        for signum, frame in self._caught:
            previous(signum, frame)  # the handler it found: by default, KeyboardInterrupt, here


_FROM_SIGNAL = "_inert_from_sigint"


def _default_int_handler_told(signum: int, frame: FrameType | None) -> None:
    """Python's default SIGINT handler, its KeyboardInterrupt marked as the signal's."""
    interrupt = KeyboardInterrupt()
    setattr(interrupt, _FROM_SIGNAL, True)
    raise interrupt


def from_signal(exc: BaseException) -> bool:
    """Whether ``exc`` is the KeyboardInterrupt of a SIGINT that arrived under ``SignalsTold``."""
    return getattr(exc, _FROM_SIGNAL, False) is True


class SignalsTold:
    """``with SignalsTold():`` (on the main thread, nested and interleaved across tasks) a SIGINT
    under Python's default handler raises a KeyboardInterrupt that ``from_signal`` tells from one
    code raised. Any other handler (asyncio.run's, the caller's own) is left alone: it raises
    nothing inside a tool. The last block out puts the default back, unless the handler was
    changed meanwhile."""

    __slots__ = ("_held",)
    _holders = 0

    def __enter__(self) -> None:
        self._held = threading.get_ident() == _MAIN
        if not self._held:
            return
        cls = SignalsTold
        cls._holders += 1
        if cls._holders == 1 and _signal.getsignal(_SIGINT) is _signal.default_int_handler:
            _signal.signal(_SIGINT, _default_int_handler_told)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if not self._held:
            return
        cls = SignalsTold
        cls._holders -= 1
        if cls._holders == 0 and _signal.getsignal(_SIGINT) is _default_int_handler_told:
            _signal.signal(_SIGINT, _signal.default_int_handler)
