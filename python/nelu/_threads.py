"""The threads that share a batch call's states (``workers=``, docs/python.md "Threads")."""

from __future__ import annotations

import os
import queue
import threading
from typing import Callable


class _Helpers:
    """Daemon threads that run tasks beside the calling thread: started by the first call that needs
    them and then kept, blocked on a queue, so that a call does not wait for a thread to start (on
    a loaded machine that can take milliseconds)."""

    def __init__(self) -> None:
        self._tasks: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._threads = 0
        self._lock = threading.Lock()

    def start(self, task: Callable[[], None], count: int) -> None:
        """Run `task` in `count` helper threads, as soon as they are free."""
        with self._lock:
            while self._threads < count:
                threading.Thread(target=self._serve, name=f"nelu-worker-{self._threads}", daemon=True).start()
                self._threads += 1
        for _ in range(count):
            self._tasks.put(task)

    def _serve(self) -> None:
        while True:
            self._tasks.get()()


_helpers = _Helpers()


def _forked() -> None:
    """A child process has none of its parent's threads: it starts helpers of its own."""
    global _helpers
    _helpers = _Helpers()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def share(rows: Callable[[int, int], None], pieces: list[tuple[int, int]], threads: int) -> None:
    """rows(start, stop) for every piece, by the calling thread and threads - 1 helpers taking the
    pieces in turn. Returns when every piece is done: a helper that starts late finds none left and
    has touched nothing. An exception of a piece is raised here (the other pieces are done)."""
    if threads <= 1 or len(pieces) <= 1:
        for piece in pieces:
            rows(*piece)
        return
    pending: queue.SimpleQueue[tuple[int, int]] = queue.SimpleQueue()
    for piece in pieces:
        pending.put(piece)
    left = [len(pieces)]
    lock = threading.Lock()
    done = threading.Event()
    errors: list[BaseException] = []

    def work() -> None:
        while True:
            try:
                piece = pending.get_nowait()
            except queue.Empty:
                return
            try:
                rows(*piece)
            except BaseException as exc:  # raised in the calling thread
                errors.append(exc)
            with lock:
                left[0] -= 1
                if not left[0]:
                    done.set()

    _helpers.start(work, min(threads, len(pieces)) - 1)
    work()
    done.wait()
    if errors:
        raise errors[0]
