"""Grep: search file contents with an RE2 regex, in linear time, off the event loop.

No ripgrep: rg opens the files it walks by path, so a directory swapped for a symlink
mid-walk would lead it out of the workspace; here files are opened from the walk's own
directory handles (`tools.files._tree_walk`), never by a path a swapped symlink could redirect,
and files a per-file deny rule covers are skipped. The pattern is RE2 (`tools.files._grep_regex`):
each file is searched as one buffer in time linear in its size, whatever the pattern.
What the ignore files exclude is left out unless `include_ignored` (`tools.files._ignore_files`).

The walk runs in a worker thread (RE2 releases the GIL while it matches), which checks
its deadline (`tools.search_timeout_s`) between files and between chunks of a file and
stops there, returning what it found with a note.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ConfigDict, Field

from tools.base import ExecutionDomain, ToolContext, ToolError, ToolOutput
from tools.deadline import Deadline, run_until_deadline
from tools.encodable import shown_name
from tools.files._beneath import BeneathError
from tools.files._glob import INCLUDE_IGNORED, glob_segments
from tools.files._glob_regex import GlobError, compile_regex, files_regex, subject
from tools.files._grep_regex import compile_grep_pattern
from tools.files._tree_walk import open_walked, walk_files
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
CHUNK_BYTES = 1 << 20  # a file is searched in chunks of about this size, the deadline checked between


class GrepInput(PathInput):
    """Input for Grep."""

    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(
        min_length=1,
        description="Regular expression in RE2 syntax (Python re syntax without backreferences, "
        "lookahead/lookbehind or possessive quantifiers), searched for in each line.",
    )
    path: str | None = Field(
        default=None,
        description="File or directory to search, relative to the workspace root. Omit to search the whole workspace.",
    )
    glob: str | None = Field(
        default=None,
        description='Only search files whose name matches this glob, e.g. "*.py". '
        "A glob containing '/' is matched against the path relative to the workspace, as Glob does.",
    )
    case_insensitive: bool = Field(default=False, description="Ignore letter case when matching.")
    max_results: int | None = Field(
        default=None,
        ge=1,
        description="Maximum matching lines to return (capped by the harness limit).",
    )
    include_ignored: bool = INCLUDE_IGNORED


class GrepTool:
    name = "Grep"
    description = (
        "Search file contents in the workspace with a regular expression (RE2 syntax). "
        "Returns matching lines as `path:line_number:line`. Skips .git, binary files, very "
        "large files and files the ignore files (.gitignore, .ignore, .git/info/exclude) leave "
        "out unless include_ignored is true. Narrow the search with path and glob."
    )
    input_model = GrepInput
    is_read_only = True
    execution_domain = ExecutionDomain.LOCAL
    root_only = False

    permission_subject = path_permission_subject

    async def run(self, args: GrepInput, ctx: ToolContext) -> ToolOutput:
        regex = compile_grep_pattern(args.pattern, case_insensitive=args.case_insensitive)
        wanted = _glob_filter(args.glob) if args.glob else None
        cap = min(args.max_results or ctx.limits.grep_max_matches, ctx.limits.grep_max_matches)
        limits = ctx.limits
        where, result = await run_until_deadline(
            lambda deadline: _search(ctx, args, _Search(regex, cap, limits.read_max_bytes, deadline), wanted),
            limits.search_timeout_s,
        )
        return ToolOutput(content=result.render(args, where, limits.search_timeout_s))


def _glob_filter(glob: str) -> Callable[[str], bool]:
    """Grep's `glob`: on the path when it holds a '/', else on the file name."""
    try:
        match = compile_regex(files_regex(glob_segments(glob) if "/" in glob else [glob]))
    except GlobError as exc:
        raise ToolError(f"glob {glob[:100]!r}: {exc}; use a shorter glob") from None
    if "/" in glob:
        return lambda rel: match(subject("/" + rel)) is not None
    return lambda rel: match(subject("/" + rel.rsplit("/", 1)[-1])) is not None


