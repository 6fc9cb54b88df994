"""Edit: exact string replacement in an existing file.

Exact (not fuzzy, not regex) on purpose: the model must quote the file as it is,
which catches edits based on a stale or imagined view of the file. The file is
replaced atomically, like Write, keeping its permission bits.
"""

from __future__ import annotations

import os
import stat

from pydantic import ConfigDict, Field

from tools.base import ExecutionDomain, ToolContext, ToolError, ToolOutput
from tools.files._beneath import Beneath
from tools.workspace import (
    BINARY_SNIFF_BYTES,
    PathInput,
    Target,
    call_target,
    open_workspace,
    path_permission_subject,
    refuse_protected_write,
)

__all__ = ["EditInput", "EditTool"]


class EditInput(PathInput):
    """Input for Edit."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(
        min_length=1,
        description="File to edit: relative to the workspace root, or absolute inside it.",
    )
    old_string: str = Field(
        min_length=1,
        description="Exact text to replace, including whitespace and indentation, as it "
        "appears in the file (without Read's line-number prefixes). Must occur exactly once "
        "unless replace_all is true; include surrounding lines to make it unique.",
    )
    new_string: str = Field(
        description="Text to put in place of old_string. Must differ from old_string.",
    )
    replace_all: bool = Field(
        default=False,
        description="Replace every occurrence of old_string instead of requiring exactly one.",
    )


class EditTool:
    name = "Edit"
    description = (
        "Replace an exact string in an existing file. old_string must match the file "
        "exactly (Read the file first) and be unique unless replace_all is true. "
        "Use Write to create new files."
    )
    input_model = EditInput
    is_read_only = False
    execution_domain = ExecutionDomain.LOCAL
    root_only = False

    permission_subject = path_permission_subject

    async def run(self, args: EditInput, ctx: ToolContext) -> ToolOutput:
        if args.old_string == args.new_string:
            raise ToolError("old_string and new_string are identical; there is nothing to change.")
        with open_workspace(ctx.workspace) as root:
            target = call_target(root, ctx, args)
            refuse_protected_write(ctx, target)
            text = _load_text(root, target, ctx.limits.read_max_bytes)
            updated, count = _replace(text, args, target.named)
            # The real path again, symlinks forbidden: the file replaced is the one read.
            root.write_atomic(target.real, updated.encode("utf-8"), follow_links=False)
        noun = "replacement" if count == 1 else "replacements"
        return ToolOutput(content=f"Edited {target.named}: {count} {noun}.")

    def effect_on_disk(self, args: EditInput, ctx: ToolContext) -> bool | None:
        """For a call cut short by a lost session: is its change in the file? The file is
        replaced atomically, so it holds the old text or the new. False: not made (running
        it now changes the file once); True: made; None: the file cannot tell."""
        if args.old_string in args.new_string or args.new_string in args.old_string:
            return None  # either text would be seen in both outcomes
        try:
            with open_workspace(ctx.workspace) as root:
                text = _load_text(root, call_target(root, ctx, args), ctx.limits.read_max_bytes)
        except (ToolError, OSError):
            return None
        old, new = text.count(args.old_string), args.new_string in text
        if new and not old:
            return True
        if old and not new and (old == 1 or args.replace_all):
            return False
        return None


def _replace(text: str, args: EditInput, shown: str) -> tuple[str, int]:
    count = text.count(args.old_string)
    if count == 0:
        raise ToolError(
            f"old_string was not found in {shown}. It must match the file exactly, "
            "including whitespace and indentation; Read the file first and copy the text."
        )
    if count > 1 and not args.replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {shown}. Include more surrounding "
            "context to make it unique, or set replace_all=true to replace every occurrence."
        )
    return text.replace(args.old_string, args.new_string), count


def _load_text(root: Beneath, target: Target, max_bytes: int) -> str:
    shown = target.named
    st = root.stat(target.real, follow_links=False)
    if st is None:
        raise ToolError(f"File not found: {shown}. Use Write to create a new file.")
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{shown} is a directory, not a file.")
    with os.fdopen(root.open_regular(target.real, follow_links=False), "rb") as f:
        if os.fstat(f.fileno()).st_size > max_bytes:
            raise ToolError(f"{shown} is larger than {max_bytes} bytes; edit it with Bash instead.")
        # Bytes, not text mode, so CRLF line endings survive the round trip.
        data = f.read()
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        raise ToolError(f"{shown} looks like a binary file; Edit only changes text files.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ToolError(f"{shown} is not valid UTF-8 ({err.reason}); Edit cannot safely rewrite it.") from err
