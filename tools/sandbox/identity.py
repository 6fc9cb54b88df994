"""Who the command is on the host, and how it can still write the workspace.

Never a uid that maps to host root:
- harness not root: bwrap's `--unshare-user` maps the caller's own uid, and nothing else;
- harness root: the command's process drops to a dedicated unprivileged uid/gid before
  bwrap runs (`sandbox.uid`/`sandbox.gid`). The workspace stays writable for it through
  an **idmapped mount**: a detached copy of the workspace tree (`open_tree`) whose ids
  are shifted by a user namespace whose only mapping is "<workspace owner> <sandbox
  uid> 1" (`mount_setattr(MOUNT_ATTR_IDMAP)`). Inside, the owner's files appear owned by
  the sandbox uid; what the sandbox writes lands on disk owned by the workspace's
  owner (the layer's merge gives it that owner, merge.py; without a layer, the idmapping
  does) — usable by the host user afterwards, no chown or ACL of the user's tree.

The idmapped copy is attached in a private mount namespace of the command's own process
(stage.py), as the lower layer of the workspace it sees: nothing appears in the host's
mount table. Read-only sources the sandbox uid could not reach (a toolchain under /root,
mode 0700) are bound there too, so bwrap can bind them from the stage.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import tools.sandbox.linux as linux
from tools.sandbox.errors import SandboxUnavailable

__all__ = ["Identity", "IdentityError", "host_identity", "idmapped_tree", "reachable"]


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
            [sleeper, "30"],
            preexec_fn=lambda: linux.unshare(linux.CLONE_NEWUSER),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
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


def idmapped_tree(workspace: Path, identity: Identity) -> int:
    """A detached copy of the workspace's mount tree in which the workspace owner's ids
    are the sandbox's (the stage attaches it, stage.py)."""
    st = workspace.stat()
    userns = _userns_fd(st.st_uid, st.st_gid, identity.uid, identity.gid)
    tree = linux.open_tree_clone(str(workspace))
    try:
        linux.mount_setattr_idmap(tree, userns)
    except OSError:
        os.close(tree)
        raise
    return tree
