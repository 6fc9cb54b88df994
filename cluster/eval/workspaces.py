"""A fresh, isolated git workspace per task; the source repository is only read.

- a git repository (its top level, or a bare one): `git clone` into the workspace, at
  the source's HEAD or at the ref (checked out detached); the clone's `origin` is
  removed, so nothing in the workspace points back at the source. Objects are
  hard-linked by git where it can (read-only, never rewritten); uncommitted changes in
  the source are not taken.
- a plain directory (or one inside another repository): copied, then `git init` and
  one base commit, so the patch is a diff like any other.
- a git URL: cloned once per batch into `<out>/repos/` (a mirror), then as above.

The patch and the hidden tests go through `SandboxedShell` (see grading.py): after the
agent, the workspace's `.git` is the agent's and git must not run it on the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

from agents.errors import WorkingsetError
from cluster.eval.grading import SandboxedShell
from cluster.eval.tasks import Task, is_url

__all__ = ["Workspace", "WorkspaceError", "Workspaces", "safe_name"]

_IDENTITY = ["-c", "user.name=workingset-eval", "-c", "user.email=eval@workingset.invalid", "-c", "commit.gpgsign=false"]
_JUNK = ("__pycache__", "*.pyc", ".pytest_cache")
_JUNK_PATHSPECS = "':(exclude,glob)**/__pycache__/**' ':(exclude,glob)**/*.pyc' ':(exclude,glob)**/.pytest_cache/**'"
_PATCH = ".git/workingset-eval.patch"
_INDEX = ".git/workingset-eval.index"
_TEST_PATCH = ".git/workingset-test.patch"


class WorkspaceError(WorkingsetError):
    """The workspace could not be made or read; the message names the repository and why."""


@dataclass(frozen=True)
class Workspace:
    path: Path
    base_commit: str


def safe_name(task_id: str) -> str:
    """A file name for a task id (readable, and unique through a short hash when changed)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", task_id).strip("._")[:80] or "task"
    if cleaned == task_id:
        return cleaned
    return f"{cleaned}-{hashlib.sha256(task_id.encode()).hexdigest()[:8]}"


async def _git(*args: str, cwd: Path | None = None, timeout_s: float = 600.0) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"}
    proc = await asyncio.create_subprocess_exec(
        "git", *args, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        raise WorkspaceError(f"git {args[0]} timed out after {timeout_s:g} s") from None
    finally:
        if proc.returncode is None:  # timed out or cancelled: git and what it started go
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
    if proc.returncode != 0:
        lines = err.decode(errors="replace").strip().splitlines()
        raise WorkspaceError(f"git {args[0]} failed: {lines[-1] if lines else f'exit code {proc.returncode}'}")
    return out.decode(errors="replace").strip()


def _is_repository_top(path: Path) -> bool:
    """The top of a work tree (`.git` there: a directory, or a file for a linked worktree
    or submodule) or a bare repository. A folder inside a repository is not one."""
    return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())


