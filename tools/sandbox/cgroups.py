"""One cgroup per sandboxed command: memory, process count and CPU time of the whole tree.

Both cgroup versions are handled:
- v2 (one unified hierarchy): `memory.max` (+ `memory.swap.max` 0), `pids.max`, usage from
  `cpu.stat`, hits from `memory.events` / `pids.events`, `cgroup.kill` for the tree;
- v1 (one hierarchy per controller): `memory.limit_in_bytes` (+ `memsw`), `pids.max`,
  usage from `cpuacct.usage`, hits from `memory.oom_control` / `pids.events`; the tree is
  killed pid by pid from `cgroup.procs`.

Per-call cgroups live under a parent, by default `workingset/` below the harness's own
cgroup in each hierarchy (so whatever limits the harness itself runs under still apply
to its commands). The command's first process, the launcher, is in the cgroup before
bwrap runs (launcher.py), so every process it starts is counted: in v2 it starts the
rest of itself inside (clone3 with CLONE_INTO_CGROUP, an fd of the directory); in v1 it
moves its one thread in through `tasks`. Either way no process is moved through
cgroup.procs, which waits for an RCU grace period (10-20 ms) before every move.

`locate` raises `CgroupUnavailable` with the reason when no usable hierarchy exists
(no cgroupfs, controllers bound elsewhere, no permission); the caller decides whether
weaker per-process limits are acceptable.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tools.sandbox.errors import SandboxUnavailable

__all__ = ["CallCgroup", "CgroupTree", "CgroupUnavailable", "CgroupVersion", "locate", "sweep"]

CgroupVersion = Literal["auto", "v1", "v2"]
_V1_CONTROLLERS = ("memory", "pids", "cpuacct")
_V2_CONTROLLERS = ("memory", "pids")
_PARENT_NAME = "workingset"
_counter = itertools.count(1)


class CgroupUnavailable(SandboxUnavailable):
    """No cgroup hierarchy can hold the command; the message says why."""


@dataclass(frozen=True)
class _Mount:
    point: Path
    root: str
    options: frozenset[str]


def _mounts(mountinfo: str) -> tuple[dict[str, _Mount], _Mount | None]:
    """cgroup v1 mounts by controller, and the cgroup2 mount (if any)."""
    v1: dict[str, _Mount] = {}
    v2 = None
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        mount = _Mount(Path(fields[4].replace("\\040", " ")), fields[3], frozenset(tail[2].split(",")))
        if tail[0] == "cgroup2" and v2 is None:
            v2 = mount
        elif tail[0] == "cgroup":
            for name in mount.options & set(_V1_CONTROLLERS):
                v1.setdefault(name, mount)
    return v1, v2


def _own_paths(proc_cgroup: str) -> tuple[dict[str, str], str | None]:
    """The harness's own cgroup per v1 controller, and in v2."""
    v1: dict[str, str] = {}
    v2 = None
    for line in proc_cgroup.splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            v2 = path
        for name in controllers.split(","):
            v1[name] = path
    return v1, v2


def _directory(mount: _Mount, cgroup_path: str) -> Path:
    root = mount.root.rstrip("/")
    relative = cgroup_path[len(root) :] if root and cgroup_path.startswith(root) else cgroup_path
    return mount.point / relative.lstrip("/")


@dataclass(frozen=True)
class CgroupTree:
    """Where the per-call cgroups go: v1, one parent per controller; v2, one parent."""

    version: Literal["v1", "v2"]
    parents: tuple[tuple[str, Path], ...]  # (controller or "unified", parent directory)

    def describe(self) -> str:
        return f"cgroup {self.version} under {', '.join(str(p) for _, p in self.parents)}"


