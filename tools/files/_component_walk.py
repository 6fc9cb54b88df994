"""A path resolved one component at a time beneath a directory handle, the kernel
following no symlink on the way.

Each component is opened or examined with O_NOFOLLOW relative to the handle on its
parent, so a directory swapped for a symlink midway cannot lead out: the walk only
ever moves from handles it already holds. `open_walking` follows no link at all;
`real_path` reads the links it meets and walks on from the handles it holds, which is
how `tools.files._beneath` follows links inside the root where `openat2` is missing.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable

__all__ = ["DIR_FLAGS", "MAX_LINKS", "lstat_at", "open_walking", "path_parts", "real_path"]

DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
MAX_LINKS = 40  # the kernel's own limit on symlinks in one lookup


def path_parts(rel: str) -> list[str]:
    return [p for p in rel.split("/") if p not in ("", ".")]


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def open_walking(root_fd: int, rel: str, flags: int, mode: int) -> int:
    """Open `rel` one component at a time with O_NOFOLLOW: no symlink is followed."""
    names = path_parts(rel)
    wants_link = flags & os.O_NOFOLLOW  # O_PATH|O_NOFOLLOW: a handle on the link itself
    stack: list[int] = []
    try:
        current = root_fd
        for i, part in enumerate(names):
            last = i == len(names) - 1
            if part == "..":
                if not stack:
                    raise OSError(errno.EXDEV, "path leaves the directory", rel)
                os.close(stack.pop())
                current = stack[-1] if stack else root_fd
                if last:
                    return os.open(".", flags, mode, dir_fd=current)
                continue
            if last:
                fd = os.open(part, flags | os.O_NOFOLLOW, mode, dir_fd=current)
                if flags & os.O_PATH and not wants_link and stat.S_ISLNK(os.fstat(fd).st_mode):
                    os.close(fd)
                    raise OSError(errno.ELOOP, "a symbolic link where none may be", rel)
                return fd
            try:
                fd = os.open(part, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=current)
            except NotADirectoryError:
                if (st := lstat_at(current, part)) is not None and stat.S_ISLNK(st.st_mode):
                    raise OSError(errno.ELOOP, "a symbolic link where none may be", rel) from None
                raise
            stack.append(fd)
            current = fd
        return os.open(".", flags, mode, dir_fd=current)
    finally:
        for fd in stack:
            os.close(fd)


def real_path(root_fd: int, rel: str, *, inside: Callable[[str], str | None], missing_ok: bool = False) -> str:
    """The path `rel` leads to, relative to the root ("." for the root itself), with
    every symlink on the way resolved, so it contains none. Each step opens one
    component with O_NOFOLLOW relative to its parent's handle, so a swap midway cannot
    lead out. An absolute link counts as inside when `inside` maps its text to a place
    under the root. Raises OSError: EXDEV when the path leaves the root (by `..` or a
    link), ENOENT when a part is missing (with `missing_ok`, the missing tail is kept as
    named instead, unless it holds a `..`), ELOOP after 40 links, ENOTDIR when a part
    before the last is not a directory."""
    pending = path_parts(rel)[::-1]
    names: list[str] = []
    handles: list[int] = []
    links = 0
    try:
        while pending:
            part = pending.pop()
            if part == "..":
                if not names:
                    raise OSError(errno.EXDEV, "path leaves the directory", rel)
                names.pop()
                os.close(handles.pop())
                continue
            parent = handles[-1] if handles else root_fd
            try:
                st = os.stat(part, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                if missing_ok and ".." not in pending:
                    return "/".join([*names, part, *reversed(pending)])
                raise
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if links > MAX_LINKS:
                    raise OSError(errno.ELOOP, "too many levels of symbolic links", rel)
                target, from_root = _link_target(parent, part, rel, inside)
                if from_root:
                    names.clear()
                    while handles:
                        os.close(handles.pop())
                pending.extend(path_parts(target)[::-1])
                continue
            names.append(part)
            if pending:
                handles.append(os.open(part, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent))
        return "/".join(names) or "."
    finally:
        for fd in handles:
            os.close(fd)


def _link_target(dir_fd: int, name: str, rel: str, inside: Callable[[str], str | None]) -> tuple[str, bool]:
    """Where the link `name` points, and whether that is relative to the root (an
    absolute target under it) rather than to the link's directory."""
    target = os.readlink(name, dir_fd=dir_fd)
    if not target.startswith("/"):
        return target, False
    under = inside(target)
    if under is None:
        raise OSError(errno.EXDEV, "an absolute symbolic link out of the root", rel)
    return under, True
