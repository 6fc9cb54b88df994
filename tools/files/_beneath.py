"""Opening paths beneath a directory without ever leaving it, whatever is swapped meanwhile.

Checking a path and then opening it loses a race: between the two, an agent's Bash can
replace a directory with a symlink to /etc. Here the check *is* the open: every path is
resolved by the kernel relative to a handle on the root directory, with `openat2` and
RESOLVE_BENEATH (a `..` or a symlink that would leave the root fails the open itself)
and RESOLVE_NO_MAGICLINKS (no /proc/self/fd tricks). Where `openat2` is missing (Linux
before 5.6, or a seccomp filter that hides it) each component is opened with O_NOFOLLOW
relative to its parent's handle, and symlinks inside the root are followed by reading
them and walking on from the handles already held, never by the kernel (that walk is
`tools.files._component_walk`).

`real_path` gives the symlink-free path a path leads to (inside the root). Opening that
path with `follow_links=False` binds the open to it: a link swapped in afterwards makes
the open fail instead of leading elsewhere, so whatever a caller checked about the real
path (a deny rule, a protected directory) is true of the file it opens.

Only regular files are read or written where a file is meant: a FIFO or a device is
opened non-blocking and refused after `fstat`, so it can never hang the harness.
Walking the files of a directory tree beneath the root is `tools.files._tree_walk`.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from tools.base import ToolError
from tools.encodable import name_from_shown
from tools.files._component_walk import DIR_FLAGS, lstat_at, open_walking, path_parts
from tools.files._component_walk import real_path as walked_real_path

__all__ = ["MAX_PATH_BYTES", "READ_FLAGS", "Beneath", "BeneathError", "relative_path", "require_regular"]

_SYS_OPENAT2 = 437  # the same number on every architecture (asm-generic, Linux 5.6)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK  # non-blocking: a FIFO opens at once, then is refused
MAX_PATH_BYTES = 4096  # PATH_MAX: no longer path can be opened in one call anyway


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


try:
    _libc: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover - no C library to call (not Linux)
    _libc = None
_openat2_missing = _libc is None or not hasattr(_libc, "syscall")


class BeneathError(ToolError):
    """A path that is not an openable file or directory inside the root; the message says why."""


def _shown(path: str) -> str:
    return repr(path) if len(path) <= 120 else f"{path[:80]!r}... ({len(path)} characters)"


def _check_nul(path: str) -> None:
    if "\0" in path:
        raise BeneathError(f"path {_shown(path)} contains a NUL byte; give a plain file path")


def relative_path(root: Path, path: str) -> str:
    """`path` as given by a model (relative to `root`, or absolute inside it) made relative.

    Lexical only: the kernel decides at open time where the path really leads. NUL bytes,
    text that is no file name, paths over MAX_PATH_BYTES, empty paths and absolute paths
    outside the root are refused here with a message. A name shown with escapes for bytes
    that are not UTF-8 (`tools.encodable.shown_name`) is read back to those bytes."""
    path = name_from_shown(path)
    _check_nul(path)
    if not path.strip():
        raise BeneathError("the path is empty; give a file path inside the workspace")
    try:
        size = len(os.fsencode(path))
    except UnicodeEncodeError:
        raise BeneathError(
            f"path {_shown(path)} is not valid text (an unpaired surrogate); give a plain file path"
        ) from None
    if size > MAX_PATH_BYTES:
        raise BeneathError(f"the path is {size} bytes long, over the limit of {MAX_PATH_BYTES}; give a shorter path")
    candidate = PurePosixPath(path)
    if candidate.is_absolute():
        try:
            candidate = candidate.relative_to(PurePosixPath(root))
        except ValueError:
            raise BeneathError(
                f"Path {_shown(path)} is outside the workspace; paths must stay inside the workspace {root}"
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


def require_regular(fd: int, rel: str) -> int:
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise BeneathError(f"{rel} is {_describe_type(mode)}, not a regular file")
    return fd


class Beneath:
    """A handle on a root directory; every path opens relative to it and stays inside it.

    Use as a context manager (or call close()); the root is opened once, so a later swap
    of the root's own path does not redirect the calls made through this handle."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        try:
            self.fd = os.open(self.root, DIR_FLAGS)
        except OSError as exc:
            raise BeneathError(f"cannot open the directory {self.root}: {exc.strerror or exc}") from exc
        self._root_names: tuple[PurePosixPath, ...] | None = None

    def _inside(self, target: str) -> str | None:
        """An absolute link target that names a place under the root (by the root's path as
        given or resolved), made relative to it; None for any other absolute target. Only
        the text is read: the result is still resolved beneath the root's handle."""
        if self._root_names is None:
            absolute = self.root.absolute()
            self._root_names = (PurePosixPath(absolute), PurePosixPath(absolute.resolve()))
        for name in self._root_names:
            if PurePosixPath(target).is_relative_to(name):
                return str(PurePosixPath(target).relative_to(name))
        return None

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Beneath:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- opening -------------------------------------------------------------------------

    def open(self, rel: str, flags: int, mode: int = 0o666, *, follow_links: bool = True) -> int:
        """An fd for `rel` opened with `flags`. With `follow_links`, symlinks that stay
        inside the root are followed (a trailing one too, unless `flags` hold O_NOFOLLOW);
        without, any symlink on the way fails the open with ELOOP. Raises OSError: EXDEV
        or ELOOP when the path would leave the root, ENOENT when it does not exist."""
        _check_nul(rel)
        # openat2 refuses a mode without O_CREAT/O_TMPFILE, and O_PATH with most other flags.
        flags |= os.O_CLOEXEC if flags & os.O_PATH else os.O_CLOEXEC | os.O_NOCTTY
        if not _openat2_missing:
            try:
                fd = self._openat2(rel, flags, mode, follow_links)
            except OSError as exc:
                if not follow_links or exc.errno != errno.EXDEV:
                    raise
                # RESOLVE_BENEATH refuses every absolute link, even one into the root.
                return self.open(self._without_links(rel, flags), flags, mode, follow_links=False)
            if fd is not None:
                return fd
        if follow_links:
            rel = self._without_links(rel, flags)
        return open_walking(self.fd, rel, flags, mode)

    def _openat2(self, rel: str, flags: int, mode: int, follow_links: bool) -> int | None:
        """The fd, or None when openat2 cannot be used here (then the caller walks)."""
        global _openat2_missing
        creates = flags & os.O_CREAT or flags & os.O_TMPFILE == os.O_TMPFILE
        resolve = _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS | (0 if follow_links else _RESOLVE_NO_SYMLINKS)
        how = _OpenHow(flags, mode if creates else 0, resolve)
        assert _libc is not None
        # syscall() is variadic: give every argument its exact C type.
        fd = _libc.syscall(
            ctypes.c_long(_SYS_OPENAT2),
            ctypes.c_int(self.fd),
            ctypes.c_char_p(os.fsencode(rel)),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
        if fd >= 0:
            return fd
        err = ctypes.get_errno()
        if err == errno.ENOSYS:  # an old kernel: walk from now on
            _openat2_missing = True
            return None
        if err == errno.EPERM:  # maybe a seccomp filter hiding openat2; walk this once
            return None
        raise OSError(err, os.strerror(err), rel)

    def _without_links(self, rel: str, flags: int) -> str:
        """`rel` with the links it passes through resolved, for the walking open (which
        follows none); a trailing link stays when `flags` ask for O_NOFOLLOW."""
        path = PurePosixPath(rel)
        if flags & os.O_NOFOLLOW and path.name not in ("", ".", ".."):
            return f"{self.real_path(str(path.parent))}/{path.name}"
        return self.real_path(rel, missing_ok=bool(flags & os.O_CREAT))

    @contextlib.contextmanager
    def opened(self, rel: str, flags: int, mode: int = 0o666, *, follow_links: bool = True) -> Iterator[int]:
        fd = self.open(rel, flags, mode, follow_links=follow_links)
        try:
            yield fd
        finally:
            os.close(fd)

    def real_path(self, rel: str, *, missing_ok: bool = False) -> str:
        """The path `rel` leads to, relative to the root ("." for the root itself), with
        every symlink on the way resolved, so it contains none (`tools.files._component_walk`:
        a swap midway cannot lead out). An absolute link counts as inside when its text
        names a place under the root. Raises OSError: EXDEV when the path leaves the root
        (by `..` or a link), ENOENT when a part is missing (with `missing_ok`, the missing
        tail is kept as named instead, unless it holds a `..`), ELOOP after 40 links,
        ENOTDIR when a part before the last is not a directory."""
        _check_nul(rel)
        return walked_real_path(self.fd, rel, inside=self._inside, missing_ok=missing_ok)

    # -- questions and reads -------------------------------------------------------------

    def stat(self, rel: str, *, follow_links: bool = True) -> os.stat_result | None:
        """The stat of what `rel` names (symlinks inside followed), None if it does not exist."""
        try:
            with self.opened(rel, os.O_PATH, follow_links=follow_links) as fd:
                return os.fstat(fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self.error(rel, exc) from exc

    def open_regular(self, rel: str, *, follow_links: bool = True) -> int:
        """A read-only fd on the regular file `rel`; anything else is a BeneathError."""
        try:
            fd = self.open(rel, READ_FLAGS, follow_links=follow_links)
        except OSError as exc:
            raise self.error(rel, exc) from exc
        return require_regular(fd, rel)

    def read_regular(self, rel: str, max_bytes: int | None = None, *, follow_links: bool = True) -> bytes:
        """The bytes of a regular file (at most `max_bytes`). Anything else is a BeneathError."""
        with os.fdopen(self.open_regular(rel, follow_links=follow_links), "rb") as fh:
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

    def make_dirs(self, rel: str, *, follow_links: bool = True) -> None:
        """Create `rel` and its missing parents, each inside the root."""
        parts = path_parts(rel)
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            parent, name = ("/".join(parts[: i - 1]) or "."), parts[i - 1]
            try:
                with self.opened(parent, DIR_FLAGS, follow_links=follow_links) as pfd:
                    os.mkdir(name, 0o777, dir_fd=pfd)
            except FileExistsError:
                st = self.stat(sub, follow_links=follow_links)
                if st is None or not stat.S_ISDIR(st.st_mode):
                    raise BeneathError(f"{sub} exists and is not a directory") from None
            except OSError as exc:
                raise self.error(sub, exc) from exc

    def write_atomic(self, rel: str, data: bytes, *, follow_links: bool = True) -> bool:
        """Replace (or create) the regular file `rel` with `data` through a temporary file
        and a rename in the same directory: readers never see half a file, an existing
        file keeps its permission bits, and a symlink at `rel` is replaced rather than
        followed. Returns True if something existed at `rel`."""
        path = PurePosixPath(rel)
        parent, name = str(path.parent), path.name
        if name in ("", ".", ".."):
            raise BeneathError(f"{rel} names a directory; give a file path")
        try:
            pfd = self.open(parent, DIR_FLAGS, follow_links=follow_links)
        except OSError as exc:
            raise self.error(parent, exc) from exc
        try:
            existing = lstat_at(pfd, name)
            if existing is not None and stat.S_ISDIR(existing.st_mode):
                raise BeneathError(f"{rel} is a directory; give a file path to write")
            if existing is not None and not stat.S_ISREG(existing.st_mode) and not stat.S_ISLNK(existing.st_mode):
                raise BeneathError(f"{rel} is {_describe_type(existing.st_mode)}, not a regular file")
            keep_mode = (
                stat.S_IMODE(existing.st_mode) if existing is not None and stat.S_ISREG(existing.st_mode) else None
            )
            _replace_at(pfd, name, data, keep_mode)
            return existing is not None
        except OSError as exc:
            raise self.error(rel, exc) from exc
        finally:
            os.close(pfd)

    # -- errors --------------------------------------------------------------------------

    def error(self, rel: str, exc: OSError) -> BeneathError:
        """One message a model can act on, for an OSError raised opening `rel`."""
        code = exc.errno
        if code in (errno.EXDEV, errno.ELOOP):
            return BeneathError(
                f"Path {_shown(rel)} leads outside the workspace (through '..' or a symbolic link); "
                f"paths must stay inside the workspace {self.root}"
            )
        messages = {
            errno.ENOENT: f"File not found: {rel}",
            errno.ENOTDIR: f"{rel}: a part of this path is not a directory",
            errno.EISDIR: f"{rel} is a directory, not a file",
            errno.EACCES: f"{rel}: permission denied",
            errno.EPERM: f"{rel}: permission denied",
            errno.ENAMETOOLONG: f"{rel[:80]}...: the path or one of its names is too long",
            errno.ENXIO: f"{rel} is a socket or a device, not a regular file",
        }
        known = messages.get(code) if code is not None else None
        return BeneathError(known or f"{rel}: {exc.strerror or exc}")


def _replace_at(dir_fd: int, name: str, data: bytes, keep_mode: int | None) -> None:
    """Write `data` to a new file in `dir_fd` and rename it over `name`."""
    tmp = f".{name[:100]}.workingset-{secrets.token_hex(4)}.tmp"
    # A file that keeps its mode starts private, so a secret's content is never world-readable.
    fd = os.open(
        tmp,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o666 if keep_mode is None else 0o600,
        dir_fd=dir_fd,
    )
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if keep_mode is not None:
                os.fchmod(fh.fileno(), keep_mode)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
