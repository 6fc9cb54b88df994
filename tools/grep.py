"""Grep: search file contents with a Python regex, in pure Python.

No ripgrep dependency: the same code runs on any worker. The walk is blocking
file I/O, so it runs in a thread to keep the event loop (and other agents) free.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from tools.base import ExecutionDomain, ToolContext, ToolError, ToolOutput
from tools.workspace import (
    BINARY_SNIFF_BYTES,
    path_permission_subject,
    relative_display,
    resolve_in_workspace,
    walk_files,
)

__all__ = ["GrepInput", "GrepTool"]

# Minified files have huge lines; a match should not flood the context.
MAX_LINE_CHARS = 500


class GrepInput(BaseModel):
    """Input for Grep."""

    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(
        min_length=1,
        description="Python regular expression (re module syntax) searched for in each line.",
    )
    path: str | None = Field(
        default=None,
        description="File or directory to search, relative to the workspace root. "
        "Omit to search the whole workspace.",
    )
    glob: str | None = Field(
        default=None,
        description='Only search files whose name matches this glob, e.g. "*.py". '
        "A glob containing '/' is matched against the path relative to the workspace.",
    )
    case_insensitive: bool = Field(default=False, description="Ignore letter case when matching.")
    max_results: int | None = Field(
        default=None,
        ge=1,
        description="Maximum matching lines to return (capped by the harness limit).",
    )


class GrepTool:
    name = "Grep"
    description = (
        "Search file contents in the workspace with a Python regular expression. "
        "Returns matching lines as `path:line_number:line`. Skips .git, binary files "
        "and very large files. Narrow the search with path and glob."
    )
    input_model = GrepInput
    is_read_only = True
    execution_domain = ExecutionDomain.LOCAL
    root_only = False

    permission_subject = path_permission_subject

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        assert isinstance(args, GrepInput)
        flags = re.IGNORECASE if args.case_insensitive else 0
        try:
            regex = re.compile(args.pattern, flags)
        except re.error as err:
            raise ToolError(f"Invalid regex {args.pattern!r}: {err}") from err
        target = resolve_in_workspace(ctx.workspace, args.path or ".")
        if not target.exists():
            raise ToolError(f"Path not found: {relative_display(ctx.workspace, target)}")
        cap = min(args.max_results or ctx.limits.grep_max_matches, ctx.limits.grep_max_matches)
        result = await asyncio.to_thread(
            _search,
            ctx.workspace.resolve(),
            target,
            regex,
            args.glob,
            cap,
            ctx.limits.read_max_bytes,
        )
        return ToolOutput(
            content=result.render(args.pattern, relative_display(ctx.workspace, target))
        )


@dataclass
class _Result:
    lines: list[str] = field(default_factory=list)
    cut: int = 0
    skipped_large: int = 0

    def render(self, pattern: str, where: str) -> str:
        out = list(self.lines) or [f"No matches for {pattern!r} in {where}."]
        if self.cut:
            out.append(f"\n[{self.cut} more matches not shown; narrow the pattern, path or glob]")
        if self.skipped_large:
            out.append(f"[{self.skipped_large} files skipped for being too large to search]")
        return "\n".join(out)


def _search(
    root: Path, target: Path, regex: re.Pattern[str], glob: str | None, cap: int, max_bytes: int
) -> _Result:
    result = _Result()
    # An explicitly named file is searched even if the glob would not match it.
    if target.is_file():
        files: Iterable[Path] = [target]
    else:
        files = (p for p in walk_files(root, target) if not glob or _glob_matches(root, p, glob))
    for path in files:
        data = _read_searchable(path, max_bytes)
        if data is None:
            result.skipped_large += 1
            continue
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            continue
        rel = relative_display(root, path)
        for lineno, line in enumerate(_split_lines(data), 1):
            if not regex.search(line):
                continue
            if len(result.lines) >= cap:
                # Keep counting so the note says how much was cut.
                result.cut += 1
                continue
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + " [...]"
            result.lines.append(f"{rel}:{lineno}:{line}")
    return result


def _glob_matches(root: Path, path: Path, glob: str) -> bool:
    if "/" in glob:
        return fnmatchcase(relative_display(root, path), glob)
    return fnmatchcase(path.name, glob)


def _read_searchable(path: Path, max_bytes: int) -> bytes | None:
    """The file's bytes; None if too large; b"" if unreadable (vanished, no permission)."""
    try:
        if path.stat().st_size > max_bytes:
            return None
        return path.read_bytes()
    except OSError:
        # A file deleted mid-walk or unreadable is not worth failing the whole search.
        return b""


def _split_lines(data: bytes) -> list[str]:
    # Split on "\n" only, like Read, so line numbers agree between the two tools.
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]
