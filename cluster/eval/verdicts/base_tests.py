"""The tests the base collects: what a task with no list and no hidden tests requires.

Collected once per base commit, test command, test patch, setup and environment, in a
fresh copy of the base without the patch (the same setup and configuration as the
grade), by the grader's reporter with `--collect-only`; kept under the out directory's
state/ (no sandbox writes it), so a rerun or a second task on the same base reuses it.
A base whose tests cannot be collected gives no verdict: the task is an error row.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

from cluster.eval.durable import write_atomic
from cluster.eval.errors import PatchNotGradable, TaskEnded, WorkspaceError
from cluster.eval.grading import SandboxedShell, write_log
from cluster.eval.hidden_tests import HiddenFile, place_hidden
from cluster.eval.layout import OutDir
from cluster.eval.patches import Patch
from cluster.eval.tasks import Task
from cluster.eval.verdicts.command import PytestCommand
from cluster.eval.verdicts.config import PytestConfig
from cluster.eval.verdicts.pytest_run import run_pytest
from cluster.eval.workspaces import Workspace, Workspaces

__all__ = ["BaseTests"]


class BaseTests:
    def __init__(self, out: OutDir, workspaces: Workspaces, commands: asyncio.Semaphore):
        self.out = out
        self.workspaces = workspaces
        self._commands = commands

    def _cache(self, task: Task, ws: Workspace, shell: SandboxedShell, config: PytestConfig) -> Path:
        key = json.dumps(
            [
                ws.base_commit,
                task.test_command,
                task.test_patch or "",
                task.setup_command or "",
                str(shell.settings.sandbox.virtualenv or ""),
                config.path,
                config.data.hex(),
            ]
        )
        return self.out.state / "base-tests" / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"

    async def collected(
        self,
        task: Task,
        ws: Workspace,
        shell: SandboxedShell,
        command: PytestCommand,
        config: PytestConfig,
        hidden: list[HiddenFile],
        name: str,
    ) -> list[str]:
        cache = self._cache(task, ws, shell, config)
        if cache.is_file():
            return list(json.loads(cache.read_text(encoding="utf-8")))
        log = self.out.logs / name / "grade-base.log"
        where = f"(log: {self.out.rel(log)})"
        try:
            copy = await self.workspaces.grading_copy(ws, Patch(b""), f"{name}.base", task.timeouts.setup_s)
        except (WorkspaceError, PatchNotGradable, OSError) as exc:
            raise TaskEnded(f"a copy of the base to collect its tests: {exc}") from None
        try:
            if task.setup_command:
                async with self._commands:
                    result = await shell.run(task.setup_command, copy, task.timeouts.setup_s)
                write_log(self.out.logs / name / "grade-base-setup.log", task.setup_command, result)
                if not result.ok:
                    raise TaskEnded(
                        f"the setup command failed in a copy of the base (exit code {result.exit_code}), "
                        "so the base's tests (what this task requires) cannot be collected"
                    )
            try:
                await asyncio.to_thread(place_hidden, copy, [*hidden, HiddenFile(config.path, 0o100644, config.data)])
            except WorkspaceError as exc:
                raise TaskEnded(str(exc)) from None
            async with self._commands:
                done = await run_pytest(
                    shell,
                    command,
                    copy,
                    config=config.path,
                    timeout_s=task.timeouts.test_s,
                    log=log,
                    extra=("--collect-only", "-q"),
                    original=task.test_command,
                )
        finally:
            await self.workspaces.remove(copy)
        run = done.run
        if not run.finished or run.collect_errors:
            errors = f"; collection errors in {', '.join(sorted(run.collect_errors)[:5])}" if run.collect_errors else ""
            raise TaskEnded(
                f"the base's tests (what this task requires, as it names no tests) could not be "
                f"collected{errors} {where}"
            )
        write_atomic(cache, json.dumps(run.collected))
        return run.collected
