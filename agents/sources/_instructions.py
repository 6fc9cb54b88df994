"""Project instructions: the files of a directory, the files they import, and where they are read.

In each directory, in this order: `AGENTS.md`, `CLAUDE.md`, `CLAUDE.local.md` (the
user's own, beside CLAUDE.md), `.claude/CLAUDE.md`, `.workingset/INSTRUCTIONS.md`.

- At start: the workspace and its parents up to the repository root (outermost first),
  for the system prompt's Project Instructions (`read_project_instructions`).
- Later: a subdirectory of the workspace, the first time a file tool reaches a path in it,
  as Claude Code loads a nested CLAUDE.md when it reads files there
  (`read_directory_instructions`; agents.sources._nested_instructions delivers them).

Imports, as Claude Code reads them: a word `@path` outside code spans and fenced blocks
imports that file, relative to the importing file, up to IMPORT_MAX_DEPTH hops; an
imported file follows the one that imported it, and each file comes once. An import is
read beneath the tree the instructions come from (the workspace; for a parent
directory's file, the repository root) and through no symlink at all; one that leads out
of it, through a link, from the home directory (`@~/…`) or deeper than the limit is not
followed and is named. A word that names no file (`@alice`) stays text; one that looks like
a path (has a `/` or a `.`) and names nothing is named.

No instruction file is read through a link out of its directory (the agent writes the
workspace, and a link could show the model ~/.ssh/id_rsa): a directory is opened beneath
the workspace without links, and files in it through its handle. Caps, one definition
each: every file (an import too) is read up to INSTRUCTION_FILE_MAX_BYTES; what is
delivered at once is capped at INSTRUCTIONS_MAX_CHARS with visible markers
(system_prompt.project_instructions_section); at most IMPORT_MAX_FILES imports are read
for one delivery.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tools.files import Beneath, BeneathError, dir_beneath, is_present

__all__ = [
    "IMPORT_MAX_DEPTH",
    "IMPORT_MAX_FILES",
    "INSTRUCTION_FILES",
    "INSTRUCTION_FILE_MAX_BYTES",
    "import_paths",
    "read_directory_instructions",
    "read_project_instructions",
]

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md", ".workingset/INSTRUCTIONS.md")
INSTRUCTION_FILE_MAX_BYTES = 1_000_000
IMPORT_MAX_DEPTH = 5  # hops, as Claude Code documents
IMPORT_MAX_FILES = 50

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+).*?\1")
_IMPORT = re.compile(r"(?<!\S)@(\S+)")
_TRAILING = ".,;:!?)]}>'\""

Found = list[tuple[Path, str]]


def import_paths(text: str) -> Iterator[str]:
    """The `@path` words of `text`, in order, outside code spans and fenced code blocks."""
    fence: str | None = None
    for line in text.splitlines():
        opening = _FENCE.match(line)
        if opening is not None and (fence is None or opening.group(1)[0] == fence):
            fence = opening.group(1)[0] if fence is None else None
            continue
        if fence is not None:
            continue
        for word in _IMPORT.finditer(_CODE_SPAN.sub("", line)):
            path = word.group(1).rstrip(_TRAILING)
            if path:
                yield path


@dataclass
class _Reader:
    """Files read for one delivery, imports followed, and the problems met."""

    found: Found = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seen: set[Path] = field(default_factory=set)
    imports: int = 0

    def directory(self, base: Path, rel: str, import_root: Path) -> None:
        """The instruction files of `base/rel` (`rel` "" for `base` itself, which is the host's
        choice; any other is opened beneath it without links), with their imports."""
        top = base / rel if rel else base
        for name in INSTRUCTION_FILES:
            parent, _, leaf = name.rpartition("/")
            inner = "/".join(p for p in (rel, parent) if p)
            handle = dir_beneath(base, inner) if inner else _opened(base)
            text = None
            if handle is not None:
                with handle:
                    text = handle.read_text_if_regular(leaf, INSTRUCTION_FILE_MAX_BYTES)
            path = top / name
            if text is not None:
                self.add(path, text, import_root, depth=0)
            elif is_present(path):
                self.problems.append(
                    f"{path} was not read: it is a link that leads outside {path.parent} or not a regular file"
                )

    def add(self, path: Path, text: str, import_root: Path, depth: int) -> None:
        self.seen.add(path)
        self.found.append((path, text.strip()))
        for word in import_paths(text):
            self._follow(path, word, import_root, depth + 1)

    def _follow(self, importer: Path, word: str, import_root: Path, depth: int) -> None:
        def refuse(why: str) -> None:
            self.problems.append(f"@{word} in {importer} was not imported: {why}")

        if word.startswith("~"):
            return refuse(f"imports from the home directory are not followed; only files inside {import_root} are")
        target = Path(os.path.normpath(importer.parent / word))
        if not target.is_relative_to(import_root):
            return refuse(f"it leads outside {import_root}")
        if target in self.seen:
            return None
        rel = str(target.relative_to(import_root))
        try:
            with Beneath(import_root) as root:
                found = root.stat(rel, follow_links=False)
                if found is None:
                    if "/" in word or "." in word:
                        refuse("no such file")
                    return None
                if depth > IMPORT_MAX_DEPTH:
                    return refuse(f"imports go at most {IMPORT_MAX_DEPTH} deep")
                if self.imports >= IMPORT_MAX_FILES:
                    return refuse(f"at most {IMPORT_MAX_FILES} files are imported")
                data = root.read_regular(rel, INSTRUCTION_FILE_MAX_BYTES, follow_links=False)
        except BeneathError:
            return refuse("it is reached through a symbolic link, or is not a regular file")
        self.imports += 1
        self.add(target, data.decode("utf-8", errors="replace"), import_root, depth)
        return None


def _opened(path: Path) -> Beneath | None:
    try:
        return Beneath(path)
    except BeneathError:
        return None


def _instruction_dirs(cwd: Path) -> list[Path]:
    """The workspace and its parents up to the repository root, outermost first."""
    dirs: list[Path] = []
    for directory in (cwd, *cwd.parents):
        dirs.append(directory)
        if os.path.lexists(directory / ".git"):
            return list(reversed(dirs))
    return [cwd]  # not inside a repository: the workspace alone


def read_project_instructions(cwd: Path) -> tuple[Found, list[str]]:
    """The instruction files found from the repository root down to the workspace, each
    followed by what it imports, as (path, text); and one problem line per file or import
    that exists but was not read (a link leading out of its directory — to /etc/shadow, or
    ~/.ssh/id_rsa —, something not a regular file, an import refused)."""
    reader = _Reader()
    dirs = _instruction_dirs(cwd)
    for directory in dirs:
        # A parent's file is the user's (the agent writes only the workspace): it may import
        # from anywhere in the repository; a file in the workspace only from the workspace.
        reader.directory(directory, "", cwd if directory == cwd else dirs[0])
    return reader.found, reader.problems


def read_directory_instructions(workspace: Path, rel: str) -> tuple[Found, list[str]]:
    """The instruction files of the workspace's subdirectory `rel`, with their imports."""
    reader = _Reader()
    reader.directory(workspace, rel, workspace)
    return reader.found, reader.problems