@dataclass
class _Search:
    """One Grep call's matcher, limits and findings."""

    regex: Any  # a compiled re2 pattern
    cap: int
    max_bytes: int
    deadline: Deadline
    lines: list[str] = field(default_factory=list)
    cut: int = 0
    skipped_large: int = 0
    searched: int = 0
    stopped: bool = False

    def render(self, args: GrepInput, where: str, timeout_s: float) -> str:
        out = list(self.lines)
        if not out:
            left_out = (
                "" if args.include_ignored else " (ignored files were not searched; include_ignored=true searches them)"
            )
            out.append(f"No matches for {args.pattern!r} in {where}{left_out}.")
        if self.cut:
            out.append(f"\n[{self.cut} more matches not shown; narrow the pattern, path or glob]")
        if self.skipped_large:
            out.append(f"[{self.skipped_large} files skipped for being too large to search]")
        if self.stopped:
            out.append(
                f"[stopped at the time limit of {timeout_s:g} s (tools.search_timeout_s) after "
                f"{self.searched} files: results are incomplete; narrow the path or glob]"
            )
        return "\n".join(out)

    def file(self, fd: int, shown: str) -> None:
        """Search one open file (the fd is closed here)."""
        try:
            if os.fstat(fd).st_size > self.max_bytes:
                self.skipped_large += 1
                return
            data = _read_at_most(fd, self.max_bytes + 1)
        except OSError:
            return  # unreadable (an I/O error): skipped like a vanished file
        finally:
            os.close(fd)
        self.searched += 1
        if b"\0" in data[:BINARY_SNIFF_BYTES] or len(data) > self.max_bytes:
            return
        if b"\r\n" in data:
            data = data.replace(b"\r\n", b"\n")  # "$" ends a line before its "\r" too, as Read shows it
        self._matches(data, shown)

    def _matches(self, data: bytes, shown: str) -> None:
        pos, counted, line_no, size = 0, 0, 1, len(data)
        while pos < size and not self.stopped:
            end = data.find(b"\n", min(pos + CHUNK_BYTES, size))
            end = size if end < 0 else end + 1
            while pos < end:
                found = self.regex.search(data, pos, end)
                if found is None:
                    break
                first, last = found.span()
                start = data.rfind(b"\n", 0, first) + 1
                if start >= end:
                    break  # an empty match where the next chunk (or the file's end) starts
                stop = data.find(b"\n", last, end)  # never_nl: the match ends on its line
                stop = end if stop < 0 else stop
                if len(self.lines) < self.cap:
                    line_no += data.count(b"\n", counted, start)
                    counted = start
                    self._show(shown, line_no, data[start:stop])
                else:
                    self.cut += 1  # keep counting, so the note says how much was cut
                pos = stop + 1
            pos = max(pos, end)
            self.stopped = self.deadline.passed()

    def _show(self, shown: str, line_no: int, line: bytes) -> None:
        text = line.decode("utf-8", errors="replace")
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + " [...]"
        self.lines.append(f"{shown}:{line_no}:{text}")


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total < limit and (chunk := os.read(fd, limit - total)):
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _search(
    ctx: ToolContext, args: GrepInput, search: _Search, wanted: Callable[[str], bool] | None
) -> tuple[str, _Search]:
    with open_workspace(ctx.workspace) as root:
        target = call_target(root, ctx, args)
        st = root.stat(target.real, follow_links=False)
        if st is None or is_hidden(ctx, target.named, target.real):
            raise ToolError(f"Path not found: {target.named}")
        if not stat.S_ISDIR(st.st_mode):
            # An explicitly named file is searched even if the glob or an ignore file would leave it out.
            search.file(root.open_regular(target.real, follow_links=False), shown_name(target.named))
            return target.named, search
        walk = walk_files(
            root, target.real, skip_dirs=SKIP_DIRS, follow_links=False, ignore_files=not args.include_ignored
        )
        for entry in walk:
            search.stopped = search.stopped or search.deadline.passed()
            if search.stopped:
                break
            if is_hidden(ctx, entry.path, entry.real) or (wanted is not None and not wanted(entry.path)):
                continue
            try:
                fd = open_walked(root, entry)
            except BeneathError:
                continue  # replaced or removed mid-walk: not worth failing the whole search
            search.file(fd, shown_name(entry.path))
    return target.named, search
