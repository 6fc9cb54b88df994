"""The trusted base of a task: a bare git repository the agent never sees or writes.

Made on the host from the task's source, before the agent starts:

- a git repository (its top level, or a bare one): `git clone --mirror` into
  `<out>/state/bases/<task>.git`, then the ref (or HEAD) resolved to the base commit.
  Uncommitted changes in the source are not taken.
- a plain directory (or one inside another repository): every file of it (ignored ones
  too, build junk not) committed once into a new bare repository, so the patch is a
  diff like any other.
- a git URL: mirrored once per batch into `<out>/repos/`, then as above.
- a bundle shipped from the driver (`Shipped`: on Ray, a node other than the driver's
  may have no copy of the source): the driver makes the base as above, bundles it
  (`bundle`), and the node clones the bundle into its own base (`unpack`).

No template (no hooks), the harness's own configuration only, and git run through
trusted_git.py. Objects may be hard-linked to the source's: nothing ever writes them, since
every clone made from the base for a sandbox to use (the agent's workspace, the grading
copy) copies its objects (`--no-hardlinks`). A shared inode would let a sandboxed
command that chmods a pack file rewrite the base, or the user's own repository.

The base lives under the batch's private state (`<out>/state/`), which no sandbox binds
writable (and, with an allow-list view of the host, none sees at all); it is only read
after it is made: the patch is taken against it with a scratch index and a
scratch object directory (patches.py), the hidden tests computed from it
(hidden_tests.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cluster.eval.errors import GitError, WorkspaceError
from cluster.eval.layout import safe_name
from cluster.eval.tasks import Task, is_url
from cluster.eval.trusted_git import git
from tools.files import remove_tree

__all__ = [
    "JUNK_PATHSPECS",
    "Base",
    "Shipped",
    "TrustedBases",
    "bundle",
    "clone_at",
    "read_blobs",
    "read_files",
    "scratch_env",
    "top_entries",
]

# Build junk never belongs to a base or a patch.
JUNK_PATHSPECS = (":(exclude,glob)**/__pycache__/**", ":(exclude,glob)**/*.pyc", ":(exclude,glob)**/.pytest_cache/**")
_IDENTITY = {
    "GIT_AUTHOR_NAME": "workingset-eval",
    "GIT_AUTHOR_EMAIL": "eval@workingset.invalid",
    "GIT_COMMITTER_NAME": "workingset-eval",
    "GIT_COMMITTER_EMAIL": "eval@workingset.invalid",
}


@dataclass(frozen=True)
class Base:
    git_dir: Path
    commit: str


@dataclass(frozen=True)
class Shipped:
    """A base as bytes (a git bundle of every ref) and its commit: a source that travels."""

    bundle: bytes
    commit: str


async def bundle(base: Base, scratch: Path, *, timeout_s: float) -> Shipped:
    """The base as a Shipped bundle (made in `scratch`, then read)."""
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch, prefix=".bundle-") as tmp:
        path = Path(tmp) / "base.bundle"
        await git("bundle", "create", "--quiet", str(path), "--all", git_dir=base.git_dir, timeout_s=timeout_s)
        return Shipped(await asyncio.to_thread(path.read_bytes), base.commit)


def scratch_env(base: Base, scratch: Path) -> dict[str, str]:
    """A private index and object directory over the base: what git writes goes to the
    scratch directory, the base's own objects are only read."""
    (scratch / "objects").mkdir(parents=True, exist_ok=True)
    return {
        "GIT_INDEX_FILE": str(scratch / "index"),
        "GIT_OBJECT_DIRECTORY": str(scratch / "objects"),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(base.git_dir / "objects"),
    }


async def read_blobs(base: Base, specs: list[str], env: dict[str, str] | None = None) -> list[bytes | None]:
    """The contents of `<rev>:<path>` object names, None where there is none (`env`: a
    scratch index, for `:<path>`)."""
    if not specs:
        return []
    out = await git(
        "cat-file", "--batch", git_dir=base.git_dir, env=env, stdin="".join(f"{s}\n" for s in specs).encode()
    )
    results: list[bytes | None] = []
    pos = 0
    for _ in specs:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if header[-1] == b"missing" or len(header) != 3:
            results.append(None)
            continue
        size = int(header[2])
        results.append(out[pos : pos + size])
        pos += size + 1
    return results


async def read_files(base: Base, paths: list[str]) -> dict[str, bytes | None]:
    """Files of the base commit (None: not there, or not a file)."""
    blobs = await read_blobs(base, [f"{base.commit}:{p}" for p in paths])
    return dict(zip(paths, blobs, strict=True))


async def top_entries(base: Base, folder: str = "") -> set[str]:
    """The names directly inside a folder of the base commit (its top by default)."""
    tree = f"{base.commit}:{folder}" if folder else base.commit
    try:
        out = await git("ls-tree", "-z", "--name-only", tree, git_dir=base.git_dir)
    except GitError:
        return set()  # no such folder
    return {n.decode("utf-8", "surrogateescape") for n in out.split(b"\0") if n}


def _is_repository_top(path: Path) -> bool:
    """The top of a work tree (`.git` there: a directory, or a file for a linked worktree
    or submodule) or a bare repository. A folder inside a repository is not one."""
    return (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir())


