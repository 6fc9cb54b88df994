"""Writing one call's layer back into the workspace: the command's changes, landed.

The layer's upper directory says what the command changed, the way overlayfs records it:
- a file, symlink, FIFO or socket: the entry as it now is (overlayfs copies a file up
  whole before its first change, so it was created or replaced);
- a directory: one the command made, or one with changes inside; marked opaque (the
  `overlay.opaque` xattr), one that replaced the workspace's (deleted, then made again):
  whatever is not in it goes;
- a whiteout (a character device 0/0): the workspace's entry was deleted.
The stage mounts the overlay with `redirect_dir=nofollow,metacopy=off`, so there is no
other encoding: a renamed directory was copied (rename gave EXDEV), and a file's data is
in the upper layer, not left below.

The upper layer is untrusted (the command wrote it) and the workspace may hold links
the command planted in an earlier call, so:
- every step is relative to an open directory, and nothing is followed (O_NOFOLLOW on
  every open, AT_SYMLINK_NOFOLLOW on every stat, link and time change);
- the walk is iterative and holds two directory fds at a time, climbing back through
  ".." and checking it reached the directory it came from: no recursion limit, no
  PATH_MAX, no fd per level of a deep tree;
- a file is written under a fresh name beside its target and renamed over it (a reader
  sees the old file or the new one); its data is copied range by range between holes
  (SEEK_DATA/SEEK_HOLE), up to its size — blocks fallocated past the end stay behind;
- what is written gets the workspace owner's ids (when the harness is root), the
  upper's mode without setuid/setgid (a directory keeps a setgid bit it already had:
  that is group inheritance, no privilege), and the upper's times (directories after
  their contents; the workspace root's are left to the kernel);
- two names of one upper file become two names of one file, and the data written
  never exceeds the layer's cap: hard links cannot multiply what lands;
- the protected paths (`.git`, `.workingset`) are never touched, whatever the layer
  holds, and never deleted from under a directory that is replaced;
- one failing entry does not stop the rest; the failures are reported.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from tools.files import remove_at
from tools.sandbox.linux import describe

__all__ = ["MergeReport", "merge_layer"]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_LINK_DEPTH = 64  # deeper first names of a hard-linked file are copied, not walked to
_REPORTED = 5
_SHOWN = 100  # characters of a failed path shown (its end)
_CHUNK = 1 << 30
_T = TypeVar("_T")

Rel = tuple[str, ...]  # a path below the workspace, by components


@dataclass
class MergeReport:
    """What the merge did: entries written or removed, file data copied, what failed."""

    entries: int = 0
    data_bytes: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)  # the first few, "path: reason"
    over_budget: bool = False


class _Moved(Exception):
    """A directory the walk climbed back to is not the one it left: the workspace was
    rearranged during the merge, and nothing more can be placed safely."""


def merge_layer(
    upper: int,
    workspace: int,
    *,
    protected: Iterable[Rel],
    owner: tuple[int, int] | None,
    opaque_xattr: str,
    budget: int,
) -> MergeReport:
    """Apply the upper directory `upper` to the directory `workspace` (both open fds,
    left open). `budget` bounds the file data written."""
    return _Merge(workspace, frozenset(protected), owner, opaque_xattr, budget).run(upper)


def _reason(exc: OSError) -> str:
    return describe(exc) if exc.errno else (exc.strerror or str(exc))


def _id(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _climb(fd: int, expected: tuple[int, int]) -> int:
    """The directory above `fd`, if it is the one recorded on the way down."""
    up = os.open("..", _DIR, dir_fd=fd)
    if _id(up) != expected:
        os.close(up)
        raise _Moved
    return up


def _fresh(dir_fd: int, make: Callable[[str], _T]) -> tuple[str, _T]:
    """An entry made by `make` under a new unused name in `dir_fd`."""
    while True:
        name = f".workingset-merge-{secrets.token_hex(6)}"
        try:
            return name, make(name)
        except FileExistsError:
            continue


@dataclass
class _Frame:
    names: list[str]  # entries of this upper directory still to apply
    replace: bool  # opaque (or inside one): the workspace's entries not in it go
    upper: os.stat_result
    above: tuple[tuple[int, int], tuple[int, int]] | None  # (upper, workspace) ids of the parents


class _Merge:
    def __init__(
        self, root: int, protected: frozenset[Rel], owner: tuple[int, int] | None, opaque_xattr: str, budget: int
    ):
        self.root = root
        self.protected = protected
        self.guarded = frozenset(p[:i] for p in protected for i in range(1, len(p)))  # their ancestors
        self.owner = owner
        self.opaque_xattr = opaque_xattr
        self.budget = budget
        self.report = MergeReport()
        self.links: dict[int, tuple[Rel, int]] = {}  # upper inode -> (first name, its inode here)
        self.rel: list[str] = []

    def run(self, upper: int) -> MergeReport:
        u, w = os.dup(upper), os.dup(self.root)
        try:
            frames = [_Frame(os.listdir(u), False, os.fstat(u), None)]
            while frames:
                frame = frames[-1]
                if frame.names:
                    name = frame.names.pop()
                    child = self._entry(u, w, name, frame.replace)
                    if child is not None:
                        os.close(u)
                        os.close(w)
                        u, w, entered = child
                        self.rel.append(name)
                        frames.append(entered)
                    continue
                # The root's times are left to the kernel: bwrap's mount points for absent
                # protected names touched the upper's, and those are no change of the command's.
                self._settle_dir(w, frame.upper, times=frame.above is not None)
                frames.pop()
                if frame.above is None:
                    break
                up_u = _climb(u, frame.above[0])
                os.close(u)
                u = up_u
                up_w = _climb(w, frame.above[1])
                os.close(w)
                w = up_w
                self.rel.pop()
        except _Moved:
            self._failed(tuple(self.rel), "the workspace was rearranged during the merge; the rest was not written")
        except OSError as exc:
            self._failed(tuple(self.rel), f"{_reason(exc)}; the rest was not written")
        finally:
            os.close(u)
            os.close(w)
        return self.report

    def _failed(self, rel: Rel, reason: str) -> None:
        self.report.failed += 1
        if len(self.report.failures) < _REPORTED:
            shown = ("/".join(rel) or ".").encode(errors="surrogateescape").decode(errors="replace")
            if len(shown) > _SHOWN:
                shown = f"…{shown[-_SHOWN:]}"
            self.report.failures.append(f"{shown}: {reason}")

    def _entry(self, u: int, w: int, name: str, replace: bool) -> tuple[int, int, _Frame] | None:
        rel = (*self.rel, name)
        if rel in self.protected:
            return None
        try:
            st = os.stat(name, dir_fd=u, follow_symlinks=False)
            kind = stat.S_IFMT(st.st_mode)
            if kind == stat.S_IFDIR:
                return self._enter_dir(u, w, name, st, rel, replace)
            if kind == stat.S_IFCHR and st.st_rdev == 0:  # a whiteout
                self._remove(w, name, rel)
            elif kind == stat.S_IFREG:
                self._file(u, w, name, st, rel)
            elif kind in (stat.S_IFLNK, stat.S_IFIFO, stat.S_IFSOCK):
                self._special(u, w, name, st, rel)
            else:  # devices: the command cannot make them
                return None
            self.report.entries += 1
        except OSError as exc:
            self._failed(rel, _reason(exc))
        return None

    def _enter_dir(
        self, u: int, w: int, name: str, st: os.stat_result, rel: Rel, replace: bool
    ) -> tuple[int, int, _Frame]:
        child_u = os.open(name, _DIR, dir_fd=u)
        child_w = None
        try:
            replace = replace or self._opaque(child_u)
            there = _lstat(w, name)
            if there is not None and not stat.S_ISDIR(there.st_mode):
                self._remove(w, name, rel)
                there = None
            if there is None:
                os.mkdir(name, 0o700, dir_fd=w)
            child_w = os.open(name, _DIR, dir_fd=w)
            if there is None and self.owner is not None:
                os.fchown(child_w, *self.owner)
            names = os.listdir(child_u)
            if replace and there is not None:
                keep = set(names)
                for old in os.listdir(child_w):
                    if old not in keep:
                        self._remove_reporting(child_w, old, (*rel, old))
            self.report.entries += 1
            return child_u, child_w, _Frame(names, replace, st, (_id(u), _id(w)))
        except BaseException:
            os.close(child_u)
            if child_w is not None:
                os.close(child_w)
            raise

    def _opaque(self, fd: int) -> bool:
        try:
            return os.getxattr(fd, self.opaque_xattr) == b"y"
        except OSError as exc:
            if exc.errno in (errno.ENODATA, errno.ENOTSUP):
                return False
            raise

    def _settle_dir(self, w: int, st: os.stat_result, *, times: bool) -> None:
        """The upper's mode and times, once its contents are in. No setuid bit; a setgid
        bit only as the workspace had it (inherited from its parent, group ownership)."""
        try:
            now = os.fstat(w)
            mode = stat.S_IMODE(st.st_mode) & 0o1777 | stat.S_IMODE(now.st_mode) & stat.S_ISGID
            if stat.S_IMODE(now.st_mode) != mode:
                os.fchmod(w, mode)
            if times and (now.st_atime_ns, now.st_mtime_ns) != (st.st_atime_ns, st.st_mtime_ns):
                os.utime(w, ns=(st.st_atime_ns, st.st_mtime_ns))
        except OSError as exc:
            self._failed(tuple(self.rel), describe(exc))

    # --- removing ---------------------------------------------------------------------

    def _remove_reporting(self, w: int, name: str, rel: Rel) -> None:
        try:
            self._remove(w, name, rel)
            self.report.entries += 1
        except OSError as exc:
            self._failed(rel, describe(exc))

    def _remove(self, w: int, name: str, rel: Rel) -> None:
        """Delete the workspace's entry `name`, all of it but protected paths below it."""
        if rel in self.protected:
            return
        there = _lstat(w, name)
        if there is None:
            return
        if not stat.S_ISDIR(there.st_mode):
            os.unlink(name, dir_fd=w)
        elif rel in self.guarded:  # a protected path lies below: it and its ancestors stay
            fd = os.open(name, _DIR, dir_fd=w)
            try:
                for child in os.listdir(fd):
                    self._remove(fd, child, (*rel, child))
            finally:
                os.close(fd)
        else:
            remove_at(w, name)

    def _clear_for(self, w: int, name: str, rel: Rel) -> None:
        """A directory where a non-directory goes must go first (rename cannot replace it)."""
        there = _lstat(w, name)
        if there is not None and stat.S_ISDIR(there.st_mode):
            self._remove(w, name, rel)

    def _place(self, w: int, temporary: str, name: str) -> None:
        try:
            os.rename(temporary, name, src_dir_fd=w, dst_dir_fd=w)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=w)
            raise

    # --- writing ----------------------------------------------------------------------

    def _file(self, u: int, w: int, name: str, st: os.stat_result, rel: Rel) -> None:
        self._clear_for(w, name, rel)
        if st.st_nlink > 1 and st.st_ino in self.links and self._link(w, name, *self.links[st.st_ino]):
            return
        source = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=u)
        try:
            temporary, target = _fresh(w, lambda t: os.open(t, _NEW_FILE, 0o600, dir_fd=w))
            try:
                self._copy(source, target, st.st_size)
                if self.owner is not None:
                    os.fchown(target, *self.owner)
                os.fchmod(target, stat.S_IMODE(st.st_mode) & 0o777)
                os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
                here = os.fstat(target).st_ino
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary, dir_fd=w)
                raise
            finally:
                os.close(target)
        finally:
            os.close(source)
        self._place(w, temporary, name)
        if st.st_nlink > 1:
            self.links[st.st_ino] = (rel, here)

    def _copy(self, source: int, target: int, size: int) -> None:
        """The data ranges of `source` up to `size`, at the same offsets; holes stay holes."""
        position = 0
        while position < size:
            try:
                start = os.lseek(source, position, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno != errno.ENXIO:  # ENXIO: no data past `position`
                    raise
                break
            if start >= size:
                break
            end = min(os.lseek(source, start, os.SEEK_HOLE), size)
            self._spend(end - start)
            os.lseek(target, start, os.SEEK_SET)
            while start < end:
                sent = os.sendfile(target, source, start, min(end - start, _CHUNK))
                if sent == 0:
                    raise OSError(errno.EIO, "the file shrank while it was copied")
                start += sent
            position = end
        os.ftruncate(target, size)

    def _spend(self, count: int) -> None:
        self.budget -= count
        if self.budget < 0:
            self.report.over_budget = True
            raise OSError(0, "more data than the layer's cap (hard links copied apart); not written")
        self.report.data_bytes += count

    def _link(self, w: int, name: str, first: Rel, inode: int) -> bool:
        """Give the file already written at `first` the name `name` too; False if it
        cannot be reached (too deep, or gone) and must be copied instead."""
        if len(first) > _LINK_DEPTH:
            return False
        parent = os.dup(self.root)
        try:
            for part in first[:-1]:
                below = os.open(part, _DIR, dir_fd=parent)
                os.close(parent)
                parent = below
            temporary, _ = _fresh(
                w, lambda t: os.link(first[-1], t, src_dir_fd=parent, dst_dir_fd=w, follow_symlinks=False)
            )
        except OSError:
            return False
        finally:
            os.close(parent)
        made = _lstat(w, temporary)
        if made is None or not stat.S_ISREG(made.st_mode) or made.st_ino != inode:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=w)
            return False
        self._place(w, temporary, name)
        return True

    def _special(self, u: int, w: int, name: str, st: os.stat_result, rel: Rel) -> None:
        """A symlink (as a link, never followed), a FIFO or a socket."""
        self._clear_for(w, name, rel)
        kind = stat.S_IFMT(st.st_mode)
        if kind == stat.S_IFLNK:
            target = os.readlink(name, dir_fd=u)
            temporary, _ = _fresh(w, lambda t: os.symlink(target, t, dir_fd=w))
        elif kind == stat.S_IFIFO:
            temporary, _ = _fresh(w, lambda t: os.mkfifo(t, 0o600, dir_fd=w))
        else:
            temporary, _ = _fresh(w, lambda t: os.mknod(t, stat.S_IFSOCK | 0o600, dir_fd=w))
        try:
            if self.owner is not None:
                os.chown(temporary, *self.owner, dir_fd=w, follow_symlinks=False)
            if kind != stat.S_IFLNK:  # a node just made here, not a link
                os.chmod(temporary, stat.S_IMODE(st.st_mode) & 0o777, dir_fd=w)
            os.utime(temporary, ns=(st.st_atime_ns, st.st_mtime_ns), dir_fd=w, follow_symlinks=False)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=w)
            raise
        self._place(w, temporary, name)
