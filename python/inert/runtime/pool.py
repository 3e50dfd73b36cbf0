"""Worker threads that never pin the interpreter, and one timer thread for
every call's deadline.

A thread cannot be killed: a call past its deadline keeps its worker until the
tool returns. The pool's workers are daemon threads, so such a worker never
keeps the process from exiting, and the pool starts a replacement so the
turn's other calls keep their capacity (`concurrent.futures`' workers are
joined at exit, which is what pinned the interpreter before).
"""

from __future__ import annotations

import heapq
import itertools
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

__all__ = ["Deadlines", "WorkerPool"]

_MAX_WAIT = min(threading.TIMEOUT_MAX, 86400.0)  # seconds: the timer looks again at least daily


class WorkerPool(Executor):
    """At most ``max_workers`` busy daemon threads (plus one per call abandoned
    past its deadline). Usable as an asyncio executor."""

    def __init__(self, max_workers: int, name: str = "inert-tool") -> None:
        self._tasks: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]] | None] = (
            queue.SimpleQueue()
        )
        self._lock = threading.Lock()
        self._limit = max_workers
        self._workers = 0
        self._idle = 0  # workers blocked waiting for a task
        self._pending = 0  # tasks queued and not yet taken
        self._closed = False
        self._name = name
        self._ids = itertools.count()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        call = (lambda: fn(*args, **kwargs)) if kwargs else fn
        with self._lock:
            if self._closed:
                raise RuntimeError("the worker pool is shut down")
            self._tasks.put((future, call, () if kwargs else args))
            self._pending += 1
            if self._pending > self._idle and self._workers < self._limit:
                self._spawn()
        return future

    def abandon_one(self) -> None:
        """A worker is stuck in a call past its deadline: allow one more, so the others keep their capacity."""
        with self._lock:
            self._limit += 1
            if self._pending > self._idle and not self._closed:
                self._spawn()

    def shutdown(self, wait: bool = False, *, cancel_futures: bool = False) -> None:
        """Stops the workers once they are idle; a stuck one exits when its call returns. Never joins."""
        del wait, cancel_futures  # daemon workers are never joined: that is the point of this pool
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for _ in range(self._workers):
                self._tasks.put(None)

    def _spawn(self) -> None:
        self._workers += 1
        threading.Thread(target=self._work, name=f"{self._name}-{next(self._ids)}", daemon=True).start()

    def _work(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            task = self._tasks.get()
            with self._lock:
                self._idle -= 1
                if task is None:
                    self._workers -= 1
                    return
                self._pending -= 1
            future, fn, args = task
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:  # noqa: BLE001 - the submitter reads it from the future
                    future.set_exception(exc)
            # An idle worker holds nothing of its last task (a finished call, its turn, its result).
            del task, future, fn, args


class Deadlines:
    """One daemon thread that calls each callback at its deadline (``time.monotonic``).

    ``add`` returns a handle; ``cancel`` drops a callback that is no longer needed (a call
    that finished in time), so a long-lived engine does not keep every finished call, and
    what its callback holds, until the deadline would have passed."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int]] = []  # (deadline, handle); a cancelled handle stays until popped
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False

    def __len__(self) -> int:
        """The callbacks still armed."""
        with self._cond:
            return len(self._callbacks)

    def add(self, delay: float, callback: Callable[[], None]) -> int:
        with self._cond:
            handle = next(self._ids)
            if self._closed:
                return handle
            self._callbacks[handle] = callback
            heapq.heappush(self._heap, (time.monotonic() + delay, handle))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="inert-deadlines", daemon=True)
                self._thread.start()
            self._cond.notify()
            return handle

    def cancel(self, handle: int) -> None:
        """Its callback will not be called (a no-op if it was, or was cancelled)."""
        with self._cond:
            if self._callbacks.pop(handle, None) is None:
                return
            # Rebuilt once cancelled entries are most of the heap: amortised O(1) per cancel,
            # and the heap stays proportional to the deadlines still armed.
            if len(self._heap) > 64 and len(self._heap) > 2 * len(self._callbacks):
                self._heap = [entry for entry in self._heap if entry[1] in self._callbacks]
                heapq.heapify(self._heap)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._heap.clear()
            self._callbacks.clear()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    while self._heap and self._heap[0][1] not in self._callbacks:
                        heapq.heappop(self._heap)  # cancelled
                    if self._closed or (self._heap and self._heap[0][0] <= time.monotonic()):
                        break
                    # At most TIMEOUT_MAX: a longer wait (a timeout of 1e300 s) raises OverflowError,
                    # which killed this thread, and with it every later deadline of the engine.
                    wait = None if not self._heap else min(max(0.0, self._heap[0][0] - time.monotonic()), _MAX_WAIT)
                    self._cond.wait(wait)
                if self._closed:
                    return
                _, handle = heapq.heappop(self._heap)
                callback = self._callbacks.pop(handle)
            callback()  # outside the lock: a callback may take the runtime's lock
