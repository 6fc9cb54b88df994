"""The hidden tests (a task's `test_patch`), placed last into the grading copy.

Their content is computed from trusted inputs only: the test patch applied to the base
commit in a scratch index (`git apply --cached`, the base's objects only read), so a
file the agent also changed is not patched on top of the agent's version but replaced
by the hidden one — the SWE-bench harness's "restore the test files, then apply" in one
step. A test patch that does not apply to the base is the task's error, not the agent's.

Placing them writes into a directory that sandboxed commands (the setup command) have
already run in, so nothing there is trusted: each path is walked one component at a
time from a handle on the copy's root with O_NOFOLLOW; whatever stands in the way (a
link, a file where a directory belongs, a FIFO, a directory where the file belongs) is
removed, never followed or opened, and the file is created afresh (O_EXCL). No git runs
in the copy after the sandbox has.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from cluster.eval.base_repo import Base, scratch_env
from cluster.eval.errors import GitError, WorkspaceError
from cluster.eval.trusted_git import git
from tools.files import remove_at, remove_tree

__all__ = ["HiddenFile", "hidden_tests", "place_hidden"]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_GITLINK = 0o160000


@dataclass(frozen=True)
class HiddenFile:
    path: str
    mode: int | None  # a git mode (0o100644, 0o100755, 0o120000); None: the test patch deletes it
    data: bytes = b""


async def hidden_tests(base: Base, test_patch: str, scratch_root: Path, *, timeout_s: float) -> list[HiddenFile]:
    """Every file the test patch adds, changes or deletes, as it is after the patch."""
    scratch_root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=scratch_root, prefix="hidden-"))
    try:
        git_here = functools.partial(git, git_dir=base.git_dir, env=scratch_env(base, scratch), timeout_s=timeout_s)
        await git_here("read-tree", base.commit)
        data = test_patch if test_patch.endswith("\n") else test_patch + "\n"
        try:
            await git_here("apply", "--cached", "--whitespace=nowarn", "-", stdin=data.encode())
        except GitError as exc:
            raise WorkspaceError(f"the test patch does not apply to the base commit: {exc}") from None
        names = await git_here("diff", "--cached", "--name-only", "-z", "--no-renames", base.commit)
        paths = {n.decode("utf-8", "surrogateescape") for n in names.split(b"\0") if n}
        entries: dict[str, tuple[int, str]] = {}
        for line in (await git_here("ls-files", "--stage", "-z")).split(b"\0"):
            if line:
                meta, _, name = line.partition(b"\t")
                path = name.decode("utf-8", "surrogateescape")
                if path in paths:
                    mode, oid, _stage = meta.split()
                    entries[path] = (int(mode, 8), oid.decode())
        files = []
        for path in sorted(paths):
            if path not in entries:
                files.append(HiddenFile(path, None))
            elif entries[path][0] != _GITLINK:
                git_mode, blob = entries[path]
                files.append(HiddenFile(path, git_mode, await git_here("cat-file", "blob", blob)))
        return files
    finally:
        remove_tree(scratch, ignore_errors=True)


def _enter(dir_fd: int, name: str) -> int:
    """A handle on the real directory `name` inside `dir_fd`, made if missing; a link or a
    file in its place is removed first."""
    try:
        return os.open(name, _DIR, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            raise
    remove_at(dir_fd, name)
    os.mkdir(name, 0o755, dir_fd=dir_fd)
    return os.open(name, _DIR, dir_fd=dir_fd)


def _parts(path: str) -> list[str]:
    parts = PurePosixPath(path).parts
    if not parts or path.startswith("/") or any(p in ("..", ".") or p.lower() == ".git" for p in parts):
        raise WorkspaceError(f"the test patch names a path outside the work tree: {path!r}")
    return list(parts)


def _place_one(root_fd: int, hidden: HiddenFile) -> None:
    *dirs, name = _parts(hidden.path)
    fds: list[int] = []
    try:
        current = root_fd
        for part in dirs:
            current = _enter(current, part)
            fds.append(current)
        remove_at(current, name)
        if hidden.mode is None:
            return
        if stat.S_ISLNK(hidden.mode):
            os.symlink(os.fsdecode(hidden.data), name, dir_fd=current)
            return
        perms = 0o755 if hidden.mode & 0o111 else 0o644
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, perms, dir_fd=current)
        with os.fdopen(fd, "wb") as f:
            f.write(hidden.data)
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def place_hidden(root: Path, files: list[HiddenFile]) -> None:
    """Write the hidden tests into `root`, replacing whatever is at their paths."""
    root_fd = os.open(root, _DIR)
    try:
        for hidden in files:
            try:
                _place_one(root_fd, hidden)
            except OSError as exc:
                raise WorkspaceError(f"the hidden test {hidden.path} cannot be placed: {exc.strerror or exc}") from exc
    finally:
        os.close(root_fd)
