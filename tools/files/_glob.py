"""Glob: list workspace files whose path matches a glob pattern.

Matching is one RE2 regex per pattern (`tools.files._glob_regex`) over `tools.files._tree_walk.walk_files`
rather than `Path.glob`, so it shares Grep's rules (skip .git and what the ignore files
exclude, never follow a symlink out of the workspace, leave out files a per-file deny
rule covers), takes time linear in each path whatever the pattern (`**/**/**/x` and
`*a*a*a*b` included), and behaves the same on every Python version. The walk runs in a
worker thread until `tools.search_timeout_s` (`tools.deadline`).
"""

from __future__ import annotations

import stat
from collections.abc import Callable

from pydantic import ConfigDict, Field

from tools.base import ExecutionDomain, ToolContext, ToolError, ToolOutput
from tools.deadline import Deadline, run_until_deadline
from tools.encodable import shown_name
from tools.files._glob_regex import GlobError, compile_regex, files_regex, subject
from tools.files._tree_walk import walk_files
from tools.workspace import (
    SKIP_DIRS,
    PathInput,
    call_target,
    is_hidden,
    open_workspace,
    path_permission_subject,
)

__all__ = ["INCLUDE_IGNORED", "GlobInput", "GlobTool", "glob_segments"]

INCLUDE_IGNORED = Field(
    default=False,
    description="Also include files that .gitignore, .ignore or .git/info/exclude leave out "
    "(node_modules, build output, ...). .git itself is never included.",
)


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
        description="Directory to search from, relative to the workspace root. Omit to search the whole workspace.",
    )
    include_ignored: bool = INCLUDE_IGNORED


class GlobTool:
    name = "Glob"
    description = (
        'Find files by path pattern (e.g. "**/*.py"). Returns matching file paths '
        "relative to the workspace root, sorted. Skips .git and files the ignore files "
        "(.gitignore, .ignore, .git/info/exclude) leave out unless include_ignored is true. "
        "Use Grep to search file contents."
    )
    input_model = GlobInput
    is_read_only = True
    execution_domain = ExecutionDomain.LOCAL
    root_only = False

    permission_subject = path_permission_subject

    async def run(self, args: GlobInput, ctx: ToolContext) -> ToolOutput:
        if args.pattern.startswith("/"):
            raise ToolError("pattern must be relative; put the directory to search in `path` instead.")
        segments = glob_segments(args.pattern)
        try:
            match = compile_regex(files_regex(segments))
        except GlobError as exc:
            raise ToolError(f"Glob pattern {args.pattern[:100]!r}: {exc}; use a shorter pattern") from None
        shown_top, matches, complete = await run_until_deadline(
            lambda deadline: _find(ctx, args, segments, match, deadline), ctx.limits.search_timeout_s
        )
        notes = [] if complete else [_stopped_note(ctx.limits.search_timeout_s)]
        if not matches:
            left_out = (
                ""
                if args.include_ignored
                else " (files the ignore files leave out were not looked at; include_ignored=true looks at them)"
            )
            return ToolOutput(content="\n".join([f"No files match {args.pattern!r} in {shown_top}{left_out}.", *notes]))
        cap = ctx.limits.glob_max_paths
        lines = matches[:cap]
        if len(matches) > cap:
            lines.append(f"\n[{len(matches) - cap} more paths not shown; use a narrower pattern or path]")
        return ToolOutput(content="\n".join([*lines, *notes]))


def _stopped_note(seconds: float) -> str:
    return (
        f"[stopped at the time limit of {seconds:g} s (tools.search_timeout_s): the list is incomplete; "
        "give a narrower path or pattern]"
    )


def glob_segments(pattern: str) -> list[str]:
    """The pattern's segments: "./src//*.py" means "src/*.py" (empty and "." segments carry
    no meaning), and repeated "**" means the same as one."""
    segments: list[str] = []
    for seg in pattern.split("/"):
        if seg in ("", ".") or (seg == "**" and segments[-1:] == ["**"]):
            continue
        segments.append(seg)
    return segments


def _find(
    ctx: ToolContext, args: GlobInput, segments: list[str], match: Callable[[bytes], object], deadline: Deadline
) -> tuple[str, list[str], bool]:
    """(the directory as named, the matching paths sorted, whether the walk finished)."""
    with open_workspace(ctx.workspace) as root:
        top = call_target(root, ctx, args)
        st = root.stat(top.real, follow_links=False)
        if st is None or not stat.S_ISDIR(st.st_mode) or is_hidden(ctx, top.named, top.real):
            raise ToolError(f"{top.named} is not a directory in the workspace.")
        # Without "**" a pattern cannot match deeper than its segment count: prune the walk.
        max_depth = None if "**" in segments else max(len(segments) - 1, 0)
        below = 0 if top.real == "." else len(top.real) + 1
        found: list[str] = []
        walk = walk_files(
            root,
            top.real,
            skip_dirs=SKIP_DIRS,
            max_depth=max_depth,
            follow_links=False,
            ignore_files=not args.include_ignored,
        )
        for entry in walk:
            if deadline.passed():
                return top.named, sorted(found), False
            if match(subject("/" + entry.path[below:])) is not None and not is_hidden(ctx, entry.path, entry.real):
                found.append(shown_name(entry.path))
    return top.named, sorted(found), True
