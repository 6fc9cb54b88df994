"""The stages of a task that touch its files, run where those files are.

    prepare      the trusted base (from the source, or from a bundle shipped to this node)
                 and the agent's workspace cloned from it
    environment  the task's own environment, from this node's cache or built here
    setup        the setup command in the workspace (sandboxed)
    patch        the agent's change, read once; the workspace is removed after it
    grade        a fresh grading copy, the patch, the hidden tests, the test command
    discard      the base always, the directories unless kept

`TaskStages` works over one OutDir: the batch's own out directory when everything runs
in this process (`--local`), a directory private to the node on Ray (node_actor.py).
What it returns is plain data (paths on its node, bytes, row fields), so the caller can
be in another process or on another machine. The session between setup and patch is
the caller's business (task_flow.py).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from agents.settings import WorkingsetSettings
from cluster.eval.base_repo import Shipped
from cluster.eval.environments import DEFAULT_HOSTS, EnvironmentCache, resolve_recipe
from cluster.eval.errors import EnvironmentFailed, GitError, TaskEnded
from cluster.eval.grade_stage import GradeStage
from cluster.eval.grading import SandboxedShell, write_log
from cluster.eval.layout import OutDir
from cluster.eval.patches import Patch, apply_patch
from cluster.eval.provenance import RunRecord
from cluster.eval.settings import with_environment
from cluster.eval.tasks import Task
from cluster.eval.workspaces import Workspace, WorkspaceError, Workspaces

__all__ = ["EnvironmentOutcome", "StageConfig", "TaskStages"]


@dataclass(frozen=True)
class StageConfig:
    """What every node's stages need to know of the batch (picklable)."""

    settings: WorkingsetSettings
    keep_workspaces: bool = False
    reject_test_changes: bool = False
    environment_cache: Path | None = None  # None: environments_root() decides
    batch_out: Path | None = None  # the batch's own out directory (on the driver's machine)
    batch_fingerprint: str | None = None  # its run.json's, so another machine's same path is not taken for it
    egress_hosts: tuple[str, ...] = DEFAULT_HOSTS
    command_slots: int = 4  # setup and test commands at once, per process


@dataclass(frozen=True)
class EnvironmentOutcome:
    venv: Path
    key: str
    reused: bool
    seconds: float


def environments_root(config: StageConfig, out: OutDir) -> Path:
    """Where this machine keeps the tasks' environments: `--env-cache DIR`; else the
    batch's `<out>/state/envs` wherever the batch's out directory is this machine's (this
    process, or a Ray node on the driver's machine or a shared file system: its run.json
    is the batch's); else this user's `~/.cache/workingset/envs`. Never a directory of
    one batch or one Ray node only, so a rerun, or the next batch, finds what was built."""
    if config.environment_cache is not None:
        return config.environment_cache
    if config.batch_out is None:
        return out.environments
    batch = OutDir(config.batch_out)
    record = RunRecord.read(batch.run_record)
    if record is not None and record.fingerprint == config.batch_fingerprint:
        return batch.environments
    return Path.home() / ".cache" / "workingset" / "envs"


class TaskStages:
    def __init__(
        self, config: StageConfig, out: OutDir, *, node: str | None = None, commands: asyncio.Semaphore | None = None
    ):
        self.config = config
        self.out = out
        self.node = node
        self.settings = config.settings
        self.commands = commands or asyncio.Semaphore(config.command_slots)
        self.workspaces = Workspaces(out, keep=config.keep_workspaces)
        self.shell = SandboxedShell(self.settings)
        self.environments = EnvironmentCache(
            environments_root(config, out), self._shell_in, egress_hosts=config.egress_hosts
        )

    def _shell_in(self, venv: Path, extra_toolchains: tuple[Path, ...] = ()) -> SandboxedShell:
        return self.shell.with_settings(with_environment(self.settings, venv, extra_toolchains=extra_toolchains))

    def _shell_for(self, venv: Path | None) -> SandboxedShell:
        return self.shell if venv is None else self._shell_in(venv)

    async def prepare(self, task: Task, name: str, shipped: Shipped | None = None) -> Workspace:
        try:
            return await asyncio.wait_for(self.workspaces.prepare(task, name, shipped), task.timeouts.setup_s)
        except TimeoutError:
            raise TaskEnded(f"preparing the workspace timed out after {task.timeouts.setup_s:g} s") from None
        except (WorkspaceError, OSError) as exc:
            raise TaskEnded(f"workspace: {exc}") from None

    async def environment(self, task: Task, ws: Workspace, name: str, network: bool) -> EnvironmentOutcome:
        clock = time.monotonic()
        try:
            recipe = await resolve_recipe(task, ws.base)
        except GitError as exc:
            raise TaskEnded(f"environment: {exc}") from None
        try:
            env = await self.environments.ensure(
                recipe,
                ws.base,
                task_id=task.id,
                network=network,
                timeout_s=task.timeouts.setup_s,
                log=self.out.logs / name / "environment.log",
                rel=self.out.rel,
                slots=self.commands,
            )
        except TaskEnded as exc:
            raise EnvironmentFailed(str(exc), recipe.key) from None
        return EnvironmentOutcome(env.venv, recipe.key, env.reused, round(time.monotonic() - clock, 4))

    async def setup(self, task: Task, ws: Workspace, name: str, venv: Path | None) -> None:
        assert task.setup_command
        async with self.commands:
            result = await self._shell_for(venv).run(task.setup_command, ws.path, task.timeouts.setup_s)
        log = self.out.logs / name / "setup.log"
        write_log(log, task.setup_command, result)
        if result.timed_out:
            raise TaskEnded(f"setup timed out after {task.timeouts.setup_s:g} s (log: {self.out.rel(log)})")
        if not result.ok:
            raise TaskEnded(f"setup failed (exit code {result.exit_code}): {result.tail(3)} (log: {self.out.rel(log)})")

    async def apply(self, ws: Workspace, patch: bytes, timeout_s: float) -> None:
        """Someone else's patch (a prediction) onto the fresh workspace, by host-side git with
        the trusted base; PatchNotGradable when it does not apply."""
        await apply_patch(ws.base, ws.path, patch, timeout_s=timeout_s)

    async def patch(self, ws: Workspace) -> Patch:
        """The agent's patch (PatchNotGradable when it cannot be graded); the workspace is
        removed after it, as the grade never looks at it."""
        try:
            return await self.workspaces.diff(ws)
        finally:
            await self.workspaces.remove(ws.path)

    async def grade(
        self, task: Task, ws: Workspace, patch: Patch, name: str, venv: Path | None
    ) -> tuple[bool | None, dict]:
        """The verdict and the row fields the grade sets (grade_stage.py)."""
        row: dict = {}
        grader = GradeStage(
            self.out, self.workspaces, self.shell, self.commands, reject_test_changes=self.config.reject_test_changes
        )
        passed = await grader.grade(task, ws, patch, name, row, shell=self._shell_for(venv))
        return passed, row

    async def discard(self, name: str) -> str | None:
        """Remove the task's directories; the kept workspace's path (--keep-workspaces)."""
        await self.workspaces.discard(name)
        kept = self.workspaces.path_for(name)
        return str(kept) if self.config.keep_workspaces and kept.exists() else None

    def files(self, name: str) -> dict[str, bytes]:
        """The task's logs, relative to the out directory (for a caller elsewhere)."""
        logs = self.out.logs / name
        if not logs.is_dir():
            return {}
        return {self.out.rel(p): p.read_bytes() for p in sorted(logs.rglob("*")) if p.is_file()}
