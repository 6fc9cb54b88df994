"""One tool_use in, one tool_result out: lookup, validation, mode check, execution.

Everything the model can fix (arguments that are not a JSON object, unknown tool, bad input, a tool hidden in this mode,
a denied call, a failing call) comes back as an `is_error` result so the loop
continues; only bugs raise. Permission is decided between `prepare` and `execute`
so the loop can park a call that needs the user's answer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from agents.messages import Message, ToolResultBlock, ToolUseBlock
from agents.modes import Mode, hidden_tool_message, is_visible
from agents.ports import ToolExecutor
from tools.base import Tool, ToolContext, ToolError
from tools.registry import ToolRegistry, validate_input

__all__ = [
    "PreparedCall",
    "error_result",
    "execute_prepared",
    "interrupted_result",
    "interrupted_text",
    "lost_call_result",
    "parked_use",
    "prepare_parked",
    "prepare_tool_call",
    "unparsed_input_message",
]


@dataclass(frozen=True)
class PreparedCall:
    use: ToolUseBlock
    tool: Tool
    args: BaseModel


def error_result(use: ToolUseBlock, message: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=use.id, content=message, is_error=True)


def unparsed_input_message(use: ToolUseBlock) -> str:
    """Why arguments that are not a JSON object cannot run, said so the model can fix them."""
    raw = use.raw_input or ""
    try:
        value = json.loads(raw)
    except ValueError as exc:
        why = f"they are not valid JSON ({exc})"
    else:
        why = f"they are JSON {type(value).__name__}, not an object"
    shown = raw if len(raw) <= 300 else raw[:300] + f"… ({len(raw)} chars)"
    return f"The arguments of this {use.name} call could not be used: {why}. They were: {shown}\nSend the call again with its arguments as one JSON object."


def prepare_tool_call(use: ToolUseBlock, *, registry: ToolRegistry, mode: Mode) -> PreparedCall | ToolResultBlock:
    """Look the call up in the FULL registry, validate it, and refuse what the mode hides."""
    if use.raw_input is not None:
        return error_result(use, unparsed_input_message(use))
    try:
        tool = registry.get(use.name)
        args = validate_input(tool, use.input)
    except ToolError as exc:
        return error_result(use, str(exc))
    if not is_visible(tool, mode):
        return error_result(use, hidden_tool_message(tool.name, mode))
    return PreparedCall(use, tool, args)


def parked_use(conversation: Sequence[Message], use_id: str) -> ToolUseBlock | None:
    """The tool_use a parked call stands for, in the reply that made it (the last message)."""
    last = conversation[-1] if conversation else None
    if last is None or last.role != "assistant":
        return None
    return next((u for u in last.tool_uses if u.id == use_id), None)


def lost_call_result(use_id: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=use_id, content="(the parked call was lost)", is_error=True)


def interrupted_text(*, by: str, started: bool) -> str:
    """What the model is told of a call cut short (a lost session or worker, the user)."""
    if started:
        return f"This call was interrupted when {by}; it may or may not have taken effect. Check before repeating it."
    return f"This call did not run: {by} before it started."


def interrupted_result(use_id: str, *, by: str, started: bool) -> ToolResultBlock:
    """The result of a call a lost session or the user cut short. One that had started
    may or may not have taken effect, and is never run again: the model is told to check."""
    return ToolResultBlock(tool_use_id=use_id, content=interrupted_text(by=by, started=started), is_error=True)


def prepare_parked(
    conversation: Sequence[Message], use_id: str, *, registry: ToolRegistry, mode: Mode
) -> PreparedCall | ToolResultBlock:
    """A parked call prepared again from the reply that made it."""
    use = parked_use(conversation, use_id)
    if use is None:
        return lost_call_result(use_id)
    return prepare_tool_call(use, registry=registry, mode=mode)


async def execute_prepared(call: PreparedCall, *, executor: ToolExecutor, ctx: ToolContext) -> ToolResultBlock:
    output = await executor.execute(call.tool, call.args, ctx)
    return ToolResultBlock(tool_use_id=call.use.id, content=output.content, is_error=output.is_error)
