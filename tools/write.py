"""Write: create or overwrite a whole file in the workspace."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tools.base import ExecutionDomain, ToolContext, ToolError, ToolOutput
from tools.workspace import path_permission_subject, relative_display, resolve_in_workspace

__all__ = ["WriteInput", "WriteTool", "count_lines"]


class WriteInput(BaseModel):
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

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        assert isinstance(args, WriteInput)
        path = resolve_in_workspace(ctx.workspace, args.path)
        shown = relative_display(ctx.workspace, path)
        if path.is_dir():
            raise ToolError(f"{shown} is a directory; give a file path to write.")
        existed = path.exists()
        data = args.content.encode("utf-8")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Bytes, not text mode: the content lands exactly as given (no newline translation).
            path.write_bytes(data)
        except OSError as err:
            # e.g. a parent is a file, or permission denied: the model can pick another path.
            raise ToolError(f"Could not write {shown}: {err.strerror or err}") from err
        verb = "Overwrote" if existed else "Created"
        return ToolOutput(
            content=f"{verb} {shown} ({len(data)} bytes, {count_lines(args.content)} lines)."
        )


def count_lines(text: str) -> int:
    """Lines as an editor counts them: a final line without a newline still counts."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)