def locate(version: CgroupVersion = "auto", parent: str | None = None) -> CgroupTree:
    """The hierarchy to use; raises CgroupUnavailable naming what is missing."""
    mountinfo = Path("/proc/self/mountinfo").read_text()
    proc_cgroup = Path("/proc/self/cgroup").read_text()
    v1_mounts, v2_mount = _mounts(mountinfo)
    v1_own, v2_own = _own_paths(proc_cgroup)
    if version == "v2":
        return _locate_v2(v2_mount, v2_own, parent)
    if version == "v1":
        return _locate_v1(v1_mounts, v1_own, parent)
    try:
        return _locate_v2(v2_mount, v2_own, parent)
    except CgroupUnavailable as v2_problem:
        if not v1_mounts:
            raise
        try:
            return _locate_v1(v1_mounts, v1_own, parent)
        except CgroupUnavailable as v1_problem:
            raise CgroupUnavailable(f"{v1_problem}; and {v2_problem}") from None


def _parent_dir(base: Path, own: str, parent: str | None, where: str) -> Path:
    """The configured parent (which must exist), or `workingset/` under our own cgroup."""
    if parent is not None:
        path = base / parent.strip("/")
        if not path.is_dir():
            raise CgroupUnavailable(f"the cgroup parent {parent} does not exist in {where} ({path})")
        return path
    path = base / own.strip("/") / _PARENT_NAME
    try:
        path.mkdir(exist_ok=True)
    except OSError as exc:
        raise CgroupUnavailable(
            f"cannot create {path} ({exc.strerror}): {where} is not delegated to uid {os.geteuid()}"
        ) from None
    return path


def _locate_v1(mounts: dict[str, _Mount], own: dict[str, str], parent: str | None) -> CgroupTree:
    missing = [name for name in _V1_CONTROLLERS if name not in mounts]
    if missing:
        raise CgroupUnavailable(f"cgroup v1 has no {' or '.join(missing)} hierarchy mounted")
    parents = []
    for name in _V1_CONTROLLERS:
        mount = mounts[name]
        base = _directory(mount, "/")
        own_dir = _directory(mount, own.get(name, "/"))
        parents.append((name, _parent_dir(base, str(own_dir.relative_to(base)), parent, f"cgroup v1 {name} at {base}")))
        _check_writable(parents[-1][1], f"cgroup v1 {name}")
    return CgroupTree("v1", tuple(parents))


def _locate_v2(mount: _Mount | None, own: str | None, parent: str | None) -> CgroupTree:
    if mount is None:
        raise CgroupUnavailable("no cgroup v2 hierarchy is mounted")
    base = _directory(mount, "/")
    available = set(_read(base / "cgroup.controllers").split())
    missing = [name for name in _V2_CONTROLLERS if name not in available]
    if missing:
        raise CgroupUnavailable(
            f"cgroup v2 at {base} offers no {' or '.join(missing)} controller (bound to cgroup v1 hierarchies)"
        )
    own_dir = _directory(mount, own or "/")
    if parent is None:
        _enable(own_dir, base)
    path = _parent_dir(base, str(own_dir.relative_to(base)), parent, f"cgroup v2 at {base}")
    _enable(path, base)
    _check_writable(path, "cgroup v2")
    return CgroupTree("v2", (("unified", path),))


def _enable(directory: Path, base: Path) -> None:
    """Hand memory and pids down to the children of `directory`."""
    enabled = set(_read(directory / "cgroup.subtree_control").split())
    wanted = [name for name in _V2_CONTROLLERS if name not in enabled]
    if not wanted:
        return
    try:
        (directory / "cgroup.subtree_control").write_text(" ".join(f"+{n}" for n in wanted))
    except OSError as exc:
        why = "it holds processes" if exc.errno == errno.EBUSY else exc.strerror
        raise CgroupUnavailable(
            f"cannot enable {' and '.join(wanted)} below {directory} in cgroup v2 at {base} ({why}); "
            "set sandbox.cgroup_parent to a delegated cgroup"
        ) from None


def _check_writable(path: Path, where: str) -> None:
    if not os.access(path, os.W_OK | os.X_OK):
        raise CgroupUnavailable(f"no permission to create cgroups in {path} ({where}) as uid {os.geteuid()}")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _field(text: str, key: str) -> int:
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value.strip() or 0)
    return 0


