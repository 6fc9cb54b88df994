"""Glob: list workspace files whose path matches a glob pattern.

Matching is our own segment matcher over `tools.tree_walk.walk_files` rather than
`Path.glob`, so it shares Grep's rules (skip .git, never follow a symlink out
of the workspace, leave out files a per-file deny rule covers) and behaves the
same on every Python version.
"""

from __future__ import annotations

import asyncio
import stat
from fnmatch import fnmatchcase

from pydantic import BaseModel, ConfigDict, Field

from tools.base import ExecutionDomain, ToolContext, ToolError, ToolOutput
from tools.tree_walk import walk_files
from tools.workspace import (
    SKIP_DIRS,
    PathInput,
    call_target,
    is_hidden,
    open_workspace,
    path_permission_subject,
)

__all__ = ["GlobInput", "GlobTool", "glob_match"]


class GlobInput(PathInput):
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
        segments = _segments(args.pattern)
        shown_top, matches = await asyncio.to_thread(_find, ctx, args, segments)

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


def _find(ctx: ToolContext, args: GlobInput, segments: list[str]) -> tuple[str, list[str]]:
    with open_workspace(ctx.workspace) as root:
        top = call_target(root, ctx, args)
        st = root.stat(top.real, follow_links=False)
        if st is None or not stat.S_ISDIR(st.st_mode) or is_hidden(ctx, top.named, top.real):
            raise ToolError(f"{top.named} is not a directory in the workspace.")
        # Without "**" a pattern cannot match deeper than its segment count: prune the walk.
        max_depth = None if "**" in segments else max(len(segments) - 1, 0)
        below = 0 if top.real == "." else top.real.count("/") + 1
        found = [
            entry.path
            for entry in walk_files(root, top.real, skip_dirs=SKIP_DIRS, max_depth=max_depth, follow_links=False)
            if glob_match(entry.path.split("/")[below:], segments) and not is_hidden(ctx, entry.path, entry.real)
        ]
    return top.named, sorted(found)


def glob_match(parts: tuple[str, ...] | list[str], segments: list[str]) -> bool:
    """Match path parts against glob segments; "**" matches zero or more parts."""
    if not segments:
        return not parts
    head, rest = segments[0], segments[1:]
    if head == "**":
        return any(glob_match(parts[i:], rest) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], head) and glob_match(parts[1:], rest)
