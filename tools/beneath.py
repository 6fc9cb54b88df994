"""Opening paths beneath a directory without ever leaving it, whatever is swapped meanwhile.

Checking a path and then opening it loses a race: between the two, an agent's Bash can
replace a directory with a symlink to /etc. Here the check *is* the open: every path is
resolved by the kernel relative to a handle on the root directory, with `openat2` and
RESOLVE_BENEATH (a `..` or a symlink that would leave the root fails the open itself)
and RESOLVE_NO_MAGICLINKS (no /proc/self/fd tricks). Where `openat2` is missing (Linux
before 5.6, or a seccomp filter that hides it) each component is opened with O_NOFOLLOW
relative to its parent's handle, which is stricter: no symlink is followed at all.

Only regular files are read or written where a file is meant: a FIFO or a device is
opened non-blocking and refused after `fstat`, so it can never hang the harness.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from tools.base import ToolError

__all__ = ["Beneath", "BeneathError", "relative_path"]

_SYS_OPENAT2 = 437  # the same number on every architecture (asm-generic, Linux 5.6)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_BENEATH = 0x08
_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


try:
    _libc: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover - no C library to call (not Linux)
    _libc = None
_openat2_missing = _libc is None or not hasattr(_libc, "syscall")


class BeneathError(ToolError):
    """A path that is not an openable file or directory inside the root; the message says why."""


def relative_path(root: Path, path: str) -> str:
    """`path` as given by a model (relative to `root`, or absolute inside it) made relative.

    Lexical only: the kernel decides at open time where the path really leads. NUL bytes,
    empty paths and absolute paths outside the root are refused here with a message."""
    if "\0" in path:
        raise BeneathError(f"path {path!r} contains a NUL byte; give a plain file path")
    if not path.strip():
        raise BeneathError("the path is empty; give a file path inside the workspace")
    candidate = PurePosixPath(path)
    if candidate.is_absolute():
        try:
            candidate = candidate.relative_to(PurePosixPath(root))
        except ValueError:
            raise BeneathError(
                f"Path {path!r} is outside the workspace; paths must stay inside the workspace {root}"
            ) from None
    text = str(candidate)
    return "." if text in ("", ".") else text


def _describe_type(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


class Beneath:
    """A handle on a root directory; every path opens relative to it and stays inside it.

    Use as a context manager (or call close()); the root is opened once, so a later swap
    of the root's own path does not redirect the calls made through this handle."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        try:
            self.fd = os.open(self.root, _DIR_FLAGS)
        except OSError as exc:
            raise BeneathError(f"cannot open the directory {self.root}: {exc.strerror or exc}") from exc

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Beneath:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- opening -------------------------------------------------------------------------

    def open(self, rel: str, flags: int, mode: int = 0o666) -> int:
        """An fd for `rel` opened with `flags`; raises OSError (errno EXDEV or ELOOP when the
        path would leave the root, ENOENT when it does not exist)."""
        if "\0" in rel:
            raise BeneathError(f"path {rel!r} contains a NUL byte; give a plain file path")
        # openat2 refuses a mode without O_CREAT/O_TMPFILE, and O_PATH with most other flags.
        flags |= os.O_CLOEXEC if flags & os.O_PATH else os.O_CLOEXEC | os.O_NOCTTY
        creates = flags & os.O_CREAT or flags & os.O_TMPFILE == os.O_TMPFILE
        global _openat2_missing
        if not _openat2_missing:
            how = _OpenHow(flags, mode if creates else 0, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
            assert _libc is not None
            fd = _libc.syscall(_SYS_OPENAT2, self.fd, os.fsencode(rel), ctypes.byref(how), ctypes.sizeof(how))
            if fd >= 0:
                return fd
            err = ctypes.get_errno()
            if err == errno.ENOSYS:  # an old kernel: walk from now on
                _openat2_missing = True
            elif err != errno.EPERM:  # EPERM: maybe a seccomp filter hiding openat2; walk this once
                raise OSError(err, os.strerror(err), rel)
        return self._open_walking(rel, flags, mode)

    def _open_walking(self, rel: str, flags: int, mode: int) -> int:
        parts = [p for p in PurePosixPath(rel).parts if p not in ("", ".")]
        stack: list[int] = []
        try:
            current = self.fd
            for i, part in enumerate(parts):
                last = i == len(parts) - 1
                if part == "..":
                    if not stack:
                        raise OSError(errno.EXDEV, "path leaves the directory", rel)
                    os.close(stack.pop())
                    current = stack[-1] if stack else self.fd
                    if last:
                        return os.open(".", flags, mode, dir_fd=current)
                    continue
                if last:
                    return os.open(part, flags | os.O_NOFOLLOW, mode, dir_fd=current)
                fd = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=current)
                stack.append(fd)
                current = fd
            return os.open(".", flags, mode, dir_fd=current)
        finally:
            for fd in stack:
                os.close(fd)

    @contextlib.contextmanager
    def opened(self, rel: str, flags: int, mode: int = 0o666) -> Iterator[int]:
        fd = self.open(rel, flags, mode)
        try:
            yield fd
        finally:
            os.close(fd)

    # -- questions and reads -------------------------------------------------------------

    def stat(self, rel: str) -> os.stat_result | None:
        """The stat of what `rel` names (symlinks inside followed), None if it does not exist."""
        try:
            with self.opened(rel, os.O_PATH) as fd:
                return os.fstat(fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self.error(rel, exc) from exc

    def read_regular(self, rel: str, max_bytes: int | None = None) -> bytes:
        """The bytes of a regular file (at most `max_bytes`). Anything else is a BeneathError."""
        try:
            fd = self.open(rel, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            raise self.error(rel, exc) from exc
        with os.fdopen(fd, "rb") as fh:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise BeneathError(f"{rel} is {_describe_type(mode)}, not a regular file")
            return fh.read() if max_bytes is None else fh.read(max_bytes)

    def read_text_if_regular(self, rel: str, max_bytes: int) -> str | None:
        """For the host's own reads of untrusted places (instructions, skills, config): the
        text of a regular file inside the root, or None when it is absent, not a regular
        file, or reached through a link that leaves the root."""
        try:
            return self.read_regular(rel, max_bytes).decode("utf-8", errors="replace")
        except (BeneathError, OSError):
            return None

    # -- writes --------------------------------------------------------------------------

    def make_dirs(self, rel: str) -> None:
        """Create `rel` and its missing parents, each inside the root."""
        parts = [p for p in PurePosixPath(rel).parts if p not in ("", ".")]
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            parent, name = ("/".join(parts[: i - 1]) or "."), parts[i - 1]
            try:
                with self.opened(parent, _DIR_FLAGS) as pfd:
                    os.mkdir(name, 0o777, dir_fd=pfd)
            except FileExistsError:
                st = self.stat(sub)
                if st is None or not stat.S_ISDIR(st.st_mode):
                    raise BeneathError(f"{sub} exists and is not a directory") from None
            except OSError as exc:
                raise self.error(sub, exc) from exc

    def write_atomic(self, rel: str, data: bytes) -> bool:
        """Replace (or create) the regular file `rel` with `data` through a temporary file
        and a rename in the same directory: readers never see half a file, and a symlink
        at `rel` is replaced rather than followed. Returns True if the file existed."""
        path = PurePosixPath(rel)
        parent, name = str(path.parent), path.name
        if name in ("", ".", ".."):
            raise BeneathError(f"{rel} names a directory; give a file path")
        try:
            pfd = self.open(parent, _DIR_FLAGS)
        except OSError as exc:
            raise self.error(parent, exc) from exc
        try:
            existing = _lstat_at(pfd, name)
            if existing is not None and stat.S_ISDIR(existing.st_mode):
                raise BeneathError(f"{rel} is a directory; give a file path to write")
            if existing is not None and not stat.S_ISREG(existing.st_mode) and not stat.S_ISLNK(existing.st_mode):
                raise BeneathError(f"{rel} is {_describe_type(existing.st_mode)}, not a regular file")
            file_mode = stat.S_IMODE(existing.st_mode) if existing is not None and stat.S_ISREG(existing.st_mode) else None
            tmp = f".{name}.workingset-{os.getpid()}-{id(data) & 0xFFFF:x}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=pfd)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    if file_mode is not None:
                        os.fchmod(fh.fileno(), file_mode)
                os.replace(tmp, name, src_dir_fd=pfd, dst_dir_fd=pfd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=pfd)
                raise
            return existing is not None
        except OSError as exc:
            raise self.error(rel, exc) from exc
        finally:
            os.close(pfd)

    # -- walking -------------------------------------------------------------------------

    def walk_files(self, top: str = ".", *, skip_dirs: frozenset[str] = frozenset(),
                   max_depth: int | None = None) -> Iterator[str]:
        """Relative paths of the regular files under `top`, sorted per directory. Directory
        symlinks are never entered; a file symlink is listed only if it opens inside the root
        as a regular file. `max_depth` counts directories below `top` (0: only its files)."""
        try:
            top_fd = self.open(top, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            raise self.error(top, exc) from exc
        try:
            for dirpath, dirnames, filenames, dfd in os.fwalk(".", dir_fd=top_fd, follow_symlinks=False):
                depth = 0 if dirpath == "." else len(PurePosixPath(dirpath).parts) - 1
                if max_depth is not None and depth >= max_depth:
                    dirnames[:] = []
                else:
                    dirnames[:] = sorted(d for d in dirnames if d not in skip_dirs)
                base = PurePosixPath(top) / PurePosixPath(dirpath)
                for name in sorted(filenames):
                    st = _lstat_at(dfd, name)
                    if st is None:
                        continue
                    rel = str(PurePosixPath(os.path.normpath(str(base / name))))
                    if stat.S_ISREG(st.st_mode):
                        yield rel
                    elif stat.S_ISLNK(st.st_mode):
                        target = self._stat_quiet(rel)
                        if target is not None and stat.S_ISREG(target.st_mode):
                            yield rel
        finally:
            os.close(top_fd)

    def _stat_quiet(self, rel: str) -> os.stat_result | None:
        try:
            with self.opened(rel, os.O_PATH) as fd:
                return os.fstat(fd)
        except OSError:
            return None

    # -- errors --------------------------------------------------------------------------

    def error(self, rel: str, exc: OSError) -> BeneathError:
        """One message a model can act on, for an OSError raised opening `rel`."""
        code = exc.errno
        if code in (errno.EXDEV, errno.ELOOP):
            return BeneathError(
                f"Path {rel!r} leads outside the workspace (through '..' or a symbolic link); "
                f"paths must stay inside the workspace {self.root}"
            )
        if code == errno.ENOENT:
            return BeneathError(f"File not found: {rel}")
        if code == errno.ENOTDIR:
            return BeneathError(f"{rel}: a part of this path is not a directory")
        if code == errno.EISDIR:
            return BeneathError(f"{rel} is a directory, not a file")
        if code in (errno.EACCES, errno.EPERM):
            return BeneathError(f"{rel}: permission denied")
        if code == errno.ENAMETOOLONG:
            return BeneathError(f"{rel[:80]}...: the path is too long")
        return BeneathError(f"{rel}: {exc.strerror or exc}")


def _lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
