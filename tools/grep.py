"""Grep: search file contents with a Python regex, in pure Python.

No ripgrep dependency: the same code runs on any worker. The walk is blocking
file I/O, so it runs in a thread to keep the event loop (and other agents) free.
Files are opened from the walk's own directory handles, never by a path that a
swapped symlink could redirect; files a per-file deny rule covers are skipped.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from pydantic import BaseModel, ConfigDict, Field

from tools.base import ExecutionDomain, ToolContext, ToolError, ToolOutput
from tools.beneath import BeneathError
from tools.tree_walk import open_walked, walk_files
from tools.workspace import (
    BINARY_SNIFF_BYTES,
    SKIP_DIRS,
    PathInput,
    call_target,
    is_hidden,
    open_workspace,
    path_permission_subject,
)

__all__ = ["GrepInput", "GrepTool"]

# Minified files have huge lines; a match should not flood the context.
MAX_LINE_CHARS = 500


class GrepInput(PathInput):
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
        cap = min(args.max_results or ctx.limits.grep_max_matches, ctx.limits.grep_max_matches)
        where, result = await asyncio.to_thread(_search, ctx, args, regex, cap)
        return ToolOutput(content=result.render(args.pattern, where))


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


def _search(ctx: ToolContext, args: GrepInput, regex: re.Pattern[str], cap: int) -> tuple[str, _Result]:
    result = _Result()
    max_bytes = ctx.limits.read_max_bytes
    with open_workspace(ctx.workspace) as root:
        target = call_target(root, ctx, args)
        st = root.stat(target.real, follow_links=False)
        if st is None or is_hidden(ctx, target.named, target.real):
            raise ToolError(f"Path not found: {target.named}")
        if not stat.S_ISDIR(st.st_mode):
            # An explicitly named file is searched even if the glob would not match it.
            _search_file(result, root.open_regular(target.real, follow_links=False), target.named, regex, cap, max_bytes)
            return target.named, result
        for entry in walk_files(root, target.real, skip_dirs=SKIP_DIRS, follow_links=False):
            if is_hidden(ctx, entry.path, entry.real) or (args.glob and not _glob_matches(entry.path, args.glob)):
                continue
            try:
                fd = open_walked(root, entry)
            except BeneathError:
                continue  # replaced or removed mid-walk: not worth failing the whole search
            _search_file(result, fd, entry.path, regex, cap, max_bytes)
    return target.named, result


def _search_file(result: _Result, fd: int, shown: str, regex: re.Pattern[str], cap: int, max_bytes: int) -> None:
    with os.fdopen(fd, "rb") as f:
        if os.fstat(fd).st_size > max_bytes:
            result.skipped_large += 1
            return
        try:
            data = f.read()
        except OSError:
            return  # unreadable (an I/O error): skipped like a vanished file
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return
    for lineno, line in enumerate(_split_lines(data), 1):
        if not regex.search(line):
            continue
        if len(result.lines) >= cap:
            # Keep counting so the note says how much was cut.
            result.cut += 1
            continue
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + " [...]"
        result.lines.append(f"{shown}:{lineno}:{line}")


def _glob_matches(rel: str, glob: str) -> bool:
    if "/" in glob:
        return fnmatchcase(rel, glob)
    return fnmatchcase(rel.rsplit("/", 1)[-1], glob)


def _split_lines(data: bytes) -> list[str]:
    # Split on "\n" only, like Read, so line numbers agree between the two tools.
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]
