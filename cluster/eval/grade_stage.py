"""Grading one task: a fresh copy of the base, the agent's patch, the hidden tests, the tests.

    hidden tests (base + test_patch, computed on the host)
    -> audit: which patched files are test infrastructure (patch_touches_tests)
    -> [grading.reject_test_changes: such a patch fails here]
    -> grading copy: clone of the base at the base commit + `git apply` of the patch
    -> setup command (sandboxed, in the copy)
    -> hidden tests placed last, replacing any version of the agent's, and with them the
       grader's pytest configuration (the base's: verdicts/config.py)
    -> test command (sandboxed, in the copy) -> the verdict

A pytest command is graded per test (verdicts/): it runs under the grader's own boot
module and reporter, and passes when pytest finished its session and every required
test — the task's list, else those the hidden test files define, else those the base
collects — is passing. Any other command is graded by its exit code, and the row's
`grade.verdict` says `exit-code`.

The copy is made after the agent's session has closed, from the trusted base, and the
agent's workspace is gone (or, kept, never read again): nothing the agent left outside
its patch reaches the grade, and nothing can change the copy from outside the grader's
own sandbox. A patch that cannot be graded (it does not apply, or it breaks the setup)
fails the task with the reason in `error`; a grader that gives no verdict (a timeout,
a test patch that does not apply to the base, an environment without pytest) is an
error row.
"""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

from cluster.eval.base_repo import read_files, top_entries
from cluster.eval.errors import PatchNotGradable, TaskEnded, WorkspaceError
from cluster.eval.grading import GradingError, SandboxedShell, write_log
from cluster.eval.hidden_tests import HiddenFile, place_hidden
from cluster.eval.layout import OutDir
from cluster.eval.patch_audit import MODULE_ROOTS, importable_names, touched_test_files
from cluster.eval.patches import Patch
from cluster.eval.swebench import parsed_run
from cluster.eval.tasks import Task
from cluster.eval.verdicts import (
    CONFIG_NAMES,
    BaseTests,
    Grade,
    PytestCommand,
    PytestConfig,
    PytestRun,
    base_config,
    reasons_for,
    run_pytest,
)
from cluster.eval.workspaces import Workspace, Workspaces
from tools.sandbox import VirtualEnv

__all__ = ["GradeStage"]

MAX_LOG_CHARS = 64 * 1024**2  # a parsed log is read whole


def _listed(paths: list[str], shown: int = 5) -> str:
    return ", ".join(paths[:shown]) + (f" and {len(paths) - shown} more" if len(paths) > shown else "")


def _site_dirs(shell: SandboxedShell) -> list[Path]:
    """Where the grading interpreter's installed modules are."""
    venv = shell.settings.sandbox.virtualenv
    if venv is not None:
        return list(VirtualEnv.of(venv).site_packages())
    return [Path(p) for p in sys.path if p.endswith(("site-packages", "dist-packages"))]


def _hidden_ids(run: PytestRun, hidden: list[HiddenFile]) -> list[str]:
    """The tests the hidden test files define, as this run collected them."""
    paths = {h.path for h in hidden if h.mode is not None}
    seen = dict.fromkeys([*run.collected, *run.outcomes])
    return [t for t in seen if t.split("::", 1)[0] in paths]


_NO_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '([\w.]+)'")


async def _base_modules(ws: Workspace) -> set[str]:
    """The top-level modules the repository itself has (at its top and under src/)."""
    names: set[str] = set()
    for root in MODULE_ROOTS:
        names |= {n.removesuffix(".py") for n in await top_entries(ws.base, root)}
    return names


def _environment_gap(run: PytestRun, own: set[str]) -> str | None:
    """A collection error that is the environment's, not the patch's: a module neither
    installed nor part of the repository (`No module named 'simplejson'`)."""
    for node, text in run.collect_errors.items():
        match = _NO_MODULE.search(text)
        if match and match.group(1).split(".")[0] not in own:
            return f"collecting {node} failed: no module named {match.group(1)!r}"
    return None


