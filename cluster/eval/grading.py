"""The task's own commands, inside the Bash sandbox: setup (in the agent's workspace,
and again in the grading copy) and the test command (in the grading copy).

They go through `BashTool` with the runner `command_runner(settings)` gives (bubblewrap
unless `--no-sandbox`): the directory they run in the only writable place (its `.git`
read-only, as for the agent: nothing of the harness writes there any more), no network,
the sandbox's limits, the process tree killed when it ends. A result that a limit or the
timeout ended has no exit code: it never counts as a pass. Git on the host never runs
here: see trusted_git.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from agents.errors import WorkingsetError
from agents.opening import command_runner
from agents.settings import WorkingsetSettings
from tools.base import ToolContext, ToolError, ToolLimits
from tools.bash import BashInput, BashTool

__all__ = ["CommandResult", "GradeResult", "GradingError", "SandboxedShell", "write_log"]

_EXIT = re.compile(r"\nexit code: (-?\d+|None)\Z")
_TIMED_OUT = "Command timed out after "


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None  # None: timed out, or could not start
    timed_out: bool
    output: str  # combined stdout + stderr, head and tail kept

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def tail(self, lines: int = 5) -> str:
        return "\n".join(self.output.strip().splitlines()[-lines:])


def write_log(log_path: Path, command: str, result: CommandResult, *, note: str = "") -> None:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    head = f"# {note}\n" if note else ""
    log_path.write_text(f"{head}$ {command}\n{result.output}\n[exit code: {result.exit_code}]\n", encoding="utf-8")


@dataclass(frozen=True)
class GradeResult:
    passed: bool
    exit_code: int | None
    log_path: Path


class SandboxedShell:
    """Runs commands in a workspace through BashTool and the configured sandbox."""

    def __init__(self, settings: WorkingsetSettings, *, output_max_chars: int = 60_000):
        self.settings = settings
        self.runner = command_runner(settings)
        self.output_max_chars = output_max_chars
        self.tool = BashTool()

    def with_settings(self, settings: WorkingsetSettings) -> SandboxedShell:
        """The same shell with another sandbox (a task's own environment)."""
        return SandboxedShell(settings, output_max_chars=self.output_max_chars)

    def with_output_cap(self, chars: int) -> SandboxedShell:
        """The same shell keeping up to `chars` of output (a log read whole)."""
        return SandboxedShell(self.settings, output_max_chars=chars)

    def seeing(self, *paths: Path) -> SandboxedShell:
        """The same shell with these host directories visible read-only (the grader's own modules)."""
        sandbox = self.settings.sandbox.seeing(*paths)
        return self.with_settings(self.settings.model_copy(update={"sandbox": sandbox}))

    async def run(self, command: str, workspace: Path, timeout_s: float) -> CommandResult:
        ctx = ToolContext(
            workspace=workspace,
            limits=ToolLimits(bash_timeout_s=timeout_s, bash_output_max_chars=self.output_max_chars),
            runner=self.runner,
        )
        try:
            out = await self.tool.run(BashInput(command=command), ctx)
        except ToolError as exc:  # no bubblewrap, and no opt-out
            return CommandResult(None, False, str(exc))
        if out.is_error:  # timed out, or a sandbox limit ended it: no exit code to trust
            return CommandResult(None, out.content.startswith(_TIMED_OUT), out.content)
        match = _EXIT.search(out.content)
        code = int(match.group(1)) if match and match.group(1) != "None" else None
        body = out.content[: match.start()] if match else out.content
        return CommandResult(code, False, body)

    async def grade(self, command: str, workspace: Path, timeout_s: float, log_path: Path) -> GradeResult:
        """Run the test command; its output goes to `log_path`. A timeout raises
        GradingError (the task becomes an error row: the result says nothing)."""
        result = await self.run(command, workspace, timeout_s)
        write_log(log_path, command, result)
        if result.timed_out:
            raise GradingError(f"the test command timed out after {timeout_s:g} s (log: {log_path})")
        if result.exit_code is None:
            raise GradingError(f"the test command could not run: {result.tail(2)}")
        return GradeResult(result.exit_code == 0, result.exit_code, log_path)


class GradingError(WorkingsetError):
    """The grader gave no verdict."""
