"""The host reading files the agent can write: never through a link that leaves their directory.

Instructions, skills, `.workingset/config.toml` and `.git/HEAD` live in the workspace,
so the agent may have replaced any of them with a symlink to `~/.ssh/id_rsa`. Each read
here goes through `Beneath`, rooted at a directory the host chose, so a link that leads
out of it fails the open itself; FIFOs and devices are refused without blocking.
The root itself is the host's choice and is opened as named; `real_dir` roots a read at
a subdirectory the agent could have replaced (`.workingset/`, `.git/`) only when it is
itself a directory and not a link to one.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tools.files._beneath import Beneath, BeneathError

__all__ = ["dir_beneath", "is_present", "list_beneath", "read_text_beneath", "real_dir"]


def real_dir(path: Path) -> Beneath | None:
    """A handle on `path` when it is a real directory (not a symlink to one), else None."""
    return dir_beneath(path.parent, path.name)


def dir_beneath(root: Path, rel: str) -> Beneath | None:
    """A handle on the directory `rel` inside `root` when it is reached from `root`
    without any symlink, else None (`root` itself is the host's choice).

    The directory is opened first and then compared with what a link-free open beneath
    `root` finds at `rel`: a link swapped in or out meanwhile gives a different inode, and
    the handle is refused."""
    try:
        beneath = Beneath(root / rel)
    except BeneathError:
        return None
    try:
        with Beneath(root) as base:
            found = base.stat(rel, follow_links=False)
        opened = os.fstat(beneath.fd)
    except (BeneathError, OSError):
        found = None
    if (
        found is None
        or not stat.S_ISDIR(found.st_mode)
        or (found.st_dev, found.st_ino) != (opened.st_dev, opened.st_ino)
    ):
        beneath.close()
        return None
    return beneath


def read_text_beneath(root: Path, rel: str, max_bytes: int) -> str | None:
    """The text of the regular file `rel` inside `root` (at most `max_bytes`), or None when
    it is absent, not a regular file, or reached through a link that leaves `root`. `root`
    is the host's choice (the workspace, a home directory) and is opened as named."""
    try:
        beneath = Beneath(root)
    except BeneathError:
        return None
    with beneath:
        return beneath.read_text_if_regular(rel, max_bytes)


def list_beneath(root: Path, rel: str) -> list[str] | None:
    """The sorted names in the directory `rel` inside `root`; None when it is absent, not
    a directory, or reached through a link that leaves `root`."""
    try:
        beneath = Beneath(root)
    except BeneathError:
        return None
    with beneath:
        try:
            fd = beneath.open(rel, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return None
        try:
            return sorted(os.listdir(fd))
        finally:
            os.close(fd)


def is_present(path: Path) -> bool:
    """Whether anything (a file, a link, a FIFO) exists at `path`: a read that returned None
    for a present path was refused, and deserves a notice."""
    return os.path.lexists(path)