class GradeStage:
    def __init__(
        self,
        out: OutDir,
        workspaces: Workspaces,
        shell: SandboxedShell,
        commands: asyncio.Semaphore,
        *,
        reject_test_changes: bool = False,
    ):
        self.out = out
        self.workspaces = workspaces
        self.shell = shell
        self._commands = commands
        self.reject_test_changes = reject_test_changes

    async def grade(
        self, task: Task, ws: Workspace, patch: Patch, name: str, row: dict, shell: SandboxedShell | None = None
    ) -> bool | None:
        """The verdict (None: the patch was not graded, `row["error"]` says why); raises
        TaskEnded when the grader gives none. `shell`: the task's own (its environment)."""
        shell = shell or self.shell
        hidden = []
        if task.test_patch:
            try:
                hidden = await self.workspaces.hidden_tests(ws, task.test_patch, task.timeouts.test_s)
            except WorkspaceError as exc:
                raise TaskEnded(str(exc)) from None
        tops = {root: await top_entries(ws.base, root) for root in MODULE_ROOTS}
        shadowed = frozenset(sys.stdlib_module_names) | importable_names(_site_dirs(shell))
        touched = touched_test_files(
            patch.files, patch.contents, {h.path for h in hidden}, base_tops=tops, shadowed=shadowed
        )
        row["patch_touches_tests"] = touched
        reject = task.grading.reject_test_changes
        if touched and (self.reject_test_changes if reject is None else reject):
            row["error"] = (
                f"the patch changes test infrastructure ({_listed(touched)}) and this task rejects "
                "such patches (grading.reject_test_changes); not graded"
            )
            return None
        kind = task.grading.kind(task.test_command)
        command = PytestCommand.parse(task.test_command) if kind == "per-test" else None
        config = await self._config(task, ws, hidden, command) if command is not None else None
        placed = hidden + ([HiddenFile(config.path, 0o100644, config.data)] if config is not None else [])
        try:
            copy = await self._copy(ws, patch, name, task.timeouts.setup_s)
        except PatchNotGradable as exc:
            row["error"] = str(exc)
            return None
        try:
            if task.setup_command and not await self._setup(task, copy, name, row, shell):
                return None
            await self._place(copy, placed)
            if command is not None and config is not None:
                return await self._per_test(task, ws, copy, name, row, shell, command, config, hidden)
            if kind == "log-parser":
                return await self._log_parsed(task, copy, name, row, shell)
            return await self._exit_code(task, copy, name, row, shell)
        finally:
            await self.workspaces.remove(copy)

    async def _copy(self, ws: Workspace, patch: Patch, name: str, timeout_s: float) -> Path:
        try:
            return await self.workspaces.grading_copy(ws, patch, name, timeout_s)
        except PatchNotGradable:
            raise
        except (WorkspaceError, OSError) as exc:
            raise TaskEnded(f"grading copy: {exc}") from None

    @staticmethod
    async def _place(copy: Path, files: list[HiddenFile]) -> None:
        try:
            await asyncio.to_thread(place_hidden, copy, files)
        except WorkspaceError as exc:
            raise TaskEnded(str(exc)) from None

    async def _config(
        self, task: Task, ws: Workspace, hidden: list[HiddenFile], command: PytestCommand
    ) -> PytestConfig:
        named = command.config_source()
        wanted = [named.removeprefix("./")] if named else list(CONFIG_NAMES)
        hidden_data = {h.path: h.data for h in hidden if h.mode is not None}
        files = await read_files(ws.base, [p for p in wanted if p not in hidden_data])
        files.update({p: hidden_data[p] for p in wanted if p in hidden_data})
        return base_config(files.get, named=named, use=task.grading.pytest_config == "base")

    async def _setup(self, task: Task, copy: Path, name: str, row: dict, shell: SandboxedShell) -> bool:
        assert task.setup_command
        log = self.out.logs / name / "grade-setup.log"
        async with self._commands:
            result = await shell.run(task.setup_command, copy, task.timeouts.setup_s)
        write_log(log, task.setup_command, result)
        if result.ok:
            return True
        how = (
            f"timed out after {task.timeouts.setup_s:g} s"
            if result.timed_out
            else f"failed (exit code {result.exit_code})"
        )
        row["error"] = (
            f"the setup command {how} in the grading copy, with the agent's patch applied: "
            f"{result.tail(2)} (log: {self.out.rel(log)})"
        )
        return False

    async def _exit_code(self, task: Task, copy: Path, name: str, row: dict, shell: SandboxedShell) -> bool:
        log = self.out.logs / name / "grade.log"
        row["grade_log"] = self.out.rel(log)
        try:
            async with self._commands:
                result = await shell.grade(task.test_command, copy, task.timeouts.test_s, log)
        except GradingError as exc:
            raise TaskEnded(str(exc).replace(str(log), self.out.rel(log))) from None
        reasons = [] if result.passed else [f"the test command exited with code {result.exit_code}"]
        grade = Grade(verdict="exit-code", passed=result.passed, reasons=reasons, exit_code=result.exit_code)
        row.update(tests_passed=result.passed, test_exit_code=result.exit_code, grade=grade.model_dump(mode="json"))
        return result.passed

    async def _log_parsed(self, task: Task, copy: Path, name: str, row: dict, shell: SandboxedShell) -> bool:
        assert task.grading.log_parser
        log = self.out.logs / name / "grade.log"
        row["grade_log"] = self.out.rel(log)
        async with self._commands:
            result = await shell.with_output_cap(MAX_LOG_CHARS).run(task.test_command, copy, task.timeouts.test_s)
        write_log(log, task.test_command, result)
        where = f"(log: {self.out.rel(log)})"
        if result.timed_out:
            raise TaskEnded(f"the test command timed out after {task.timeouts.test_s:g} s {where}")
        run = parsed_run(task.grading.log_parser, result.output)
        if run is None:
            raise TaskEnded(
                f"no swebench log parser for {task.grading.log_parser!r} (pip install 'workingset[swebench]')"
            )
        required = task.grading.tests or []
        reasons = reasons_for(run, required)
        grade = Grade.from_run(
            run,
            required,
            verdict="log-parser",
            required_from="the task's grading.tests",
            groups=task.grading.test_groups,
            reasons=reasons,
            config=None,
            exit_code=result.exit_code,
        )
        row.update(tests_passed=grade.passed, test_exit_code=result.exit_code, grade=grade.model_dump(mode="json"))
        return grade.passed

    async def _per_test(
        self,
        task: Task,
        ws: Workspace,
        copy: Path,
        name: str,
        row: dict,
        shell: SandboxedShell,
        command: PytestCommand,
        config: PytestConfig,
        hidden: list[HiddenFile],
    ) -> bool:
        log = self.out.logs / name / "grade.log"
        row["grade_log"] = self.out.rel(log)
        async with self._commands:
            done = await run_pytest(
                shell,
                command,
                copy,
                config=config.path,
                timeout_s=task.timeouts.test_s,
                log=log,
                plugins=tuple(task.grading.pytest_plugins),
                original=task.test_command,
            )
        run, result = done.run, done.result
        where = f"(log: {self.out.rel(log)})"
        if result.timed_out:
            raise TaskEnded(f"the test command timed out after {task.timeouts.test_s:g} s {where}")
        if not run.booted:
            raise TaskEnded(
                f"the grader's interpreter did not start (exit code {result.exit_code}): {result.tail(2)} {where}"
            )
        if run.boot_error:
            raise TaskEnded(f"the task's environment cannot run pytest ({run.boot_error}) {where}")
        required, source = task.grading.tests, "the task's grading.tests"
        if required is None and hidden:
            required, source = _hidden_ids(run, hidden), "the tests the hidden test files define"
        if not required:
            base = BaseTests(self.out, self.workspaces, self._commands)
            required = await base.collected(task, ws, shell, command, config, hidden, name)
            source = "the tests the base collects"
        reasons = reasons_for(run, required)
        gap = _environment_gap(run, await _base_modules(ws))
        if reasons and gap is not None:
            raise TaskEnded(
                f"{gap}: the task's environment lacks it, so the grade says nothing of the patch; add it "
                f"to the environment (its packages or requirements) {where}"
            )
        grade = Grade.from_run(
            run,
            required,
            required_from=source,
            groups=task.grading.test_groups,
            reasons=reasons,
            config=config.source,
            exit_code=result.exit_code,
        )
        row.update(tests_passed=grade.passed, test_exit_code=result.exit_code, grade=grade.model_dump(mode="json"))
        return grade.passed
