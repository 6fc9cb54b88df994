"""Deterministic clearing of old tool results.

Protected: the UNION of the last N messages and the last K completed tool
interactions (paired by tool_use_id). Every other completed tool_result body is
replaced by a short `[cleared …]` note naming its Recall id. Tool uses (name and
input), user text and assistant text are never rewritten; orphan results and
unanswered uses are left alone. Pure and idempotent: messages that do not change
keep their identity, so the recent tail stays byte-identical.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from agents.messages import Message, ToolResultBlock, completed_tool_interactions

__all__ = ["ClearedResult", "ClearingOutcome", "clear_old_tool_results", "cleared_note", "is_cleared"]

_CLEARED_PREFIX = "[cleared "


def cleared_note(tool_use_id: str, original_chars: int) -> str:
    return f'[cleared {original_chars} chars of tool output; Recall(id="{tool_use_id}") returns it]'


def is_cleared(block: ToolResultBlock) -> bool:
    return block.content.startswith(_CLEARED_PREFIX)


@dataclass(frozen=True)
class ClearedResult:
    tool_use_id: str
    tool_name: str
    original: str


@dataclass(frozen=True)
class ClearingOutcome:
    messages: list[Message]
    cleared: list[ClearedResult]


def clear_old_tool_results(
    messages: Sequence[Message],
    *,
    keep_recent_messages: int,
    keep_recent_tool_uses: int,
    exclude_tools: Collection[str] = (),
) -> ClearingOutcome:
    interactions = completed_tool_interactions(messages)
    protected_from = len(messages) - keep_recent_messages
    protected_ids = {i.use.id for i in interactions[max(len(interactions) - keep_recent_tool_uses, 0) :]} if keep_recent_tool_uses else set()
    to_clear = {
        i.use.id: i.use.name
        for i in interactions
        if i.result_index < protected_from
        and i.use.id not in protected_ids
        and i.use.name not in exclude_tools
        and not is_cleared(i.result)
    }
    if not to_clear:
        return ClearingOutcome(list(messages), [])
    cleared: list[ClearedResult] = []
    out: list[Message] = []
    for message in messages:
        if message.role != "user" or not any(b.tool_use_id in to_clear for b in message.tool_results_in):
            out.append(message)
            continue
        blocks = []
        for block in message.content:
            if isinstance(block, ToolResultBlock) and block.tool_use_id in to_clear:
                cleared.append(ClearedResult(block.tool_use_id, to_clear[block.tool_use_id], block.content))
                block = ToolResultBlock(
                    tool_use_id=block.tool_use_id,
                    content=cleared_note(block.tool_use_id, len(block.content)),
                    is_error=block.is_error,
                )
            blocks.append(block)
        out.append(Message(role="user", content=tuple(blocks)))
    return ClearingOutcome(out, cleared)
