"""Removing a directory tree an agent wrote, however deep, long-named or locked it is.

`shutil.rmtree` recurses once per level (a tree 5,000 directories deep ends in
RecursionError, which `ignore_errors` hides, leaving the tree), and stops at a directory
the agent made unreadable (`chmod 000`) or read-only. Here the walk is a loop over an
explicit stack that holds one directory handle at a time, so neither depth nor a path
longer than PATH_MAX matters: every directory is opened by its name from its parent's
handle with O_NOFOLLOW (a symlink is unlinked, never followed), and the walk climbs back
through ".." only after checking that ".." is the directory it came from (device and
inode), so a directory moved meanwhile cannot lead it elsewhere. A directory it cannot
list or change is given u+rwx first, through an O_PATH handle on it, never by a path a
swapped link could redirect. It does not cross into another file system.

Meant for trees nobody writes any more (the agent's processes are gone): an entry made
during the removal makes it fail with ENOTEMPTY rather than chase the writer.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["remove_at", "remove_tree"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_OWNER_ALL = stat.S_IRWXU


def remove_tree(path: Path | str, *, ignore_errors: bool = False) -> None:
    """Remove `path` and everything below it (a link at `path` is removed, not followed);
    nothing when it does not exist. Raises OSError unless `ignore_errors`."""
    path = Path(path)
    try:
        parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    except OSError:
        if ignore_errors:
            return
        raise
    try:
        remove_at(parent, path.name)
    except OSError:
        if not ignore_errors:
            raise
    finally:
        os.close(parent)


def remove_at(dir_fd: int, name: str) -> None:
    """Remove whatever is at `name` in the directory `dir_fd` (a directory with all it
    holds), following no link; nothing when there is nothing."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        _unlink(dir_fd, name)
        return
    _remove_directory(dir_fd, name)
    os.rmdir(name, dir_fd=dir_fd)


@dataclass
class _Level:
    """A directory being emptied: its name in its parent, its parent's identity (checked
    when the walk climbs back), and the subdirectories still to remove."""

    name: str
    parent: tuple[int, int]
    subdirs: list[str] = field(default_factory=list)


def _remove_directory(top_parent: int, top_name: str) -> None:
    """Empty the directory `top_name` (left in place for the caller to rmdir)."""
    fd = _enter(top_parent, top_name)
    device = os.fstat(fd).st_dev
    levels = [_Level(top_name, _identity(top_parent), _clear_files(fd))]
    try:
        while True:
            level = levels[-1]
            if level.subdirs:
                name = level.subdirs.pop()
                try:
                    child = _enter(fd, name)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # no longer a directory
                        _unlink(fd, name)
                        continue
                    if exc.errno == errno.ENOENT:
                        continue
                    raise
                if os.fstat(child).st_dev != device:
                    os.close(child)
                    raise OSError(errno.EXDEV, "another file system is mounted inside the tree", name)
                parent = _identity(fd)
                os.close(fd)
                fd = child
                levels.append(_Level(name, parent, _clear_files(fd)))
                continue
            if len(levels) == 1:
                return
            levels.pop()
            up = os.open("..", _DIR_FLAGS, dir_fd=fd)
            if _identity(up) != level.parent:
                os.close(up)
                raise OSError(errno.ESTALE, "the tree was moved while it was being removed", level.name)
            os.close(fd)
            fd = up
            os.rmdir(level.name, dir_fd=fd)
    finally:
        os.close(fd)


def _identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _enter(parent: int, name: str) -> int:
    """A handle on the directory `name`, which we may then list and change."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    except PermissionError:
        _grant_owner(parent, name)
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    mode = os.fstat(fd).st_mode
    if mode & _OWNER_ALL != _OWNER_ALL:
        os.fchmod(fd, stat.S_IMODE(mode) | _OWNER_ALL)
    return fd


def _grant_owner(parent: int, name: str) -> None:
    """u+rwx on a directory we cannot open for reading: through an O_PATH handle (which
    needs no permission on it), so the chmod lands on that directory and nothing else."""
    handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    try:
        mode = os.fstat(handle).st_mode
        os.chmod(f"/proc/self/fd/{handle}", stat.S_IMODE(mode) | _OWNER_ALL)
    finally:
        os.close(handle)


def _clear_files(fd: int) -> list[str]:
    """Unlink everything in the directory `fd` but its subdirectories; returns their names."""
    subdirs: list[str] = []
    with os.scandir(fd) as entries:
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if is_dir:
                subdirs.append(entry.name)
            else:
                _unlink(fd, entry.name)
    return subdirs


def _unlink(dir_fd: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dir_fd)
