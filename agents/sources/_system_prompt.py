"""System prompt assembly: named sections in a fixed order, each tagged with its source.

Order, stable first so the cached prefix stays byte-identical across turns:
Base Instructions, Tool Catalog, Skill Catalog, Environment, Project Instructions,
Memory Rules and Index, Goal. The environment is read once when the session is
built (not per turn) for the same reason. Optional sections appear only when their
capability exists.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from tools.host_git import repository_head

__all__ = [
    "BASE_INSTRUCTIONS",
    "INSTRUCTIONS_MAX_CHARS",
    "Section",
    "SystemPrompt",
    "environment_section",
    "project_instructions_section",
    "tool_catalog_section",
]

BASE_INSTRUCTIONS = """\
You are a coding agent working in a repository through tools.
- Read before you edit; keep changes minimal and in the style of the code around them.
- A tool result marked as an error is information, not the end: read it, correct the call or the plan, and go on.
- Never invent file contents or command output; if you did not see it in a tool result, check.
- Long tool output may be truncated and old tool output cleared from view; the marker names an id, and Recall returns the original.
- Before you finish, verify: run the project's tests or the command that proves the change, and report the exact command and its result.
- When you are done, answer with a short summary of what changed and how it was verified."""

SECTION_ORDER = ("base", "tools", "skills", "environment", "project", "memory", "goal")
INSTRUCTIONS_MAX_CHARS = 20_000  # of all instruction files together, in the system prompt


@dataclass(frozen=True)
class Section:
    name: str  # one of SECTION_ORDER
    title: str
    source: str  # where the text came from: a file, the registry, the harness
    text: str


@dataclass(frozen=True)
class SystemPrompt:
    sections: tuple[Section, ...]

    @classmethod
    def assemble(cls, sections: Iterable[Section | None]) -> SystemPrompt:
        present = [s for s in sections if s is not None and s.text.strip()]
        present.sort(key=lambda s: SECTION_ORDER.index(s.name))
        return cls(tuple(present))

    @classmethod
    def plain(cls, text: str) -> SystemPrompt:
        return cls((Section("base", "Instructions", "caller", text),))

    def replace(self, section: Section | None, name: str) -> SystemPrompt:
        """The same prompt with section `name` swapped (or removed when None)."""
        kept = [s for s in self.sections if s.name != name]
        return SystemPrompt.assemble([*kept, section])

    @property
    def text(self) -> str:
        parts = []
        for s in self.sections:
            parts.append(s.text if s.name == "base" else f"# {s.title}\n{s.text}")
        return "\n\n".join(parts)


def base_section() -> Section:
    return Section("base", "Base Instructions", "workingset:base", BASE_INSTRUCTIONS)


def tool_catalog_section(tools: Iterable) -> Section:
    lines = []
    for tool in tools:
        first = tool.description.split(". ")[0].rstrip(".")
        kind = "read-only" if tool.is_read_only else "changes state"
        lines.append(f"- {tool.name} ({kind}): {first}.")
    return Section("tools", "Tool Catalog", "registry", "\n".join(lines))


def git_summary(cwd: Path) -> str:
    """The branch (or detached commit) from HEAD, read without running git: a host-side
    `git status` could run filter drivers the repository's own config names. The model
    sees the work tree's changes with `git status` in its sandbox."""
    head = repository_head(cwd)
    if head is None:
        return "Git: not a repository"  # no process to learn that (batches open many sessions)
    if head.branch is None and head.commit is None:
        return "Git: a repository (HEAD not readable here; run git status)"
    if head.branch is not None:
        return f"Git: branch {head.branch}" + ("" if head.commit else " (no commits yet)")
    return f"Git: detached HEAD at {head.commit[:12] if head.commit else 'an unknown commit'}"


def environment_section(cwd: Path, today: date | None = None) -> Section:
    today = today or date.today()
    text = "\n".join(
        [
            f"Working directory: {cwd}",
            f"Platform: {platform.system()} {platform.machine()}",
            f"Date: {today.isoformat()}",
            git_summary(cwd),
        ]
    )
    return Section("environment", "Environment", "environment (read at session start)", text)


def project_instructions_section(
    found: list[tuple[Path, str]], max_chars: int = INSTRUCTIONS_MAX_CHARS
) -> Section | None:
    """The "project" section from `read_project_instructions`, capped at `max_chars`."""
    if not found:
        return None
    parts, used = [], 0
    for path, text in found:
        header = f"## {path}\n"
        room = max_chars - used - len(header)
        if room <= 0:
            parts.append(f"[{path}: {len(text)} chars omitted; project instructions cap of {max_chars} chars reached]")
            continue
        if len(text) > room:
            text = text[:room] + f"\n[truncated: {len(text) - room} more chars of {path} not shown]"
        parts.append(header + text)
        used += len(header) + len(text)
    return Section("project", "Project Instructions", ", ".join(str(p) for p, _ in found), "\n\n".join(parts))
