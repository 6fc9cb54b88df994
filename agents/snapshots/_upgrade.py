"""Reading sessions saved before compaction markers were typed (snapshot schema 1).

Schema 1 wrote its compaction markers as plain text. On load they become the typed
markers of `agents.messages` — but only text in exactly the form schema-1 code wrote
it: the text must equal what the marker renders for the numbers it states, and a
result-body marker must name its own block's tool_use_id. Anything else stays what
it was, an ordinary text or tool output. This is the one place text is read as a
marker, and it runs only on schema-1 data, once: the session is saved again under
the current schema, whose markers are typed from the start.

  summary boundary   a user message of two text blocks whose first is the boundary line
  acknowledgement    an assistant message that is exactly the summary acknowledgement
  bridge             an assistant message that is exactly the bridge text
  trim note          a message that is exactly one trim note
  cleared / elided   a tool result whose whole body is the cleared note / placeholder
  clipped            a tool result holding the truncation line at the offset it names
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agents.messages import (
    Bridge,
    ClearedBody,
    ClippedBody,
    DroppedSpan,
    ElidedBody,
    Message,
    ResultMarker,
    SummaryBoundary,
    TextBlock,
    TextMarker,
    ToolResultBlock,
)

__all__ = ["upgrade_messages", "upgrade_result"]

_BOUNDARY = re.compile(r"\[Conversation compacted\] (\d+) ")
_TRIM = re.compile(r"\[Context trimmed\] (\d+) earlier messages were dropped here by the '(.*)' compaction strategy\. ")
_CLEARED = re.compile(r"\[cleared (\d+) chars of tool output; ")
_ELIDED = re.compile(r"\[observation elided: (\d+) chars; ")
_BRIDGES = (Bridge(), Bridge(after_summary=True))


def _exactly(text: str, marker: TextMarker) -> TextMarker | None:
    return marker if marker.render() == text else None


def _text_marker(message: Message) -> tuple[int, TextMarker] | None:
    """(index of the marked block, its marker) for a message schema 1 wrote as a marker."""
    blocks = [b for b in message.content if isinstance(b, TextBlock) and b.marker is None]
    if not blocks or len(blocks) != len(message.content):
        return None
    first = blocks[0].text
    if message.role == "user" and len(blocks) == 2 and (m := _BOUNDARY.match(first)):
        found = _exactly(first, SummaryBoundary(summarized=int(m.group(1))))
        return (0, found) if found else None
    if len(blocks) != 1:
        return None
    if m := _TRIM.match(first):
        found = _exactly(first, DroppedSpan(dropped=int(m.group(1)), strategy=m.group(2)))
        return (0, found) if found else None
    if message.role == "assistant":
        found = next((b for b in _BRIDGES if b.render() == first), None)
        return (0, found) if found else None
    return None


def _clipped(block: ToolResultBlock) -> ClippedBody | None:
    line = re.compile(
        r"\n\[truncated (\d+) chars; Recall\(id=\""
        + re.escape(block.tool_use_id)
        + r"\", offset=(\d+)\) returns them\]\n"
    )
    for m in line.finditer(block.content):
        marker = ClippedBody(removed_chars=int(m.group(1)), offset=int(m.group(2)))
        # The line sits right after the head it names, and a tail follows it.
        if marker.offset == m.start() and m.end() < len(block.content):
            return marker
    return None


def _result_marker(block: ToolResultBlock) -> ResultMarker | None:
    for pattern, kind in ((_CLEARED, ClearedBody), (_ELIDED, ElidedBody)):
        if m := pattern.match(block.content):
            marker = kind(original_chars=int(m.group(1)))
            return marker if marker.render(block.tool_use_id) == block.content else None
    return _clipped(block)


def upgrade_result(block: ToolResultBlock) -> ToolResultBlock:
    if block.marker is not None:
        return block
    marker = _result_marker(block)
    return block if marker is None else block.model_copy(update={"marker": marker})


def _upgrade_message(message: Message) -> Message:
    found = _text_marker(message)
    if found is not None:
        index, marker = found
        blocks = list(message.content)
        blocks[index] = blocks[index].model_copy(update={"marker": marker})
        return Message(role=message.role, content=tuple(blocks))
    if message.role != "user" or not message.tool_results_in:
        return message
    upgraded = tuple(upgrade_result(b) if isinstance(b, ToolResultBlock) else b for b in message.content)
    if all(a is b for a, b in zip(upgraded, message.content, strict=True)):
        return message
    return Message(role=message.role, content=upgraded)


def upgrade_messages(messages: Iterable[Message]) -> list[Message]:
    """Schema-1 messages with their text markers typed; unchanged messages stay the same objects."""
    return [_upgrade_message(m) for m in messages]