class Workspaces:
    def __init__(self, root: Path, cache: Path, shell: SandboxedShell, *, keep: bool = False):
        self.root = root
        self.cache = cache
        self.shell = shell
        self.keep = keep
        self._locks: dict[str, asyncio.Lock] = {}

    def path_for(self, name: str) -> Path:
        return self.root / name

    async def prepare(self, task: Task, name: str) -> Workspace:
        timeout = task.timeouts.setup_s
        source = await self._source(task, timeout)
        path = self.path_for(name)
        if path.exists():
            await asyncio.to_thread(shutil.rmtree, path, True)
        path.parent.mkdir(parents=True, exist_ok=True)
        if is_url(task.repo) or _is_repository_top(source):
            if task.ref is None:
                await _git("clone", "--quiet", str(source), str(path), timeout_s=timeout)
            else:
                await _git("clone", "--quiet", "--no-checkout", str(source), str(path), timeout_s=timeout)
                commit = await self._resolve(path, task.ref, task.repo)
                await _git("checkout", "--quiet", "--detach", commit, cwd=path, timeout_s=timeout)
            await _git("remote", "remove", "origin", cwd=path)
            return Workspace(path, await _git("rev-parse", "HEAD", cwd=path))
        if task.ref:
            raise WorkspaceError(f"ref {task.ref!r} given, but {task.repo} is not the top of a git repository")
        await asyncio.to_thread(shutil.copytree, source, path, symlinks=True, ignore=shutil.ignore_patterns(*_JUNK))
        await _git("init", "--quiet", cwd=path)
        await _git("add", "-A", cwd=path, timeout_s=timeout)
        await _git(*_IDENTITY, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", "eval base", cwd=path)
        return Workspace(path, await _git("rev-parse", "HEAD", cwd=path))

    async def _source(self, task: Task, timeout_s: float) -> Path:
        if is_url(task.repo):
            return await self._mirror(task.repo, timeout_s)
        source = Path(task.repo).resolve()
        if not source.is_dir():
            looked = task.metadata.get("looked_for")
            if looked:
                raise WorkspaceError(f"repository {task.metadata.get('swebench_repo')} is not available locally "
                                     f"(looked for {', '.join(looked)}); pass --repos DIR holding a clone")
            raise WorkspaceError(f"repository {task.repo} does not exist or is not a directory")
        return source

    async def _mirror(self, url: str, timeout_s: float) -> Path:
        """One clone of a URL per batch, shared by the tasks that use it."""
        target = self.cache / f"{safe_name(url.rstrip('/').rsplit('/', 1)[-1])}-{hashlib.sha256(url.encode()).hexdigest()[:10]}"
        async with self._locks.setdefault(url, asyncio.Lock()):
            if not (target / "HEAD").is_file():
                if target.exists():
                    await asyncio.to_thread(shutil.rmtree, target, True)
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    await _git("clone", "--quiet", "--mirror", url, str(target), timeout_s=timeout_s)
                except WorkspaceError as exc:
                    raise WorkspaceError(f"cannot clone {url}: {exc}") from None
        return target

    async def _resolve(self, path: Path, ref: str, repo: str) -> str:
        for candidate in (ref, f"origin/{ref}"):
            try:
                return await _git("rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}", cwd=path)
            except WorkspaceError:
                continue
        raise WorkspaceError(f"ref {ref!r} is not a commit, branch or tag of {repo}")

    async def diff(self, ws: Workspace) -> str:
        """Everything the agent changed since the base commit, new files included (build
        junk excluded), as a git patch; taken in the sandbox, without touching the
        workspace's own index."""
        command = (
            f"export GIT_INDEX_FILE={_INDEX}; rm -f {_INDEX} {_PATCH}; "
            f"git read-tree {ws.base_commit} && git add -A -- . {_JUNK_PATHSPECS} && "
            f"git diff --cached --binary --no-ext-diff --no-textconv {ws.base_commit} > {_PATCH}; "
            f"code=$?; rm -f {_INDEX}; exit $code"
        )
        result = await self.shell.run(command, ws.path, timeout_s=300)
        if not result.ok:
            raise WorkspaceError(f"the patch could not be taken: {result.tail(2) or 'timed out'}")
        patch_file = ws.path / _PATCH
        text = patch_file.read_text(encoding="utf-8", errors="replace")
        patch_file.unlink(missing_ok=True)
        return text

    async def apply(self, ws: Workspace, patch: str, timeout_s: float) -> None:
        """Apply the hidden tests (test_patch) before grading."""
        (ws.path / _TEST_PATCH).write_text(patch if patch.endswith("\n") else patch + "\n", encoding="utf-8")
        result = await self.shell.run(f"git apply --whitespace=nowarn {_TEST_PATCH}; code=$?; rm -f {_TEST_PATCH}; exit $code",
                                      ws.path, timeout_s)
        if not result.ok:
            raise WorkspaceError(f"the test patch does not apply: {result.tail(2) or 'timed out'}")

    async def remove(self, path: Path) -> None:
        if not self.keep:
            await asyncio.to_thread(shutil.rmtree, path, True)
