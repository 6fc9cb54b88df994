"""One tool_use in, one tool_result out: lookup, validation, execution.

Everything the model can fix (unknown tool, bad input, a failing call) comes back as
an `is_error` result so the loop continues; only bugs raise.
"""

from __future__ import annotations

from agents.messages import ToolResultBlock, ToolUseBlock
from agents.ports import ToolExecutor
from tools.base import ToolContext, ToolError
from tools.registry import ToolRegistry, validate_input

__all__ = ["run_tool_call"]


async def run_tool_call(
    use: ToolUseBlock, *, registry: ToolRegistry, executor: ToolExecutor, ctx: ToolContext
) -> ToolResultBlock:
    try:
        tool = registry.get(use.name)
        args = validate_input(tool, use.input)
    except ToolError as exc:
        return ToolResultBlock(tool_use_id=use.id, content=str(exc), is_error=True)
    output = await executor.execute(tool, args, ctx)
    return ToolResultBlock(tool_use_id=use.id, content=output.content, is_error=output.is_error)
