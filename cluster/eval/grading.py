"""Commands in a task's workspace, inside the Bash sandbox: setup, grading, and the
git steps that read what the agent left (the patch, the hidden tests).

Everything that runs after the agent has had the workspace goes through the sandbox,
git included: the agent could have written `.git/config` (an fsmonitor, a filter
driver), and those must not run on the host. Commands go through `BashTool` with the
runner `command_runner(settings, writable=(".git",))` gives (bubblewrap unless
`--no-sandbox`): the workspace the only writable place — `.git` included here, unlike
for the agent, because the patch is taken with a temporary index in `.git` — no
network, the sandbox's limits, the process tree killed when it ends. A result that a
limit or the timeout ended has no exit code: it never counts as a pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from agents.assembly import command_runner
from agents.config import WorkingsetSettings
from tools.base import ToolContext, ToolError, ToolLimits
from tools.bash import BashInput, BashTool

__all__ = ["CommandResult", "GradeResult", "GradingError", "SandboxedShell"]

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


@dataclass(frozen=True)
class GradeResult:
    passed: bool
    exit_code: int | None
    log_path: Path


class SandboxedShell:
    """Runs commands in a workspace through BashTool and the configured sandbox."""

    def __init__(self, settings: WorkingsetSettings, *, output_max_chars: int = 60_000):
        # `.git` stays writable here: the patch is taken with a temporary index in .git.
        self.runner = command_runner(settings, writable=(".git",))
        self.output_max_chars = output_max_chars
        self.tool = BashTool()

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
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text(f"$ {command}\n{result.output}\n[exit code: {result.exit_code}]\n", encoding="utf-8")
        if result.timed_out:
            raise GradingError(f"the test command timed out after {timeout_s:g} s (log: {log_path})")
        if result.exit_code is None:
            raise GradingError(f"the test command could not run: {result.tail(2)}")
        return GradeResult(result.exit_code == 0, result.exit_code, log_path)


class GradingError(Exception):
    """The grader gave no verdict."""
