"""The agent's patch: taken on the host against the trusted base, applied to a fresh copy.

Taking it runs nothing of the agent's `.git` — not its config, hooks, refs, index or
replace objects: git reads the workspace as a plain work tree of the task's base

    git --git-dir=<base> --work-tree=<workspace>   with a scratch index and object dir:
    read-tree <base commit>; add --all (build junk excluded); diff --cached --binary

so what the patch says is what the files say, compared with the commit the agent
started from. The base's configuration is the harness's (no drivers, filters, textconv
or external diff), and the scratch object directory keeps the agent's blobs out of the
base. Before git looks, the workspace is walked without following links: special files
(FIFOs, sockets, devices) and nested git repositories are left out of the patch with a
note (git would refuse the one and read the other's `.git`). Symbolic links go in as
links, never followed. The patch text comes back on git's stdout, never through a file
the agent could have replaced by a link, and is capped (`max_bytes`): a bigger patch is
not graded, and the row says why.
"""

from __future__ import annotations

import functools
import os
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from cluster.eval.base_repo import JUNK_PATHSPECS, Base, read_blobs, scratch_env
from cluster.eval.errors import GitError, PatchNotGradable
from cluster.eval.trusted_git import GitOutputTooLarge, git
from tools.files import remove_tree

__all__ = ["MAX_PATCH_BYTES", "Patch", "apply_patch", "take_patch"]

MAX_PATCH_BYTES = 16 * 1024**2
_SHOWN = 10  # left-out paths named in a note


@dataclass(frozen=True)
class Patch:
    data: bytes  # the git patch, binary-safe ("" when nothing changed)
    files: list[str] = field(default_factory=list)  # every path it touches (both sides of a rename)
    notes: list[str] = field(default_factory=list)
    contents: dict[str, tuple[bytes | None, bytes | None]] = field(
        default_factory=dict
    )  # (before, after) of `wanted` files


def _left_out(workspace: Path) -> tuple[list[str], list[str]]:
    """(special files, nested repositories) under the workspace, its own `.git` aside;
    found with lstat only, so nothing is opened and no link is followed."""
    special: list[str] = []
    nested: list[str] = []
    pending = [""]
    while pending:
        rel = pending.pop()
        with os.scandir(workspace / rel) as entries:
            for entry in entries:
                path = f"{rel}{entry.name}"
                if path == ".git":
                    continue
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    if os.path.lexists(workspace / path / ".git"):
                        nested.append(path)
                    else:
                        pending.append(f"{path}/")
                elif not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                    special.append(path)
    return sorted(special), sorted(nested)


def _name(paths: list[str]) -> str:
    shown = ", ".join(paths[:_SHOWN])
    return shown + (f" and {len(paths) - _SHOWN} more" if len(paths) > _SHOWN else "")


async def take_patch(
    base: Base,
    workspace: Path,
    scratch_root: Path,
    *,
    wanted: frozenset[str] = frozenset(),
    max_bytes: int = MAX_PATCH_BYTES,
    timeout_s: float = 300.0,
) -> Patch:
    """Everything in the workspace that differs from the base commit, new files included.
    `wanted`: file names whose before/after contents the caller needs (test configuration)."""
    special, nested = _left_out(workspace)
    notes = []
    if special:
        notes.append(f"left out of the patch: special files (FIFO, socket or device): {_name(special)}")
    if nested:
        notes.append(f"left out of the patch: nested git repositories: {_name(nested)}")
    excluded = [f":(exclude,literal){p}" for p in special + nested]
    scratch_root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=scratch_root, prefix="patch-"))
    try:
        env = scratch_env(base, scratch)
        git_here = functools.partial(git, git_dir=base.git_dir, work_tree=workspace, env=env, timeout_s=timeout_s)
        await git_here("read-tree", base.commit)
        await git_here(
            "add",
            "--all",
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
            stdin="\0".join((".", *JUNK_PATHSPECS, *excluded)).encode(),
        )
        try:
            data = await git_here(
                "diff",
                "--cached",
                "--binary",
                "--no-ext-diff",
                "--no-textconv",
                "--no-color",
                base.commit,
                max_output=max_bytes,
            )
        except GitOutputTooLarge:
            raise PatchNotGradable(
                f"the patch is over the cap of {max_bytes / 1024**2:g} MB; it was not graded"
            ) from None
        names = await git_here("diff", "--cached", "--name-only", "-z", "--no-renames", base.commit)
        files = sorted({n.decode("utf-8", "surrogateescape") for n in names.split(b"\0") if n})
        asked = [f for f in files if f.rsplit("/", 1)[-1] in wanted]
        blobs = await read_blobs(base, [s for f in asked for s in (f"{base.commit}:{f}", f":{f}")])
        contents = {f: (blobs[2 * i], blobs[2 * i + 1]) for i, f in enumerate(asked)}
        return Patch(data, files, notes, contents)
    finally:
        remove_tree(scratch, ignore_errors=True)


async def apply_patch(base: Base, copy: Path, patch: bytes, *, timeout_s: float) -> None:
    """The agent's patch onto a fresh copy of the base, by git apply with the trusted
    git dir (it refuses paths outside the tree, into `.git`, or beyond a link)."""
    if not patch.strip():
        return
    try:
        await git(
            "apply", "--whitespace=nowarn", "-", git_dir=base.git_dir, work_tree=copy, stdin=patch, timeout_s=timeout_s
        )
    except GitError as exc:
        raise PatchNotGradable(f"the agent's patch does not apply to a fresh copy of the base: {exc}") from None
