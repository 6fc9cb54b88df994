"""Run a tool call in this process, turning model-fixable failures into results."""

from __future__ import annotations

from pydantic import BaseModel

from tools.base import Tool, ToolContext, ToolError, ToolOutput

__all__ = ["LocalToolExecutor"]


class LocalToolExecutor:
    """Runs tools in the calling process (tests, `--local`, inside a worker actor).

    A ToolError is something the model can act on, so it becomes an `is_error`
    result. Any other exception is a bug in the harness and propagates: hiding it
    as a tool result would let the model paper over it.
    """

    async def execute(self, tool: Tool, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        try:
            return await tool.run(args, ctx)
        except ToolError as err:
            return ToolOutput(content=str(err), is_error=True)
