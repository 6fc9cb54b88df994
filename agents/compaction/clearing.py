"""Deterministic replacement of old tool result bodies by short notes.

Two rules, both pure and idempotent, both returning untouched messages as the same
objects (so the cached prefix and the recent tail stay byte-identical):

- Clearing (clear-then-summarize, clear-tool-uses). Protected: the UNION of the last N
  messages and the last K completed tool interactions (paired by tool_use_id). Every
  other completed tool_result body becomes a `[cleared …]` note naming its Recall id.
  Orphan results and unanswered uses are left alone.
- Eliding (mask, hybrid). Every tool_result body but the last `keep` (by position,
  counting each block of a parallel batch) becomes an `[observation elided: …]`
  placeholder naming its Recall id, unless the body is no longer than its placeholder.

`restore_placeholders` is the way back, for a step that must read what a placeholder
stands for (a summarizer, a trigger that counts the history as it was).

Tool uses (name and input), user text and assistant text are never rewritten here;
`clear_tool_inputs` is the separate step that empties the inputs of chosen uses.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from agents.messages import (
    ClearedBody,
    ElidedBody,
    Message,
    ResultMarker,
    SupersededBody,
    ToolResultBlock,
    ToolUseBlock,
    completed_tool_interactions,
    tool_uses_by_id,
)

__all__ = [
    "ClearedResult",
    "ClearingOutcome",
    "clear_old_tool_results",
    "clear_tool_inputs",
    "cleared_note",
    "elide_old_results",
    "elided_placeholder",
    "is_cleared",
    "is_elided",
    "is_placeholder",
    "marked_result",
    "replace_results",
    "restore_placeholders",
]


def cleared_note(tool_use_id: str, original_chars: int) -> str:
    """What a cleared body shows the model."""
    return ClearedBody(original_chars=original_chars).render(tool_use_id)


def elided_placeholder(tool_use_id: str, original_chars: int) -> str:
    """What an elided body shows the model."""
    return ElidedBody(original_chars=original_chars).render(tool_use_id)


def marked_result(block: ToolResultBlock, marker: ClearedBody | SupersededBody | ElidedBody) -> ToolResultBlock:
    """`block` with its body replaced by what `marker` renders, carrying the marker."""
    return ToolResultBlock(
        tool_use_id=block.tool_use_id, content=marker.render(block.tool_use_id), is_error=block.is_error, marker=marker
    )


def is_cleared(block: ToolResultBlock) -> bool:
    """Cleared, or cleared as superseded."""
    return isinstance(block.marker, ClearedBody | SupersededBody)


def is_elided(block: ToolResultBlock) -> bool:
    return isinstance(block.marker, ElidedBody)


def is_placeholder(marker: ResultMarker | None) -> bool:
    """A body that stands for another (cleared, superseded or elided), not an output of its own."""
    return isinstance(marker, ClearedBody | SupersededBody | ElidedBody)


@dataclass(frozen=True)
class ClearedResult:
    """One replaced body: the block as it was, and the tool that produced it."""

    block: ToolResultBlock
    tool_name: str

    @property
    def tool_use_id(self) -> str:
        return self.block.tool_use_id

    @property
    def original(self) -> str:
        return self.block.content


@dataclass(frozen=True)
class ClearingOutcome:
    messages: list[Message]
    cleared: list[ClearedResult]


def replace_results(messages: Sequence[Message], replacements: Mapping[str, ToolResultBlock]) -> list[Message]:
    """Tool result blocks replaced by id; every message not touched stays the same object."""
    out: list[Message] = []
    for message in messages:
        if message.role != "user" or not any(b.tool_use_id in replacements for b in message.tool_results_in):
            out.append(message)
            continue
        blocks = tuple(
            replacements[b.tool_use_id] if isinstance(b, ToolResultBlock) and b.tool_use_id in replacements else b
            for b in message.content
        )
        out.append(Message(role="user", content=blocks))
    return out


def restore_placeholders(
    messages: Sequence[Message],
    body_of: Callable[[str], str | None],
    kind: type[ClearedBody] | type[ElidedBody],
) -> list[Message]:
    """`messages` with each body a `kind` placeholder stands for put back from `body_of`
    (the Recall store, by tool_use_id) when the stored body is the one replaced (the
    same length: a body clipped before it was replaced is stored whole, and stays a
    placeholder); every other block and message unchanged."""
    restored: dict[str, ToolResultBlock] = {}
    for block in (b for m in messages if m.role == "user" for b in m.tool_results_in):
        if isinstance(block.marker, kind):
            body = body_of(block.tool_use_id)
            if body is not None and len(body) == block.marker.original_chars:
                restored[block.tool_use_id] = ToolResultBlock(
                    tool_use_id=block.tool_use_id, content=body, is_error=block.is_error
                )
    return replace_results(messages, restored) if restored else list(messages)


def clear_tool_inputs(messages: Sequence[Message], use_ids: Collection[str]) -> list[Message]:
    """Tool use inputs replaced by {} by id (name and id stay); other messages untouched."""
    out: list[Message] = []
    for message in messages:
        if message.role != "assistant" or not any(u.id in use_ids and u.input for u in message.tool_uses):
            out.append(message)
            continue
        blocks = tuple(
            ToolUseBlock(id=b.id, name=b.name, input={}) if isinstance(b, ToolUseBlock) and b.id in use_ids else b
            for b in message.content
        )
        out.append(Message(role="assistant", content=blocks))
    return out


def clear_old_tool_results(
    messages: Sequence[Message],
    *,
    keep_recent_messages: int,
    keep_recent_tool_uses: int,
    exclude_tools: Collection[str] = (),
) -> ClearingOutcome:
    interactions = completed_tool_interactions(messages)
    protected_from = len(messages) - keep_recent_messages
    protected_ids = (
        {i.use.id for i in interactions[max(len(interactions) - keep_recent_tool_uses, 0) :]}
        if keep_recent_tool_uses
        else set()
    )
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
                cleared.append(ClearedResult(block, to_clear[block.tool_use_id]))
                block = marked_result(block, ClearedBody(original_chars=len(block.content)))
            blocks.append(block)
        out.append(Message(role="user", content=tuple(blocks)))
    return ClearingOutcome(out, cleared)


def elide_old_results(messages: Sequence[Message], *, keep: int) -> ClearingOutcome:
    blocks = [b for m in messages if m.role == "user" for b in m.tool_results_in]
    older = blocks[: max(len(blocks) - keep, 0)]
    new: dict[str, ToolResultBlock] = {}
    originals: dict[str, ToolResultBlock] = {}
    for block in older:
        if is_placeholder(block.marker):
            continue
        elided = marked_result(block, ElidedBody(original_chars=len(block.content)))
        if len(elided.content) < len(block.content):
            new[block.tool_use_id] = elided
            originals[block.tool_use_id] = block
    if not new:
        return ClearingOutcome(list(messages), [])
    uses = tool_uses_by_id(messages)
    chosen = [ClearedResult(b, uses[i][1].name if i in uses else "") for i, b in originals.items()]
    return ClearingOutcome(replace_results(messages, new), chosen)
