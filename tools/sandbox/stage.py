"""The stage: the private mount namespace the command's process builds before it runs bwrap.

The harness prepares what it can (the idmapped workspace, the layer) and writes the rest
as steps for the launcher (launcher.py), which carries them out in the child, between
its spawn and bwrap.

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

import tools.sandbox.launcher as launcher
from tools.sandbox.errors import SandboxUnavailable
from tools.sandbox.launcher import Steps

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

    @property
    def probe_xattr(self) -> str:
        """An xattr in the namespace overlayfs will use, to find out whether the tmpfs holds one."""
        return f"{'user' if self.user_xattrs else 'trusted'}.workingset"


def make_layer(spec: LayerSpec) -> int:
    """The layer's tmpfs, as a detached mount fd holding `upper/` and `work/` (launcher.make_layer)."""
    return launcher.make_layer(
        spec.cap_bytes, spec.inodes, spec.upper_mode, spec.upper_times_ns, spec.upper_ids, spec.probe_xattr
    )


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

    def steps(self, steps: Steps) -> None:
        """What the child does (launcher.py): the private mount namespace holding the
        stage, the read-only sources staged, then the workspace bwrap binds, at `source`.
        Failures name the layer's step where the layer is at stake."""
        if self.own_ids is not None:  # an ordinary user's namespace is there for the layer only
            steps.step(LAYER_STEP)
            steps.user_ns(*self.own_ids)
        else:
            steps.step("staging the workspace in a private mount namespace")
            steps.mount_ns()
        steps.tmpfs(str(self.root), "mode=0711,size=64k")
        for source, staged in self.binds:
            steps.bind(source, staged)
        if self.layer is None:
            assert self.tree_fd is not None
            steps.mkdir(self.source)
            steps.attach(self.tree_fd, self.source)
            return
        steps.step(LAYER_STEP)
        lower, up = str(self.root / "lower"), str(self.root / "up")
        if self.tree_fd is not None:
            steps.mkdir(lower)
            steps.attach(self.tree_fd, lower)
        else:
            steps.bind(str(self.workspace), lower)
        steps.mkdir(up)
        if self.layer_fd is not None:
            steps.attach(self.layer_fd, up)
        else:
            assert self.layer_sender is not None
            layer = self.layer
            steps.layer(
                layer.cap_bytes,
                layer.inodes,
                layer.upper_mode,
                layer.upper_times_ns,
                layer.probe_xattr,
                self.layer_sender.fileno(),
                up,
            )
        steps.mkdir(self.source)
        lower, up = _escaped(lower), _escaped(up)
        options = f"lowerdir={lower},upperdir={up}/upper,workdir={up}/work,{_OVERLAY_OPTIONS}"
        steps.overlay(self.source, options + (",userxattr" if self.layer.user_xattrs else ""))

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
