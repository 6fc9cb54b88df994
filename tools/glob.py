"""Glob: list workspace files whose path matches a glob pattern.

Matching is our own segment matcher over `walk_files` rather than
`Path.glob`, so it shares Grep's rules (skip .git, never follow a symlink out
of the workspace) and behaves the same on every Python version.
"""

from __future__ import annotations

import asyncio
from fnmatch import fnmatchcase
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from tools.base import ExecutionDomain, ToolContext, ToolError, ToolOutput
from tools.workspace import (
    path_permission_subject,
    relative_display,
    resolve_in_workspace,
    walk_files,
)

__all__ = ["GlobInput", "GlobTool", "glob_match"]


class GlobInput(BaseModel):
    """Input for Glob."""

    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(
        min_length=1,
        description='Glob relative to the search directory: "*" and "?" match within one '
        'path segment, "**" matches any number of directories, e.g. "**/*.py" or "src/*.ts".',
    )
    path: str | None = Field(
        default=None,
        description="Directory to search from, relative to the workspace root. "
        "Omit to search the whole workspace.",
    )


class GlobTool:
    name = "Glob"
    description = (
        'Find files by path pattern (e.g. "**/*.py"). Returns matching file paths '
        "relative to the workspace root, sorted, skipping .git. Use Grep to search "
        "file contents."
    )
    input_model = GlobInput
    is_read_only = True
    execution_domain = ExecutionDomain.LOCAL
    root_only = False

    permission_subject = path_permission_subject

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        assert isinstance(args, GlobInput)
        if args.pattern.startswith("/"):
            raise ToolError(
                "pattern must be relative; put the directory to search in `path` instead."
            )
        top = resolve_in_workspace(ctx.workspace, args.path or ".")
        shown_top = relative_display(ctx.workspace, top)
        if not top.is_dir():
            raise ToolError(f"{shown_top} is not a directory in the workspace.")
        segments = _segments(args.pattern)
        root = ctx.workspace.resolve()
        matches = await asyncio.to_thread(_find, root, top, segments)

        if not matches:
            return ToolOutput(content=f"No files match {args.pattern!r} in {shown_top}.")
        cap = ctx.limits.glob_max_paths
        lines = matches[:cap]
        if len(matches) > cap:
            lines.append(
                f"\n[{len(matches) - cap} more paths not shown; use a narrower pattern or path]"
            )
        return ToolOutput(content="\n".join(lines))


def _segments(pattern: str) -> list[str]:
    # "./src//*.py" means "src/*.py"; empty and "." segments carry no meaning.
    # Repeated "**" means the same as one, and would only slow the matcher down.
    segments: list[str] = []
    for seg in pattern.split("/"):
        if seg in ("", ".") or (seg == "**" and segments[-1:] == ["**"]):
            continue
        segments.append(seg)
    return segments


def _find(root: Path, top: Path, segments: list[str]) -> list[str]:
    # Without "**" a pattern cannot match deeper than its segment count: prune the walk.
    max_depth = None if "**" in segments else max(len(segments) - 1, 0)
    found = []
    for path in walk_files(root, top, max_depth=max_depth):
        if glob_match(path.relative_to(top).parts, segments):
            found.append(relative_display(root, path))
    return sorted(found)


def glob_match(parts: tuple[str, ...] | list[str], segments: list[str]) -> bool:
    """Match path parts against glob segments; "**" matches zero or more parts."""
    if not segments:
        return not parts
    head, rest = segments[0], segments[1:]
    if head == "**":
        return any(glob_match(parts[i:], rest) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], head) and glob_match(parts[1:], rest)
