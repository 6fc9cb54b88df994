"""Walking the files under a directory of a `Beneath` root without ever leaving it.

Directory symlinks are never entered and every directory is opened with O_NOFOLLOW from
its parent's handle, so a directory swapped for a link mid-walk is skipped, not followed;
a file symlink is listed only if it leads, inside the root, to a regular file. A file the
walk found is opened from the walk's own handle on its directory (`open_walked`). Asked
to, the walk leaves out what the ignore files exclude (`tools.files._ignore_files`), reading
them from the same handles, and does not enter an excluded directory.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from tools.files._beneath import READ_FLAGS, Beneath, BeneathError, require_regular
from tools.files._component_walk import path_parts
from tools.files._ignore_files import IgnoreRules

__all__ = ["MAX_WALK_DEPTH", "WalkedFile", "open_walked", "walk_files"]

MAX_WALK_DEPTH = 128  # directories below this depth are not walked (one fd is held per level)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK


@dataclass(frozen=True)
class WalkedFile:
    """A regular file found by `walk_files`. `path` is where the walk found it, `real`
    where it is (they differ for a symlink). Open it with `open_walked` before the walk
    moves on: `dir_fd` is the walk's handle on its directory."""

    path: str
    real: str
    dir_fd: int | None  # None for a symlink: it is opened by its real path instead


def walk_files(
    root: Beneath,
    top: str = ".",
    *,
    skip_dirs: frozenset[str] = frozenset(),
    max_depth: int | None = None,
    follow_links: bool = True,
    ignore_files: bool = False,
) -> Iterator[WalkedFile]:
    """The regular files under `top`, sorted per directory, a directory's files before
    its subdirectories. Directory symlinks are never entered and every directory is
    opened with O_NOFOLLOW from its parent's handle; a file symlink is listed only if
    it leads, inside the root and outside `skip_dirs`, to a regular file. `max_depth`
    counts directories below `top` (0: only its files); MAX_WALK_DEPTH caps it. With
    `ignore_files`, what the ignore files in force exclude is left out (`top` itself
    is walked even if they exclude it: it was asked for by name)."""
    try:
        top_fd = root.open(top, _DIR_FLAGS, follow_links=follow_links)
    except OSError as exc:
        raise root.error(top, exc) from exc
    limit = MAX_WALK_DEPTH if max_depth is None else min(max_depth, MAX_WALK_DEPTH)
    prefix = "/".join(path_parts(top))
    frames: list[tuple[int, str, int, Iterator[str], IgnoreRules | None]] = [(top_fd, prefix, 0, iter(()), None)]
    try:
        rules = IgnoreRules.at(root, prefix) if ignore_files else None
        files, dirs = _listing(root, top_fd, prefix, skip_dirs, rules)
        frames[0] = (top_fd, prefix, 0, iter(dirs if limit > 0 else ()), rules)
        yield from files
        while frames:
            fd, prefix, depth, subdirs, rules = frames[-1]
            name = next(subdirs, None)
            if name is None:
                os.close(frames.pop()[0])
                continue
            child_path = f"{prefix}/{name}" if prefix else name
            try:
                child = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError:
                continue  # replaced by a link, or removed, since it was listed
            frames.append((child, child_path, depth + 1, iter(()), None))
            try:
                child_rules = rules.below(child, child_path) if rules is not None else None
                files, dirs = _listing(root, child, child_path, skip_dirs, child_rules)
            except OSError:
                continue
            frames[-1] = (child, child_path, depth + 1, iter(dirs if depth + 1 < limit else ()), child_rules)
            yield from files
    finally:
        for fd, *_ in frames:
            os.close(fd)


def _listing(
    root: Beneath, dir_fd: int, prefix: str, skip_dirs: frozenset[str], rules: IgnoreRules | None
) -> tuple[list[WalkedFile], list[str]]:
    """The regular files (and links to them) and the subdirectories of one directory,
    less what `rules` exclude."""
    files: list[WalkedFile] = []
    dirs: list[str] = []
    with os.scandir(dir_fd) as it:
        entries = sorted(it, key=lambda e: e.name)
    for entry in entries:
        path = f"{prefix}/{entry.name}" if prefix else entry.name
        with contextlib.suppress(OSError):  # an entry that vanished mid-listing is not there
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in skip_dirs and not (rules and rules.ignored(path, True)):
                    dirs.append(entry.name)
            elif rules and rules.ignored(path, False):
                continue
            elif entry.is_file(follow_symlinks=False):
                files.append(WalkedFile(path, path, dir_fd))
            elif entry.is_symlink() and (real := _link_to_file(root, path, skip_dirs)) is not None:
                files.append(WalkedFile(path, real, None))
    return files, dirs


def _link_to_file(root: Beneath, path: str, skip_dirs: frozenset[str]) -> str | None:
    """Where the symlink `path` leads, if that is a regular file inside and not skipped."""
    try:
        real = root.real_path(path)
        st = root.stat(real, follow_links=False)
    except (OSError, BeneathError):
        return None
    if st is None or not stat.S_ISREG(st.st_mode) or skip_dirs.intersection(real.split("/")[:-1]):
        return None
    return real


def open_walked(root: Beneath, entry: WalkedFile) -> int:
    """A read-only fd on a file the walk found (still a regular file, or an error)."""
    try:
        if entry.dir_fd is not None:
            name = entry.path.rsplit("/", 1)[-1]
            fd = os.open(name, READ_FLAGS | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY, dir_fd=entry.dir_fd)
        else:
            fd = root.open(entry.real, READ_FLAGS, follow_links=False)
    except OSError as exc:
        raise root.error(entry.path, exc) from exc
    return require_regular(fd, entry.path)
