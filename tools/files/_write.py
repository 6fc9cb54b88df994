"""Write: create or overwrite a whole file in the workspace.

The file is replaced atomically (a temporary file renamed over it), keeping its
permission bits; a path through an in-workspace symlink writes the link's target.
"""

from __future__ import annotations

import stat
from pathlib import PurePosixPath

from pydantic import ConfigDict, Field

from tools.base import ExecutionDomain, ToolContext, ToolError, ToolOutput
from tools.workspace import (
    PathInput,
    call_target,
    open_workspace,
    path_permission_subject,
    refuse_protected_write,
)

__all__ = ["WriteInput", "WriteTool", "count_lines"]


class WriteInput(PathInput):
    """Input for Write."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(
        min_length=1,
        description="File to write: relative to the workspace root, or absolute inside it. "
        "Missing parent directories are created.",
    )
    content: str = Field(
        description="The complete new contents of the file (replaces anything already there).",
    )


class WriteTool:
    name = "Write"
    description = (
        "Create a file, or overwrite an existing one, with the given content. "
        "Parent directories are created as needed. To change part of an existing "
        "file, prefer Edit."
    )
    input_model = WriteInput
    is_read_only = False
    execution_domain = ExecutionDomain.LOCAL
    root_only = False

    permission_subject = path_permission_subject

    async def run(self, args: WriteInput, ctx: ToolContext) -> ToolOutput:
        data = args.content.encode("utf-8")
        with open_workspace(ctx.workspace) as root:
            target = call_target(root, ctx, args)
            shown = target.named
            refuse_protected_write(ctx, target)
            st = root.stat(target.real, follow_links=False)
            if st is not None and stat.S_ISDIR(st.st_mode):
                raise ToolError(f"{shown} is a directory; give a file path to write.")
            # Symlinks forbidden from here on: the directories made and the file replaced
            # are the ones at the real path that was just checked.
            root.make_dirs(str(PurePosixPath(target.real).parent), follow_links=False)
            existed = root.write_atomic(target.real, data, follow_links=False)
        verb = "Overwrote" if existed else "Created"
        return ToolOutput(content=f"{verb} {shown} ({len(data)} bytes, {count_lines(args.content)} lines).")


def count_lines(text: str) -> int:
    """Lines as an editor counts them: a final line without a newline still counts."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)