async def clone_at(base: Base, dest: Path, *, detach: bool, timeout_s: float) -> None:
    """A work tree at the base commit, its objects copied, nothing pointing back at the base.
    `detach`: at the commit itself; otherwise on the base's HEAD branch."""
    if dest.exists():
        await asyncio.to_thread(remove_tree, dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    checkout = [] if not detach else ["--no-checkout"]
    await git(
        "clone",
        "--quiet",
        "--no-hardlinks",
        "--template=",
        *checkout,
        str(base.git_dir),
        str(dest),
        timeout_s=timeout_s,
    )
    if detach:
        await git("checkout", "--quiet", "--detach", base.commit, cwd=dest, timeout_s=timeout_s)
    await git("remote", "remove", "origin", cwd=dest)


class TrustedBases:
    """One trusted base per task under `root`; URL mirrors shared under `cache`."""

    def __init__(self, root: Path, cache: Path):
        self.root = root
        self.cache = cache
        self._locks: dict[str, asyncio.Lock] = {}

    def path_for(self, name: str) -> Path:
        return self.root / f"{name}.git"

    async def make(self, task: Task, name: str) -> Base:
        timeout = task.timeouts.setup_s
        source = await self._source(task, timeout)
        git_dir = self.path_for(name)
        await self.remove(git_dir)
        git_dir.parent.mkdir(parents=True, exist_ok=True)
        if is_url(task.repo) or _is_repository_top(source):
            await git("clone", "--quiet", "--mirror", "--template=", str(source), str(git_dir), timeout_s=timeout)
            commit = await self._resolve(git_dir, task.ref or "HEAD", task.repo)
        elif task.ref:
            raise WorkspaceError(f"ref {task.ref!r} given, but {task.repo} is not the top of a git repository")
        else:
            commit = await self._commit_directory(source, git_dir, timeout)
        # Loose objects into one pack: each clone of the base copies its object files, and
        # a few large files copy much faster than thousands of small ones.
        await git("repack", "-d", "-q", git_dir=git_dir, timeout_s=timeout)
        return Base(git_dir, commit)

    async def unpack(self, shipped: Shipped, name: str, timeout_s: float) -> Base:
        """The task's base from a bundle made on another machine; it must hold the commit."""
        git_dir = self.path_for(name)
        await self.remove(git_dir)
        git_dir.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.root, prefix=".bundle-") as tmp:
            path = Path(tmp) / "base.bundle"
            await asyncio.to_thread(path.write_bytes, shipped.bundle)
            await git("clone", "--quiet", "--mirror", "--template=", str(path), str(git_dir), timeout_s=timeout_s)
        try:
            await git("cat-file", "-e", f"{shipped.commit}^{{commit}}", git_dir=git_dir)
        except GitError:
            raise WorkspaceError(
                f"the bundle shipped for {name} does not hold its base commit {shipped.commit}"
            ) from None
        return Base(git_dir, shipped.commit)

    async def remove(self, git_dir: Path) -> None:
        if git_dir.exists():
            await asyncio.to_thread(remove_tree, git_dir, ignore_errors=True)

    async def _commit_directory(self, source: Path, git_dir: Path, timeout_s: float) -> str:
        await git("init", "--quiet", "--bare", "--template=", "--initial-branch=main", str(git_dir))
        with tempfile.TemporaryDirectory(dir=self.root, prefix=".index-") as scratch:
            env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            pathspecs = "\0".join((".", *JUNK_PATHSPECS)).encode()
            await git(
                "add",
                "--all",
                "--force",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
                git_dir=git_dir,
                work_tree=source,
                env=env,
                stdin=pathspecs,
                timeout_s=timeout_s,
            )
            tree = (await git("write-tree", git_dir=git_dir, env=env)).decode().strip()
        commit = (await git("commit-tree", tree, "-m", "eval base", git_dir=git_dir, env=_IDENTITY)).decode().strip()
        await git("update-ref", "refs/heads/main", commit, git_dir=git_dir)
        return commit

    async def _source(self, task: Task, timeout_s: float) -> Path:
        if is_url(task.repo):
            return await self._mirror(task.repo, timeout_s)
        source = Path(task.repo).resolve()
        if not source.is_dir():
            looked = task.metadata.get("looked_for")
            if looked:
                raise WorkspaceError(
                    f"repository {task.metadata.get('swebench_repo')} is not available locally "
                    f"(looked for {', '.join(looked)}); pass --repos DIR holding a clone"
                )
            raise WorkspaceError(f"repository {task.repo} does not exist or is not a directory")
        return source

    async def _mirror(self, url: str, timeout_s: float) -> Path:
        """One clone of a URL per batch, shared by the tasks that use it."""
        target = (
            self.cache
            / f"{safe_name(url.rstrip('/').rsplit('/', 1)[-1])}-{hashlib.sha256(url.encode()).hexdigest()[:10]}"
        )
        async with self._locks.setdefault(url, asyncio.Lock()):
            if not (target / "HEAD").is_file():
                if target.exists():
                    await asyncio.to_thread(remove_tree, target, ignore_errors=True)
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    await git(
                        "clone",
                        "--quiet",
                        "--mirror",
                        "--template=",
                        url,
                        str(target),
                        network=True,
                        timeout_s=timeout_s,
                    )
                except GitError as exc:
                    raise WorkspaceError(f"cannot clone {url}: {exc}") from None
        return target

    async def _resolve(self, git_dir: Path, ref: str, repo: str) -> str:
        for candidate in (ref, f"origin/{ref}"):
            try:
                out = await git("rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}", git_dir=git_dir)
                return out.decode().strip()
            except GitError:
                continue
        raise WorkspaceError(f"ref {ref!r} is not a commit, branch or tag of {repo}")
