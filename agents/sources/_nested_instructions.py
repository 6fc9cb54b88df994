"""Instructions of the subdirectories the agent works in, told when a file tool first reaches one.

The system prompt holds the instructions of the workspace and its parents, read once so
the cached prefix stays. A subdirectory's own `CLAUDE.md` or `AGENTS.md` (Claude Code's
nested memory) is read when a call of a file tool (Read, Edit, Write, Grep, Glob) that
ran without error reached a path in it or below it: its files (agents.sources._instructions,
imports included, capped as project instructions are) follow that batch's tool results
as one text block per directory, in the same user message, so nothing before them
changes. What was told is read back from the conversation: a directory told once is not
told again, unless a compaction folded the telling away, and then it is told again at
its next use. Directories inside `.git/`, `.workingset/` and `.claude/` are not read.
What was told is kept as the conversation grows (`ToldDirectories`), so a file call
costs the same however long the session has run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Set
from pathlib import Path, PurePosixPath

from agents.messages import Message, TextBlock
from agents.session import GrowingSet
from agents.sources._instructions import read_directory_instructions
from agents.sources._system_prompt import project_instructions_section
from tools.protected import protected_part

__all__ = ["ToldDirectories", "nested_instructions"]

_HEADER = "[Project instructions of {directory}/, read when a file tool first reached it]"
_TOLD = re.compile(r"^\[Project instructions of (.+)/, read when a file tool first reached it\]")


def _told_in(message: Message) -> Iterator[str]:
    """The directories whose instructions `message` told."""
    if message.role == "user":
        for block in message.content:
            if isinstance(block, TextBlock) and (match := _TOLD.match(block.text)) is not None:
                yield match.group(1)


class ToldDirectories(GrowingSet):
    """The directories whose instructions a conversation has told, kept as it grows
    (`agents.session._growth`)."""

    def __init__(self) -> None:
        super().__init__(_told_in)


def _directories(subjects: Iterable[str]) -> list[str]:
    """Every subdirectory a path lies in (and the path itself, which may be one), outermost first."""
    found: dict[str, None] = {}
    for subject in subjects:
        parts = PurePosixPath(subject).parts
        if subject.startswith("/") or not parts or parts == (".",) or ".." in parts:
            continue
        for end in range(1, len(parts) + 1):
            directory = "/".join(parts[:end])
            if protected_part(directory) is not None:
                break
            found[directory] = None
    return list(found)


def nested_instructions(workspace: Path, subjects: Iterable[str], told: Set[str]) -> tuple[list[TextBlock], list[str]]:
    """Text blocks telling the instructions of the subdirectories `subjects` (paths the
    file tools reached, workspace-relative) lie in, those not told yet (`told`: the
    directories the conversation has told); and problems."""
    candidates = _directories(subjects)
    if not candidates:
        return [], []
    blocks, problems = [], []
    for directory in candidates:
        if directory in told:
            continue
        found, trouble = read_directory_instructions(workspace, directory)
        problems += trouble
        section = project_instructions_section(found)
        if section is not None:
            blocks.append(TextBlock(text=f"{_HEADER.format(directory=directory)}\n{section.text}"))
    return blocks, problems
