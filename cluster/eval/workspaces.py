"""A task's directories: its trusted base, the agent's workspace, the grading copy.

    source --(host)--> base (bare, private state) --clone--> workspace (the agent's)
                                                  \\--clone--> grading copy (+ patch, + hidden tests)

The base is made by the host from the source (base_repo.py) and never written by a
sandbox. The agent's workspace is a clone of it, at the ref, its objects copied and
nothing pointing back. After the agent, the workspace is only read, as a plain work
tree of the base (patches.py), and then removed: grading happens in a fresh clone of
the base with only the patch applied, and the hidden tests placed last
(hidden_tests.py). Whatever the agent left outside its patch — a rewritten `.git`,
ignored files, build junk, a process still writing — never reaches the grade.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from cluster.eval.base_repo import Base, Shipped, TrustedBases, clone_at
from cluster.eval.errors import WorkspaceError
from cluster.eval.hidden_tests import HiddenFile, hidden_tests
from cluster.eval.layout import OutDir, safe_name
from cluster.eval.patch_audit import CONFIG_FILES
from cluster.eval.patches import MAX_PATCH_BYTES, Patch, apply_patch, take_patch
from cluster.eval.tasks import Task
from tools.files import remove_tree

__all__ = ["Workspace", "WorkspaceError", "Workspaces", "safe_name"]


@dataclass(frozen=True)
class Workspace:
    path: Path
    base: Base

    @property
    def base_commit(self) -> str:
        return self.base.commit


class Workspaces:
    """The directories of the batch's tasks, under the out directory."""

    def __init__(self, out: OutDir, *, keep: bool = False, max_patch_bytes: int = MAX_PATCH_BYTES):
        self.out = out
        self.keep = keep
        self.max_patch_bytes = max_patch_bytes
        self.bases = TrustedBases(out.bases, out.repos)

    def path_for(self, name: str) -> Path:
        return self.out.workspaces / name

    def copy_for(self, name: str) -> Path:
        return self.out.grading / name

    async def prepare(self, task: Task, name: str, shipped: Shipped | None = None) -> Workspace:
        """The trusted base (from the task's source, or the bundle shipped for it), and the
        agent's workspace cloned from it."""
        if shipped is not None:
            base = await self.bases.unpack(shipped, name, task.timeouts.setup_s)
        else:
            base = await self.bases.make(task, name)
        path = self.path_for(name)
        await clone_at(base, path, detach=task.ref is not None, timeout_s=task.timeouts.setup_s)
        return Workspace(path, base)

    async def diff(self, ws: Workspace) -> Patch:
        """What the agent changed since the base commit (see patches.py)."""
        return await take_patch(ws.base, ws.path, self.out.scratch, wanted=CONFIG_FILES, max_bytes=self.max_patch_bytes)

    async def hidden_tests(self, ws: Workspace, test_patch: str, timeout_s: float) -> list[HiddenFile]:
        return await hidden_tests(ws.base, test_patch, self.out.scratch, timeout_s=timeout_s)

    async def grading_copy(self, ws: Workspace, patch: Patch, name: str, timeout_s: float) -> Path:
        """A fresh clone of the base at the base commit with the agent's patch applied."""
        copy = self.copy_for(name)
        await clone_at(ws.base, copy, detach=True, timeout_s=timeout_s)
        await apply_patch(ws.base, copy, patch.data, timeout_s=timeout_s)
        return copy

    async def remove(self, path: Path) -> None:
        """A workspace or grading copy (kept with --keep-workspaces)."""
        if not self.keep:
            await asyncio.to_thread(remove_tree, path, ignore_errors=True)

    async def discard(self, name: str) -> None:
        """Everything of the task: its base always, the directories unless kept."""
        await self.bases.remove(self.bases.path_for(name))
        await self.remove(self.path_for(name))
        await self.remove(self.copy_for(name))
