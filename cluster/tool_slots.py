"""At most N tool calls at once on a node, across every process of the cluster there.

A Bash call whose workspace is on the session's own node runs in the session's process
(cluster.tool_tasks), not as a Ray task, so Ray's CPU accounting no longer holds it back.
The calls of every session and subagent actor on the node share N slots instead: N lock
files under one directory per node, each held with flock while a call runs. The kernel
lets a lock go when its holder closes it or ends, however it ends (a SIGKILLed actor
frees its slot), so nothing has to be cleaned up. N is the node's CPUs divided by
`cluster.tool_task_cpus`: as many calls as Ray would have run as tasks of that size.

A call that finds every slot taken waits in a thread of its own for one slot, chosen in
turn, so waiters spread over the slots; the wait costs no CPU, and a turn cancelled
while waiting gives the slot back as soon as it gets it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import itertools
import os
import stat
import tempfile
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tools.base import ToolError

__all__ = ["NodeSlots", "SlotDirectoryUnsafe", "node_slots"]

# A wait holds a thread without using it; there are never more waits than sessions.
_waits = ThreadPoolExecutor(max_workers=256, thread_name_prefix="tool-slot-wait")


class SlotDirectoryUnsafe(ToolError, RuntimeError):
    """The slots' directory is not this user's own: another user could hold every slot.
    A ToolError, so the call it stops is an error result, not a crash."""


def _own_directory(path: Path) -> Path:
    """`path` and its parent, made if missing: directories of this user's that no one else can write."""
    for directory in (path.parent, path):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700)
        st = os.lstat(directory)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise SlotDirectoryUnsafe(
                f"{directory} (the node's tool-call slots) is not a directory only this user can write; "
                "remove it, or set TMPDIR to a directory of your own"
            )
    return path


class NodeSlots:
    """`count` slots under `directory`, shared with every process that names the same one."""

    def __init__(self, directory: Path, count: int):
        self.directory = _own_directory(directory)
        self.count = max(count, 1)
        self._turn = itertools.count()

    def _open(self, index: int) -> int:
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        return os.open(self.directory / f"slot-{index}", flags, 0o600)

    def _try_any(self) -> int | None:
        start = next(self._turn)
        for step in range(self.count):
            fd = self._open((start + step) % self.count)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                os.close(fd)
        return None

    async def _wait_for_one(self) -> int:
        fd = self._open(next(self._turn) % self.count)
        waited = asyncio.get_running_loop().run_in_executor(_waits, fcntl.flock, fd, fcntl.LOCK_EX)
        try:
            await asyncio.shield(waited)
        except asyncio.CancelledError:
            waited.add_done_callback(lambda _: os.close(fd))  # got after the turn left: give it back
            raise
        except BaseException:
            os.close(fd)
            raise
        return fd

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        """One slot for the time of the block."""
        fd = self._try_any()
        if fd is None:
            fd = await self._wait_for_one()
        try:
            yield
        finally:
            os.close(fd)  # closing the descriptor is what lets the lock go


_by_node: dict[tuple[str, int], NodeSlots] = {}


def node_slots(node_id: str, count: int) -> NodeSlots:
    """This process's handle on a node's slots (one directory per Ray node id)."""
    key = (node_id, count)
    if key not in _by_node:
        directory = Path(tempfile.gettempdir()) / f"workingset-tool-slots-{os.geteuid()}" / node_id
        _by_node[key] = NodeSlots(directory, count)
    return _by_node[key]
