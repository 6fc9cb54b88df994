"""The stage: the private mount namespace the command's process builds before it runs bwrap.

Everything here that runs in the child (`Stage.enter`, between fork and exec) is plain
system calls, so that the launch can later move to a spawn without Python in the child.

What the child builds, on a small tmpfs over the stage directory (empty on the host):
- `lower`: the workspace as the command may see it — as root, its idmapped copy (a
  detached tree the harness made, identity.py), otherwise a bind of the workspace;
- `up`: the workspace layer, a tmpfs capped at the call's workspace growth (layer.py);
- `ws`: an overlayfs of the two (`redirect_dir=nofollow,metacopy=off,index=off`, so a
  change is always whole in the upper layer, as merge.py reads it) — what bwrap binds as
  the workspace. Without a layer (`sandbox.weak_growth_limit` on a host that cannot
  have one), `ws` is the idmapped copy itself;
- `roN`: read-only sources the sandbox uid cannot reach (a toolchain under /root).

As root, the harness makes the layer's tmpfs itself (fsopen/fsmount, a detached mount
it keeps an fd of) and the child only attaches it. An ordinary user may mount only in a
user namespace of its own: the child first enters one (mapping just its own ids), makes
the tmpfs there and hands the harness an fd of it over a socket (SCM_RIGHTS). Either
way the harness holds the layer after the namespace is gone.

Nothing appears in the host's mount table, and the kernel drops it all when the
sandbox exits — no cleanup, no stale mounts after a crash. A per-call namespace costs
0.8 ms more than a staging mount kept on the host would (benchmarks/sandbox_stage.py).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import tools.sandbox.linux as linux
from tools.sandbox.errors import SandboxUnavailable

__all__ = ["LAYER_STEP", "LayerSpec", "Stage", "StageError", "make_layer", "stage_root"]

# The child reports a failure as "<step>: <error>"; this step is the layer's.
LAYER_STEP = "putting the workspace's writes on a capped layer"
# Each new entry costs at least this much on disk: the layer holds one inode per 4 KiB of
# its cap, so that empty files or directories cannot exhaust the host's inodes either.
INODE_COST = 4096
_SPARE_INODES = 16  # the layer's own: its root, upper/, work/, overlayfs's work/work, stand-ins
_OVERLAY_OPTIONS = "redirect_dir=nofollow,metacopy=off,index=off"


class StageError(SandboxUnavailable):
    """The stage directory is unsafe to use; says which and why."""


@dataclass(frozen=True)
class LayerSpec:
    """The workspace layer of one call: its caps, and how its upper root must look (the
    workspace root as the command sees it: its mode, times and, as root, the sandbox's ids)."""

    cap_bytes: int
    upper_mode: int
    upper_times_ns: tuple[int, int]
    upper_ids: tuple[int, int] | None  # None: whoever makes it (an ordinary user: itself)
    user_xattrs: bool  # overlayfs in a user namespace keeps its markers in user.* xattrs

    @property
    def inodes(self) -> int:
        return self.cap_bytes // INODE_COST + _SPARE_INODES

    @property
    def opaque_xattr(self) -> str:
        return f"{'user' if self.user_xattrs else 'trusted'}.overlay.opaque"


def make_layer(spec: LayerSpec) -> int:
    """The layer's tmpfs, as a detached mount fd holding `upper/` and `work/`. Fails if
    the tmpfs cannot hold the xattrs overlayfs marks replaced directories with (user
    xattrs on tmpfs need Linux 6.6)."""
    fd = linux.detached_tmpfs({"size": str(spec.cap_bytes), "nr_inodes": str(spec.inodes), "mode": "0700"})
    try:
        os.mkdir("upper", 0o700, dir_fd=fd)
        os.mkdir("work", 0o700, dir_fd=fd)
        work = os.open("work", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
        probe = spec.opaque_xattr.replace(".overlay.opaque", ".workingset")
        try:
            os.setxattr(work, probe, b"1")
        except OSError as exc:
            raise OSError(exc.errno, f"tmpfs cannot hold {probe.split('.')[0]}.* xattrs: {exc.strerror}") from None
        finally:
            os.close(work)
        if spec.upper_ids is not None:
            os.chown("upper", *spec.upper_ids, dir_fd=fd)
        os.chmod("upper", spec.upper_mode, dir_fd=fd)
        os.utime("upper", ns=spec.upper_times_ns, dir_fd=fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


_stage_root: Path | None = None


def stage_root() -> Path:
    """The directory the child mounts its stage over: empty on the host. As root a
    root-owned 0711 directory under /run; otherwise a 0700 one of this process's own."""
    global _stage_root
    if _stage_root is None:
        if os.geteuid() != 0:
            _stage_root = Path(tempfile.mkdtemp(prefix="workingset-stage-"))
            atexit.register(_remove_own_stage, _stage_root)
            return _stage_root
        candidate = Path("/run/workingset-sandbox")
        if not Path("/run").is_dir():
            candidate = Path(tempfile.mkdtemp(prefix="workingset-sandbox-"))
        with contextlib.suppress(FileExistsError):
            candidate.mkdir(mode=0o711)
        st = candidate.lstat()
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
            raise StageError(f"{candidate} is not a root-owned directory others cannot write; remove it")
        candidate.chmod(0o711)
        _stage_root = candidate
    return _stage_root


def _remove_own_stage(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.rmdir()


@dataclass
class Stage:
    """One call's stage, prepared in the harness and entered in the child."""

    root: Path
    workspace: Path  # the host's
    tree_fd: int | None = None  # as root: the idmapped workspace, detached
    layer: LayerSpec | None = None
    layer_fd: int | None = None  # as root: the layer the harness made (the harness's to close)
    layer_sender: socket.socket | None = None  # otherwise: where the child sends the layer it made
    own_ids: tuple[int, int] | None = None  # otherwise: enter a user namespace mapping these
    binds: list[tuple[str, str]] = field(default_factory=list)  # (host source, staged path)

    @property
    def source(self) -> str:
        """Where bwrap finds the workspace."""
        return str(self.root / "ws")

    def add(self, source: Path) -> str:
        """Stage a read-only source the sandbox uid cannot reach; returns where bwrap finds it."""
        staged = str(self.root / f"ro{len(self.binds)}")
        self.binds.append((str(source), staged))
        return staged

    def enter(self) -> None:
        """In the child, before exec: the private mount namespace holding the stage, with
        the read-only sources staged."""
        if self.own_ids is not None:
            _own_user_namespace(*self.own_ids)
        else:
            linux.unshare(linux.CLONE_NEWNS)
        linux.mount("none", "/", None, linux.MS_REC | linux.MS_PRIVATE)
        linux.mount("tmpfs", str(self.root), "tmpfs", 0, "mode=0711,size=64k")
        for source, staged in self.binds:
            if os.path.isdir(source):
                os.mkdir(staged)
            else:
                os.close(os.open(staged, os.O_CREAT | os.O_WRONLY, 0o600))
            linux.mount(source, staged, None, linux.MS_BIND | linux.MS_REC)

    def mount_workspace(self) -> None:
        """In the child, after `enter`: the workspace bwrap binds, at `source`."""
        if self.layer is not None:
            self._overlay(self.layer)
            return
        assert self.tree_fd is not None
        os.mkdir(self.source)
        linux.move_mount(self.tree_fd, self.source)

    def _overlay(self, layer: LayerSpec) -> None:
        lower, up = str(self.root / "lower"), str(self.root / "up")
        os.mkdir(lower)
        if self.tree_fd is not None:
            linux.move_mount(self.tree_fd, lower)
        else:
            linux.mount(str(self.workspace), lower, None, linux.MS_BIND | linux.MS_REC)
        layer_fd = self.layer_fd
        if layer_fd is None:
            assert self.layer_sender is not None
            layer_fd = make_layer(layer)
            socket.send_fds(self.layer_sender, [b"L"], [layer_fd])
        os.mkdir(up)
        linux.move_mount(layer_fd, up)
        os.mkdir(self.source)
        lower, up = _escaped(lower), _escaped(up)
        options = f"lowerdir={lower},upperdir={up}/upper,workdir={up}/work,{_OVERLAY_OPTIONS}"
        flags = linux.MS_NOSUID | linux.MS_NODEV
        linux.mount("overlay", self.source, "overlay", flags, options + (",userxattr" if layer.user_xattrs else ""))

    def close(self) -> None:
        if self.tree_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.tree_fd)
        if self.layer_sender is not None:
            self.layer_sender.close()
        self.tree_fd = self.layer_sender = None


def _escaped(path: str) -> str:
    """A path as overlayfs's options hold it (its separators escaped)."""
    return path.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")


def _own_user_namespace(uid: int, gid: int) -> None:
    """A new user and mount namespace in which this process may mount, mapping only its
    own ids (it runs bwrap as them: bwrap's caps end at exec)."""
    linux.unshare(linux.CLONE_NEWUSER | linux.CLONE_NEWNS)
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1\n"), ("gid_map", f"{gid} {gid} 1\n")):
        fd = os.open(f"/proc/self/{name}", os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
