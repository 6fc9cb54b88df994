"""The system prompt's stable parts: base instructions and the environment section."""

from __future__ import annotations

import platform
from datetime import date
from pathlib import Path

__all__ = ["BASE_INSTRUCTIONS", "environment_section", "build_system_prompt"]

BASE_INSTRUCTIONS = """\
You are a coding agent working in a repository through tools.
- Read before you edit; keep changes minimal and in the style of the code around them.
- A tool result marked as an error is information, not the end: read it, correct the call or the plan, and go on.
- Never invent file contents or command output; if you did not see it in a tool result, check.
- Before you finish, verify: run the project's tests or the command that proves the change, and report the exact command and its result.
- When you are done, answer with a short summary of what changed and how it was verified."""


def environment_section(cwd: Path, today: date | None = None) -> str:
    today = today or date.today()
    return "\n".join(
        [
            "# Environment",
            f"Working directory: {cwd}",
            f"Platform: {platform.system()} {platform.machine()}",
            f"Date: {today.isoformat()}",
        ]
    )


def build_system_prompt(cwd: Path, today: date | None = None) -> str:
    return f"{BASE_INSTRUCTIONS}\n\n{environment_section(cwd, today)}"
