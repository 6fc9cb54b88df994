"""The workspace layer: where one call's writes go, under a cap the kernel enforces.

The command sees its workspace as an overlayfs (stage.py): the workspace below, and
above it, taking every write, a tmpfs of `workspace_growth_mb` with one inode per 4 KiB
of it. A write past either is refused by the kernel (ENOSPC) however it is made — a
fast writer, `fallocate`, a sparse file, a path deeper than PATH_MAX — so nothing past
the cap ever exists. The tmpfs's pages are charged to the call's cgroup (whose memory
limit grows by the cap, so that writes do not eat the processes' memory).

After the call, once its processes are dead, the harness writes the layer back into the
workspace (merge.py) in a thread, then closes its fd: the tmpfs is gone. Until then the
workspace itself is untouched by the command, so a protected path (`.git`,
`.workingset`) stays as it was whether or not it existed: the merge never writes one.
Merges into one workspace take turns (an exclusive flock on it), across processes too.

The limit is named when the layer is full — no free block or no free inode — at a check
while the command runs or after it ends. A refused allocation that leaves room behind
(a `fallocate` larger than what remains, which the kernel undoes whole) shows only as
the command's own "No space left on device".
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tools.base import LimitReached
from tools.sandbox.merge import MergeReport, merge_layer
from tools.sandbox.stage import LayerSpec

__all__ = ["WorkspaceLayer"]

MiB = 1024**2
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class WorkspaceLayer:
    """The harness's side of one call's layer: its fd, its limit, its merge."""

    spec: LayerSpec
    workspace: Path
    protected: tuple[str, ...]
    owner: tuple[int, int] | None  # as root: the ids everything written back gets
    workspace_fd: int = -1
    fd: int | None = None  # the tmpfs (holding upper/ and work/)
    receiver: socket.socket | None = None  # an ordinary user's: where the child's fd arrives

    def __post_init__(self) -> None:
        # Held from the start: the merge lands in this directory, whatever its path names later.
        self.workspace_fd = os.open(self.workspace, _DIR)

    def receive(self) -> None:
        """Take the layer the child made and sent (an ordinary user's call), if it came."""
        if self.fd is not None or self.receiver is None:
            return
        with contextlib.suppress(BlockingIOError, OSError):
            self.receiver.setblocking(False)
            _, fds, _, _ = socket.recv_fds(self.receiver, 1, 1, socket.MSG_CMSG_CLOEXEC)
            if fds:
                self.fd = fds[0]
        self.receiver.close()
        self.receiver = None

    def limit(self) -> LimitReached | None:
        """The growth limit, once the layer is full."""
        if self.fd is None:
            return None
        st = os.fstatvfs(self.fd)
        if st.f_bavail and st.f_favail:
            return None
        cap = self.spec.cap_bytes // MiB
        if not st.f_bavail:
            why = "the kernel refused the command's writes past it"
        else:
            why = f"its {self.spec.inodes:,} new files and directories are used up; the kernel refused more"
        return LimitReached("workspace_growth", f"workspace growth limit of {cap} MB reached ({why})")

    def detach(self) -> Callable[[], MergeReport] | None:
        """Hand the layer to its merge, which owns it from here (so that close() cannot
        free it under a merge still running in its thread); None if there is none."""
        self.receive()
        if self.fd is None:
            return None
        layer, workspace = self.fd, os.dup(self.workspace_fd)
        self.fd = None
        protected = [tuple(Path(name).parts) for name in self.protected]
        return functools.partial(_merge, layer, workspace, protected, self.owner, self.spec)

    def close(self) -> None:
        """Drop the layer unmerged (a call that never finished), and the handles."""
        if self.receiver is not None:
            self.receiver.close()
            self.receiver = None
        for fd in (self.fd, self.workspace_fd):
            if fd is not None and fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.fd = None
        self.workspace_fd = -1


def _merge(
    layer: int, workspace: int, protected: list[tuple[str, ...]], owner: tuple[int, int] | None, spec: LayerSpec
) -> MergeReport:
    """Write the layer back into the workspace; blocking (a thread's). Closes both fds."""
    try:
        upper = os.open("upper", _DIR, dir_fd=layer)
        try:
            fcntl.flock(workspace, fcntl.LOCK_EX)
            try:
                return merge_layer(
                    upper,
                    workspace,
                    protected=protected,
                    owner=owner,
                    opaque_xattr=spec.opaque_xattr,
                    budget=spec.cap_bytes,
                )
            finally:
                fcntl.flock(workspace, fcntl.LOCK_UN)
        finally:
            os.close(upper)
    finally:
        os.close(workspace)
        os.close(layer)  # the last reference: the tmpfs is freed
