"""How long a blocking search may run, and running it off the event loop.

Grep and Glob walk the workspace in a worker thread, so the event loop (and the other
agents on it) go on while they run. The worker checks its `Deadline` between files and
between chunks of one file: at `tools.search_timeout_s`, or as soon as the call is
cancelled, it stops and returns what it found so far, which the tool marks as cut.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["Deadline", "run_until_deadline"]

T = TypeVar("T")


class Deadline:
    """A time limit, plus a stop a cancelled caller sets."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._at = time.monotonic() + seconds
        self._stop = threading.Event()

    def passed(self) -> bool:
        return self._stop.is_set() or time.monotonic() >= self._at

    def stop(self) -> None:
        self._stop.set()


async def run_until_deadline(work: Callable[[Deadline], T], seconds: float) -> T:
    """`work(deadline)` in a worker thread; cancelling the call stops the worker at its
    next check instead of leaving it to run to the end."""
    deadline = Deadline(seconds)
    try:
        return await asyncio.to_thread(work, deadline)
    finally:
        deadline.stop()
