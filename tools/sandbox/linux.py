"""The few Linux system calls the sandbox needs that the os module lacks, through ctypes.

Each wrapper raises OSError (with errno) on failure, like the os module does. The
mount-API numbers are the same on every architecture since Linux 5.2 (they come from
the common table); unshare and mount go through libc.
"""

from __future__ import annotations

import ctypes
import errno as errno_module
import os

__all__ = [
    "CLONE_NEWNS",
    "CLONE_NEWUSER",
    "MS_BIND",
    "MS_NODEV",
    "MS_NOSUID",
    "MS_PRIVATE",
    "MS_REC",
    "describe",
    "detached_tmpfs",
    "mount",
    "mount_setattr_idmap",
    "move_mount",
    "open_tree_clone",
    "unshare",
]

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18

_SYS_OPEN_TREE = 428
_SYS_MOVE_MOUNT = 429
_SYS_FSOPEN = 430
_SYS_FSCONFIG = 431
_SYS_FSMOUNT = 432
_SYS_MOUNT_SETATTR = 442
_FSOPEN_CLOEXEC = 1
_FSMOUNT_CLOEXEC = 1
_FSCONFIG_SET_STRING = 1
_FSCONFIG_CMD_CREATE = 6
_MOUNT_ATTR_NOSUID = 0x2
_MOUNT_ATTR_NODEV = 0x4
_OPEN_TREE_CLONE = 1
_AT_FDCWD = -100
_AT_EMPTY_PATH = 0x1000
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_IDMAP = 0x00100000
_MOVE_MOUNT_F_EMPTY_PATH = 0x4

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")
    return result


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(
        _libc.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def open_tree_clone(path: str) -> int:
    """A detached copy of the mount tree at `path` (with its submounts), as an fd."""
    flags = _OPEN_TREE_CLONE | _AT_RECURSIVE | os.O_CLOEXEC
    return _check(_libc.syscall(_SYS_OPEN_TREE, _AT_FDCWD, path.encode(), flags), f"open_tree {path}")


def mount_setattr_idmap(tree_fd: int, userns_fd: int) -> None:
    """Make a detached tree idmapped through the uid/gid maps of a user namespace."""
    attr = _MountAttr(_MOUNT_ATTR_IDMAP, 0, 0, userns_fd)
    _check(
        _libc.syscall(
            _SYS_MOUNT_SETATTR,
            tree_fd,
            b"",
            _AT_EMPTY_PATH | _AT_RECURSIVE,
            ctypes.byref(attr),
            ctypes.sizeof(attr),
        ),
        "mount_setattr(MOUNT_ATTR_IDMAP)",
    )


def move_mount(tree_fd: int, target: str) -> None:
    """Attach a detached tree at `target` in the caller's mount namespace."""
    _check(
        _libc.syscall(_SYS_MOVE_MOUNT, tree_fd, b"", _AT_FDCWD, target.encode(), _MOVE_MOUNT_F_EMPTY_PATH),
        f"move_mount {target}",
    )


def detached_tmpfs(options: dict[str, str]) -> int:
    """A new tmpfs (nosuid, nodev) with these options, as a detached mount: an fd on its
    root, attached nowhere (move_mount attaches it; closing the last fd frees it)."""
    context = _check(_libc.syscall(_SYS_FSOPEN, b"tmpfs", _FSOPEN_CLOEXEC), "fsopen tmpfs")
    try:
        for key, value in options.items():
            _check(
                _libc.syscall(_SYS_FSCONFIG, context, _FSCONFIG_SET_STRING, key.encode(), value.encode(), 0),
                f"tmpfs option {key}={value}",
            )
        _check(_libc.syscall(_SYS_FSCONFIG, context, _FSCONFIG_CMD_CREATE, None, None, 0), "tmpfs create")
        attrs = _MOUNT_ATTR_NOSUID | _MOUNT_ATTR_NODEV
        return _check(_libc.syscall(_SYS_FSMOUNT, context, _FSMOUNT_CLOEXEC, attrs), "fsmount tmpfs")
    finally:
        os.close(context)


def describe(exc: OSError) -> str:
    """errno name and text, e.g. 'EINVAL: Invalid argument'."""
    name = errno_module.errorcode.get(exc.errno or 0, str(exc.errno))
    return f"{name}: {os.strerror(exc.errno or 0)}"
