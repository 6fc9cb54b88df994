"""Children of the event loop found exited through a pidfd, not by a thread each.

On Python 3.11, asyncio waits for each subprocess with a thread of its own
(ThreadedChildWatcher): every Bash call starts and ends a thread, about a fifth of what
a call costs the harness in process (`benchmarks.per_call`). On Linux a pidfd makes the
child's exit an event the loop already polls for, with no thread. 3.11's own
PidfdChildWatcher serves one attached loop, and a process here runs several (a worker's,
the file tools' threads', a test's), so `_PidfdWatcher` waits through whichever loop
started the child, as Python 3.12 does by itself where it can. Only 3.11 is changed,
and only where the kernel gives pidfds (5.3 and later, not refused by a filter).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVarTuple

__all__ = ["watch_children_by_pidfd"]

_done = False
_Ts = TypeVarTuple("_Ts")


class _PidfdWatcher(asyncio.AbstractChildWatcher):
    """A child's exit is its pidfd turning readable in the loop that started it."""

    def add_child_handler(self, pid: int, callback: Callable[[int, int, *_Ts], object], *args: *_Ts) -> None:
        loop = asyncio.get_running_loop()
        pidfd = os.pidfd_open(pid)
        loop.add_reader(pidfd, self._reap, loop, pid, pidfd, callback, args)

    @staticmethod
    def _reap(loop: asyncio.AbstractEventLoop, pid: int, pidfd: int, callback: Callable[..., Any], args: tuple) -> None:
        loop.remove_reader(pidfd)
        try:
            _, status = os.waitpid(pid, 0)
            returncode = os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            returncode = 255  # reaped elsewhere: what asyncio's own watchers report then
        finally:
            os.close(pidfd)
        callback(pid, returncode, *args)

    def remove_child_handler(self, pid: int) -> bool:
        return False  # each handler is removed when its child exits

    def attach_loop(self, loop: asyncio.AbstractEventLoop | None) -> None:
        pass  # no loop of its own: it uses the running one

    def is_active(self) -> bool:
        return True

    def close(self) -> None:
        pass

    def __enter__(self) -> _PidfdWatcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass


def watch_children_by_pidfd() -> None:
    """Make asyncio watch child processes through pidfds, once per process, where it can."""
    global _done
    if _done:
        return
    _done = True
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return  # an old kernel or a filter refuses pidfds: the default watcher stays
    asyncio.set_child_watcher(_PidfdWatcher())
