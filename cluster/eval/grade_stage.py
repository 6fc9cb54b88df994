"""Grading one task: a fresh copy of the base, the agent's patch, the hidden tests, the tests.

    hidden tests (base + test_patch, computed on the host)
    -> audit: which patched files are test infrastructure (patch_touches_tests)
    -> [grading.reject_test_changes: such a patch fails here]
    -> grading copy: clone of the base at the base commit + `git apply` of the patch
    -> setup command (sandboxed, in the copy)
    -> hidden tests placed last, replacing any version of the agent's
    -> test command (sandboxed, in the copy) -> the verdict

The copy is made after the agent's session has closed, from the trusted base, and the
agent's workspace is gone (or, kept, never read again): nothing the agent left outside
its patch reaches the grade, and nothing can change the copy from outside the grader's
own sandbox. A patch that cannot be graded (it does not apply, or it breaks the setup)
fails the task with the reason in `error`; a grader that gives no verdict (a timeout,
a test patch that does not apply to the base) is an error row.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from cluster.eval.errors import PatchNotGradable, TaskEnded, WorkspaceError
from cluster.eval.grading import GradingError, SandboxedShell, write_log
from cluster.eval.hidden_tests import place_hidden
from cluster.eval.layout import OutDir
from cluster.eval.patch_audit import touched_test_files
from cluster.eval.patches import Patch
from cluster.eval.tasks import Task
from cluster.eval.workspaces import Workspace, Workspaces

__all__ = ["GradeStage"]


def _listed(paths: list[str], shown: int = 5) -> str:
    return ", ".join(paths[:shown]) + (f" and {len(paths) - shown} more" if len(paths) > shown else "")


class GradeStage:
    def __init__(self, out: OutDir, workspaces: Workspaces, shell: SandboxedShell, commands: asyncio.Semaphore,
                 *, reject_test_changes: bool = False):
        self.out = out
        self.workspaces = workspaces
        self.shell = shell
        self._commands = commands
        self.reject_test_changes = reject_test_changes

    async def grade(self, task: Task, ws: Workspace, patch: Patch, name: str, row: dict,
                    shell: SandboxedShell | None = None) -> bool | None:
        """The verdict (None: the patch was not graded, `row["error"]` says why); raises
        TaskEnded when the grader gives none. `shell`: the task's own (its environment)."""
        shell = shell or self.shell
        hidden = []
        if task.test_patch:
            try:
                hidden = await self.workspaces.hidden_tests(ws, task.test_patch, task.timeouts.test_s)
            except WorkspaceError as exc:
                raise TaskEnded(str(exc)) from None
        touched = touched_test_files(patch.files, patch.contents, {h.path for h in hidden})
        row["patch_touches_tests"] = touched
        reject = task.grading.reject_test_changes
        if touched and (self.reject_test_changes if reject is None else reject):
            row["error"] = (f"the patch changes test infrastructure ({_listed(touched)}) and this task rejects "
                            "such patches (grading.reject_test_changes); not graded")
            return None
        try:
            copy = await self.workspaces.grading_copy(ws, patch, name, task.timeouts.setup_s)
        except PatchNotGradable as exc:
            row["error"] = str(exc)
            return None
        except (WorkspaceError, OSError) as exc:
            raise TaskEnded(f"grading copy: {exc}") from None
        try:
            if task.setup_command and not await self._setup(task, copy, name, row, shell):
                return None
            try:
                await asyncio.to_thread(place_hidden, copy, hidden)
            except WorkspaceError as exc:
                raise TaskEnded(str(exc)) from None
            return await self._test(task, copy, name, row, shell)
        finally:
            await self.workspaces.remove(copy)

    async def _setup(self, task: Task, copy: Path, name: str, row: dict, shell: SandboxedShell) -> bool:
        assert task.setup_command
        log = self.out.logs / name / "grade-setup.log"
        async with self._commands:
            result = await shell.run(task.setup_command, copy, task.timeouts.setup_s)
        write_log(log, task.setup_command, result)
        if result.ok:
            return True
        how = f"timed out after {task.timeouts.setup_s:g} s" if result.timed_out else f"failed (exit code {result.exit_code})"
        row["error"] = (f"the setup command {how} in the grading copy, with the agent's patch applied: "
                        f"{result.tail(2)} (log: {self.out.rel(log)})")
        return False

    async def _test(self, task: Task, copy: Path, name: str, row: dict, shell: SandboxedShell) -> bool:
        log = self.out.logs / name / "grade.log"
        row["grade_log"] = self.out.rel(log)
        try:
            async with self._commands:
                result = await shell.grade(task.test_command, copy, task.timeouts.test_s, log)
        except GradingError as exc:
            raise TaskEnded(str(exc).replace(str(log), self.out.rel(log))) from None
        row.update(tests_passed=result.passed, test_exit_code=result.exit_code)
        return result.passed
