"""Watching one sandboxed command: which limit it hit, killing its tree, cleaning up.

Checked every `poll_s` while it runs and once after it exits:
- memory: an OOM kill inside the call's cgroup (the kernel enforces the limit);
- processes: the cgroup's pids limit refused a fork (a fork bomb never ends by itself);
- CPU time: the cgroup's usage, all processes together, against the limit;
- /tmp: the private tmpfs is full (the kernel caps it; this names it). bwrap waits on
  its --block-fd after building the sandbox; the watch opens that tmpfs through
  /proc/<pid>/root first, so it can still be read after the command exits;
- workspace growth: the kernel caps it (layer.py); the watch names it once the call's
  layer is full, and after the call merges the layer into the workspace (in a thread).
  Where no layer can be had and `sandbox.weak_growth_limit` accepts less, GrowthMeter
  polls instead: the used space of the workspace's filesystem (one statvfs; each new
  inode counted as a block) grew by more than the cap since the call began; then the
  entries changed during the call (ctime) are added up, so another writer on the same
  filesystem is not blamed. A fast writer can overshoot it between two checks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tools.base import LimitReached, ToolError
from tools.sandbox.cgroups import CallCgroup
from tools.sandbox.layer import WorkspaceLayer
from tools.sandbox.merge import MergeReport

__all__ = ["GrowthMeter", "SandboxWatch", "written_since"]

MiB = 1024**2
_CTIME_SLACK_S = 0.05  # file ctimes come from a coarse clock


_HANDSHAKE_TIMEOUT_S = 10.0
_HANDSHAKE_STEP_S = 0.0005


async def _child_pid(info_fd: int) -> int | None:
    """bwrap's child (the sandbox's pid 1) from its --info-fd JSON; None if bwrap died."""
    os.set_blocking(info_fd, False)
    data = b""
    deadline = time.monotonic() + _HANDSHAKE_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            chunk = os.read(info_fd, 4096)
        except BlockingIOError:
            await asyncio.sleep(_HANDSHAKE_STEP_S)
            continue
        if not chunk:
            break
        data += chunk
        with contextlib.suppress(ValueError):
            return int(json.loads(data)["child-pid"])
    return None


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


async def _sandbox_tmp(child: int, tmp_bytes: int) -> int | None:
    """An fd of the sandbox's /tmp, once bwrap has mounted it: the tmpfs of our size."""
    page = os.sysconf("SC_PAGE_SIZE")
    expected = -(-tmp_bytes // page) * page
    deadline = time.monotonic() + _HANDSHAKE_TIMEOUT_S
    while time.monotonic() < deadline and _alive(child):
        with contextlib.suppress(OSError):
            fd = os.open(f"/proc/{child}/root/tmp", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            st = os.fstatvfs(fd)
            if st.f_blocks * st.f_frsize == expected:
                return fd
            os.close(fd)
        await asyncio.sleep(_HANDSHAKE_STEP_S)
    return None


# Each new file or directory counts as one block, so that millions of empty files (which
# exhaust the filesystem's inodes, not its bytes) count against the cap too.
INODE_COST = 4096


def _used_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize + (st.f_files - st.f_ffree) * INODE_COST


def written_since(root: Path, since: float, skip: tuple[Path, ...] = ()) -> int:
    """Bytes on disk of entries under `root` created or changed after `since`, plus
    INODE_COST each (one filesystem; `skip` subtrees left out, hard links counted once)."""
    device = root.stat().st_dev
    seen: set[tuple[int, int]] = set()
    total = 0
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.st_dev != device:
                continue
            if stat.S_ISDIR(st.st_mode):
                if Path(entry.path) in skip:
                    continue
                stack.append(Path(entry.path))
            if st.st_ctime < since or (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512 + INODE_COST
    return total


@dataclass
class GrowthMeter:
    """How much the workspace grew during one call, cheaply."""

    workspace: Path
    cap_bytes: int
    skip: tuple[Path, ...] = ()
    started_at: float = field(default_factory=time.time)
    used_at_start: int = 0
    _next_confirm: int = 0

    def __post_init__(self) -> None:
        self.used_at_start = _used_bytes(self.workspace)
        self._next_confirm = self.cap_bytes

    async def check(self) -> LimitReached | None:
        grown = _used_bytes(self.workspace) - self.used_at_start
        if grown <= self._next_confirm:
            return None
        written = await asyncio.to_thread(written_since, self.workspace, self.started_at - _CTIME_SLACK_S, self.skip)
        if written > self.cap_bytes:
            return LimitReached(
                "workspace_growth",
                f"workspace growth limit of {self.cap_bytes // MiB} MB reached "
                f"(about {written // MiB} MB written during the call)",
            )
        # Someone else is filling the filesystem: look again after another quarter cap.
        self._next_confirm = grown + self.cap_bytes // 4
        return None


@dataclass
class SandboxWatch:
    """The CommandWatch of a BubblewrapRunner call."""

    cgroup: CallCgroup | None
    cpu_seconds: float
    memory_bytes: int
    processes: int
    tmp_bytes: int
    layer: WorkspaceLayer | None = None  # the call's writes, capped by the kernel
    growth: GrowthMeter | None = None  # without a layer: the polled growth (weaker)
    child_fds: list[int] = field(default_factory=list)  # closed once the child has them
    held_fds: list[int] = field(default_factory=list)  # closed at the end
    on_close: list = field(default_factory=list)
    handshake: tuple[int, int] | None = None  # bwrap's --info-fd (read end), --block-fd (write end)
    poll_s: float = 0.1
    pid: int | None = None
    # What the launcher reported, if it failed a step before it became bwrap.
    launch_failure: Callable[[], ToolError | None] = lambda: None
    _tmp_fd: int | None = None

    async def started(self, pid: int) -> None:
        """The launcher is running (`pid`): once it has become bwrap and bwrap has built
        the sandbox (it waits on its block fd), take the layer the launcher made (an
        ordinary user's) and hold the sandbox's /tmp (so it can be measured even after
        the command exits), then let it run. A step the launcher failed is raised here."""
        self.pid = pid
        self._close_child_fds()
        if self.handshake is None:
            return
        info_fd, block_fd = self.handshake
        try:
            child = await _child_pid(info_fd)
            if self.layer is not None:
                self.layer.receive()
            if child is None and (failed := self.launch_failure()) is not None:
                raise failed
            if child is not None:
                self._tmp_fd = await _sandbox_tmp(child, self.tmp_bytes)
        finally:
            with contextlib.suppress(OSError):
                os.write(block_fd, b"x")

    def run_unwatched(self) -> None:
        """For a caller that just waits for the process (no `started`): bwrap does not block."""
        if self.handshake is not None:
            os.write(self.handshake[1], b"x")
            self.handshake = None

    def _close_child_fds(self) -> None:
        for fd in self.child_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.child_fds.clear()

    async def check(self) -> LimitReached | None:
        return self._cgroup_limit() or self._tmp_limit() or await self._growth_limit()

    async def _growth_limit(self) -> LimitReached | None:
        if self.layer is not None:
            return self.layer.limit()
        return await self.growth.check() if self.growth is not None else None

    async def finish(self) -> LimitReached | None:
        """After the command ended, however it ended (its processes are dead): the limit
        it hit, then its writes merged into the workspace; what could not be written is
        reported with the limit."""
        hit = await self.check()
        merge = self.layer.detach() if self.layer is not None else None
        if merge is None:
            return hit
        report = await asyncio.to_thread(merge)
        problem = _merge_problem(report, self.layer.spec.cap_bytes if self.layer else 0)
        if problem is None:
            return hit
        if hit is None:
            return problem
        return LimitReached(hit.limit, f"{hit.message}; {problem.message}")

    def _cgroup_limit(self) -> LimitReached | None:
        cg = self.cgroup
        if cg is None:
            return None
        if cg.oom_kills():
            return LimitReached("memory", f"memory limit of {self.memory_bytes // MiB} MB reached")
        if cg.process_limit_hits():
            return LimitReached("processes", f"process limit of {self.processes} reached")
        if cg.cpu_seconds() >= self.cpu_seconds:
            return LimitReached("cpu_time", f"CPU time limit of {self.cpu_seconds:g} s reached")
        return None

    def _tmp_limit(self) -> LimitReached | None:
        if self._tmp_fd is None:
            return None
        if os.fstatvfs(self._tmp_fd).f_bavail == 0:
            return LimitReached("tmp_size", f"/tmp size limit of {self.tmp_bytes // MiB} MB reached")
        return None

    def kill(self) -> None:
        if self.cgroup is not None:
            self.cgroup.kill()

    def close(self) -> None:
        self._close_child_fds()
        for fd in [*self.held_fds, *([self._tmp_fd] if self._tmp_fd is not None else [])]:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.held_fds.clear()
        self._tmp_fd = None
        if self.layer is not None:  # unmerged (the call never finished): its writes are dropped
            self.layer.close()
        if self.cgroup is not None:
            self.cgroup.kill()
            self.cgroup.remove()
        for callback in self.on_close:
            callback()
        self.on_close.clear()


def _merge_problem(report: MergeReport, cap_bytes: int) -> LimitReached | None:
    if report.over_budget:
        return LimitReached(
            "workspace_growth",
            f"workspace growth limit of {cap_bytes // MiB} MB reached while writing the command's changes back "
            f"({report.failed} not written: {'; '.join(report.failures)})",
        )
    if report.failed:
        return LimitReached(
            "workspace_write",
            f"{report.failed} of the command's changes could not be written to the workspace "
            f"({'; '.join(report.failures)})",
        )
    return None
