"""Recall: read back the full body of a tool result that was clipped or cleared.

Compaction is lossy for the model's view, never for the record: every marker names
an id, and Recall pages through the stored original within the per-result budget.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tools.base import ExecutionDomain, ToolContext, ToolError, ToolOutput

__all__ = ["RecallInput", "RecallTool"]


class RecallInput(BaseModel):
    """Input for Recall."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, description='The id named in a "[truncated …]" or "[cleared …]" marker.')
    offset: int = Field(0, ge=0, description="Character offset to start from (the marker gives it).")
    limit: int | None = Field(None, ge=1, description="Characters to return; capped by the harness.")


class RecallTool:
    name = "Recall"
    description = (
        "Return the original text of a tool result that was truncated or cleared from the "
        "conversation. Pass the id from its marker, and the offset the marker gives to read "
        "what was cut. Long bodies come back in pages; the note at the end says how to continue."
    )
    input_model = RecallInput
    is_read_only = True
    execution_domain = ExecutionDomain.LOCAL
    root_only = False

    async def run(self, args: RecallInput, ctx: ToolContext) -> ToolOutput:
        if ctx.artifacts is None:
            raise ToolError("Recall is unavailable: this session keeps no artifact store.")
        body = ctx.artifacts.get(args.id)
        if body is None:
            raise ToolError(
                f"Nothing is stored under id {args.id!r}. Use the exact id from a "
                '"[truncated …]" or "[cleared …]" marker.'
            )
        if args.offset >= len(body) and body:
            raise ToolError(f"offset {args.offset} is past the end ({len(body)} chars).")
        size = min(args.limit or ctx.limits.recall_max_chars, ctx.limits.recall_max_chars)
        end = min(args.offset + size, len(body))
        page = body[args.offset : end]
        if end < len(body):
            page += f'\n[{len(body) - end} more chars; Recall(id="{args.id}", offset={end}) continues]'
        return ToolOutput(content=page)
