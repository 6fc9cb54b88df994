"""Read: show a window of a text file with `cat -n` style line numbers.

The file is streamed line by line, so a window into a large file costs only the
lines up to the window plus a cheap newline count for the continuation note.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from pydantic import ConfigDict, Field

from tools.base import ExecutionDomain, ToolContext, ToolError, ToolOutput
from tools.workspace import (
    BINARY_SNIFF_BYTES,
    PathInput,
    call_target,
    is_hidden,
    open_workspace,
    path_permission_subject,
)

__all__ = ["ReadInput", "ReadTool"]

# One minified line can be megabytes; cap each shown line so a window stays bounded.
MAX_LINE_CHARS = 2_000
_COUNT_CHUNK = 1 << 20


class ReadInput(PathInput):
    """Input for Read."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(
        min_length=1,
        description="File to read: relative to the workspace root, or absolute inside it.",
    )
    offset: int | None = Field(
        default=None,
        ge=1,
        description="1-based line number to start from. Omit to start at line 1.",
    )
    limit: int | None = Field(
        default=None,
        ge=1,
        description="Maximum number of lines to return. Omit for the default window.",
    )


class ReadTool:
    name = "Read"
    description = (
        "Read a text file from the workspace. Lines are numbered like `cat -n` "
        "(number, tab, line); the numbers are not part of the file. Use offset and "
        "limit to page through long files. Binary files are refused, and files over "
        "the size limit can only be read in windows (offset/limit); use Grep to find "
        "the lines you need."
    )
    input_model = ReadInput
    is_read_only = True
    execution_domain = ExecutionDomain.LOCAL
    root_only = False

    permission_subject = path_permission_subject

    async def run(self, args: ReadInput, ctx: ToolContext) -> ToolOutput:
        with open_workspace(ctx.workspace) as root:
            target = call_target(root, ctx, args)
            shown = target.named
            st = root.stat(target.real, follow_links=False)
            if st is None or is_hidden(ctx, target.named, target.real):
                raise ToolError(f"File not found: {shown}")
            if stat.S_ISDIR(st.st_mode):
                raise ToolError(f"{shown} is a directory, not a file; use Glob to list its files.")
            # No symlinks allowed now: the file opened is the one at the path just checked.
            fd = root.open_regular(target.real, follow_links=False)
        with os.fdopen(fd, "rb") as f:
            return _show(f, shown, args, ctx)


def _show(f: BinaryIO, shown: str, args: ReadInput, ctx: ToolContext) -> ToolOutput:
    if b"\0" in f.read(BINARY_SNIFF_BYTES):
        raise ToolError(
            f"{shown} looks like a binary file (it contains NUL bytes) and cannot be "
            "shown as text. Use Grep to search it or Bash to inspect it."
        )
    f.seek(0)
    windowed = args.offset is not None or args.limit is not None
    size = os.fstat(f.fileno()).st_size
    if size > ctx.limits.read_max_bytes and not windowed:
        # Without a window the whole file would land in the context.
        raise ToolError(
            f"{shown} is {size} bytes, over the Read limit of "
            f"{ctx.limits.read_max_bytes} bytes. Use Grep to find the lines you "
            "need, then Read with offset and limit to view a window around them."
        )
    if size == 0:
        return ToolOutput(content=f"{shown} is empty.")

    offset = args.offset or 1
    limit = args.limit or ctx.limits.read_default_lines
    lines, total_seen, remaining = _read_window(f, offset, limit)
    if not lines:
        raise ToolError(f"offset={offset} is past the end of {shown}, which has {total_seen} lines.")

    body = "\n".join(f"{n:>6}\t{line}" for n, line in lines)
    if remaining:
        next_offset = lines[-1][0] + 1
        body += f"\n\n[{remaining} more lines in {shown}; call Read with offset={next_offset} to continue]"
    return ToolOutput(content=body)


def _read_window(f: BinaryIO, offset: int, limit: int) -> tuple[list[tuple[int, str]], int, int]:
    """Return ((lineno, text) for the window, lines seen, lines left after the window)."""
    window: list[tuple[int, str]] = []
    lineno = 0
    for raw in f:
        lineno += 1
        if lineno < offset:
            continue
        window.append((lineno, _decode_line(raw)))
        if len(window) == limit:
            return window, lineno, _count_remaining_lines(f)
    return window, lineno, 0


def _decode_line(raw: bytes) -> str:
    # Replace undecodable bytes instead of failing: the model can still read the rest.
    text = raw.decode("utf-8", errors="replace").removesuffix("\n").removesuffix("\r")
    if len(text) > MAX_LINE_CHARS:
        cut = len(text) - MAX_LINE_CHARS
        text = f"{text[:MAX_LINE_CHARS]} [... {cut} more chars on this line]"
    return text


def _count_remaining_lines(f) -> int:
    """Count lines left in an open binary file, in chunks (no per-line objects)."""
    count = 0
    last = b""
    while chunk := f.read(_COUNT_CHUNK):
        count += chunk.count(b"\n")
        last = chunk
    # A final line without a trailing newline still counts as a line.
    if last and not last.endswith(b"\n"):
        count += 1
    return count
