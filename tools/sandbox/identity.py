"""Who the command is on the host, and how it can still write the workspace.

Never a uid that maps to host root:
- harness not root: bwrap's `--unshare-user` maps the caller's own uid, and nothing else;
- harness root: the command's process drops to a dedicated unprivileged uid/gid before
  bwrap runs (`sandbox.uid`/`sandbox.gid`). The workspace stays writable for it through
  an **idmapped mount**: a detached copy of the workspace tree (`open_tree`) whose ids
  are shifted by a user namespace whose only mapping is "<workspace owner> <sandbox
  uid> 1" (`mount_setattr(MOUNT_ATTR_IDMAP)`). Inside, the owner's files appear owned by
  the sandbox uid; what the sandbox writes lands on disk owned by the workspace's
  owner — usable by the host user afterwards, no chown or ACL of the user's tree.

Where the idmapped mount lives: a private mount namespace of the command's own process
(`unshare(CLONE_NEWNS)` in the child between fork and exec), on a tmpfs over the stage
directory (root-only, 0711). Nothing appears in the host's mount table, and the kernel
drops it all when the sandbox exits — no cleanup, no stale mounts after a crash. It
costs 0.8 ms per call more than a staging mount kept on the host would (median;
benchmarks/sandbox_stage.py). Read-only
sources the sandbox uid could not reach (a toolchain under /root, mode 0700) are bound
onto the same tmpfs, so bwrap can bind them from there.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import tools.sandbox.linux as linux
from tools.sandbox.errors import SandboxUnavailable

__all__ = ["Identity", "IdentityError", "Stage", "host_identity", "reachable"]


class IdentityError(SandboxUnavailable):
    """The sandbox cannot run the command as an unprivileged user; says why."""


@dataclass(frozen=True)
class Identity:
    uid: int
    gid: int
    drops_root: bool  # the harness is root: the command runs as the dedicated uid/gid


def _overflow_ids() -> set[int]:
    ids = {65534}
    for name in ("overflowuid", "overflowgid"):
        with contextlib.suppress(OSError, ValueError):
            ids.add(int(Path(f"/proc/sys/kernel/{name}").read_text()))
    return ids


def host_identity(sandbox_uid: int, sandbox_gid: int) -> Identity:
    if os.geteuid() != 0:
        return Identity(os.getuid(), os.getgid(), drops_root=False)
    for kind, value in (("uid", sandbox_uid), ("gid", sandbox_gid)):
        if value == 0 or value in _overflow_ids():
            raise IdentityError(
                f"sandbox.{kind} {value} is root or the kernel's overflow id; set sandbox.{kind} to an unused id"
            )
    return Identity(sandbox_uid, sandbox_gid, drops_root=True)


def reachable(path: Path, uid: int, gid: int) -> bool:
    """Whether uid/gid (no supplementary groups) may look up `path`: search permission
    on every directory above it."""
    for parent in path.parents:
        try:
            st = parent.stat()
        except OSError:
            return False
        if st.st_uid == uid:
            bit = stat.S_IXUSR
        elif st.st_gid == gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not st.st_mode & bit:
            return False
    return True


_userns_fds: dict[tuple[int, int, int, int], int] = {}


def _userns_fd(owner_uid: int, owner_gid: int, uid: int, gid: int) -> int:
    """A user namespace mapping the owner's ids to the sandbox's, kept open for reuse
    (mount_setattr only reads its maps)."""
    key = (owner_uid, owner_gid, uid, gid)
    if key not in _userns_fds:
        sleeper = shutil.which("sleep") or "/bin/sleep"
        # Popen returns once the child has exec'd, so the unshare has happened by then.
        child = subprocess.Popen(
            [sleeper, "30"], preexec_fn=lambda: linux.unshare(linux.CLONE_NEWUSER),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            Path(f"/proc/{child.pid}/uid_map").write_text(f"{owner_uid} {uid} 1\n")
            Path(f"/proc/{child.pid}/setgroups").write_text("deny")
            Path(f"/proc/{child.pid}/gid_map").write_text(f"{owner_gid} {gid} 1\n")
            _userns_fds[key] = os.open(f"/proc/{child.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
        finally:
            child.kill()
            child.wait()
    return _userns_fds[key]


_stage_root: Path | None = None


def stage_root() -> Path:
    """The mountpoint of the per-call tmpfs: empty on the host, root's, mode 0711."""
    global _stage_root
    if _stage_root is None:
        candidate = Path("/run/workingset-sandbox")
        if not Path("/run").is_dir():
            candidate = Path(tempfile.mkdtemp(prefix="workingset-sandbox-"))
        with contextlib.suppress(FileExistsError):
            candidate.mkdir(mode=0o711)
        st = candidate.lstat()
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
            raise IdentityError(f"{candidate} is not a root-owned directory others cannot write; remove it")
        candidate.chmod(0o711)
        _stage_root = candidate
    return _stage_root


@dataclass
class Stage:
    """One call's staged sources, prepared in the harness and attached in the child."""

    root: Path
    workspace_fd: int
    binds: list[tuple[str, str]] = field(default_factory=list)  # (host source, staged path)

    @classmethod
    def prepare(cls, workspace: Path, identity: Identity) -> Stage:
        """The idmapped copy of the workspace, as a detached mount fd."""
        st = workspace.stat()
        userns = _userns_fd(st.st_uid, st.st_gid, identity.uid, identity.gid)
        tree = linux.open_tree_clone(str(workspace))
        try:
            linux.mount_setattr_idmap(tree, userns)
        except OSError:
            os.close(tree)
            raise
        return cls(stage_root(), tree)

    @property
    def workspace(self) -> str:
        return str(self.root / "ws")

    def add(self, source: Path) -> str:
        """Stage a read-only source the sandbox uid cannot reach; returns where bwrap finds it."""
        staged = str(self.root / f"ro{len(self.binds)}")
        self.binds.append((str(source), staged))
        return staged

    def enter(self) -> None:
        """In the child, before exec: a private mount namespace holding the stage."""
        linux.unshare(linux.CLONE_NEWNS)
        linux.mount("none", "/", None, linux.MS_REC | linux.MS_PRIVATE)
        linux.mount("tmpfs", str(self.root), "tmpfs", 0, "mode=0711,size=64k")
        os.mkdir(self.workspace)
        linux.move_mount(self.workspace_fd, self.workspace)
        for source, staged in self.binds:
            if os.path.isdir(source):
                os.mkdir(staged)
            else:
                os.close(os.open(staged, os.O_CREAT | os.O_WRONLY, 0o600))
            linux.mount(source, staged, None, linux.MS_BIND | linux.MS_REC)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.workspace_fd)