class CallCgroup:
    """The cgroup(s) of one call: created with its limits, read while it runs, removed after."""

    def __init__(self, tree: CgroupTree, dirs: dict[str, Path]):
        self.tree = tree
        self.dirs = dirs

    @classmethod
    def create(cls, tree: CgroupTree, *, memory_bytes: int, processes: int) -> CallCgroup:
        name = f"call-{os.getpid()}-{next(_counter)}"
        dirs: dict[str, Path] = {}
        try:
            for controller, parent in tree.parents:
                dirs[controller] = parent / name
                dirs[controller].mkdir()
            made = cls(tree, dirs)
            made._limit(memory_bytes, processes)
        except OSError as exc:
            cls(tree, {k: d for k, d in dirs.items() if d.exists()}).remove()
            raise CgroupUnavailable(f"cannot set up a cgroup in {tree.describe()}: {exc}") from None
        return made

    def _limit(self, memory_bytes: int, processes: int) -> None:
        if self.tree.version == "v2":
            d = self.dirs["unified"]
            (d / "memory.max").write_text(str(memory_bytes))
            if (d / "memory.swap.max").exists():
                (d / "memory.swap.max").write_text("0")
            (d / "pids.max").write_text(str(processes))
            return
        memory = self.dirs["memory"]
        (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
        if (memory / "memory.memsw.limit_in_bytes").exists():  # swap accounting on: no swapping past it
            (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        (self.dirs["pids"] / "pids.max").write_text(str(processes))

    def tasks_fds(self) -> list[int]:
        """v1: write-only fds of each hierarchy's `tasks`; the launcher writes "0" to each."""
        assert self.tree.version == "v1"
        return [os.open(d / "tasks", os.O_WRONLY | os.O_CLOEXEC) for d in self.dirs.values()]

    def directory_fd(self) -> int:
        """v2: an fd of the cgroup's directory, for the launcher's clone3 into it."""
        assert self.tree.version == "v2"
        return os.open(self.dirs["unified"], os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def cpu_seconds(self) -> float:
        if self.tree.version == "v2":
            return _field(_read(self.dirs["unified"] / "cpu.stat"), "usage_usec") / 1e6
        text = _read(self.dirs["cpuacct"] / "cpuacct.usage").strip()
        return int(text or 0) / 1e9

    def oom_kills(self) -> int:
        if self.tree.version == "v2":
            return _field(_read(self.dirs["unified"] / "memory.events"), "oom_kill")
        return _field(_read(self.dirs["memory"] / "memory.oom_control"), "oom_kill")

    def process_limit_hits(self) -> int:
        d = self.dirs["unified"] if self.tree.version == "v2" else self.dirs["pids"]
        return _field(_read(d / "pids.events"), "max")

    def pids(self) -> list[int]:
        d = self.dirs["unified"] if self.tree.version == "v2" else self.dirs["pids"]
        return [int(p) for p in _read(d / "cgroup.procs").split()]

    def kill(self, timeout_s: float = 2.0) -> None:
        """SIGKILL every process in the cgroup, until it is empty."""
        kill_file = self.dirs.get("unified", Path("/nonexistent")) / "cgroup.kill"
        if kill_file.exists():
            with contextlib.suppress(OSError):
                kill_file.write_text("1")
        deadline = time.monotonic() + timeout_s
        while (pids := self.pids()) and time.monotonic() < deadline:
            for pid in pids:
                self._kill_member(pid)
            time.sleep(0.002)

    def _kill_member(self, pid: int) -> None:
        """Kill `pid` only if it is still ours: a pidfd pins the process, then its cgroup is
        checked, so a pid reused by a host process in between is left alone."""
        name = next(iter(self.dirs.values())).name
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            return
        try:
            if f"/{name}" in Path(f"/proc/{pid}/cgroup").read_text():
                signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass
        finally:
            os.close(fd)

    def remove(self, timeout_s: float = 2.0) -> None:
        """rmdir each cgroup; a dying process keeps it busy for a moment."""
        deadline = time.monotonic() + timeout_s
        for directory in self.dirs.values():
            while True:
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break  # left for the next sweep
                    time.sleep(0.005)


def sweep(tree: CgroupTree) -> None:
    """Remove empty per-call cgroups left by harness processes that died."""
    for _, parent in tree.parents:
        for child in parent.glob("call-*-*"):
            pid = child.name.split("-")[1]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                with contextlib.suppress(OSError):
                    child.rmdir()
