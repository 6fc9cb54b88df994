"""The synthetic messages compaction writes, and how they are recognised.

- The summary boundary: one user message (a marker line + the summary) standing for
  the summarized messages, followed by an acknowledgement when the next message
  speaks as the user.
- The trim note: the one message standing where whole messages were dropped. A later
  trim that drops an earlier note adds its count, so the note always says how many
  real messages are gone in total.
- The bridge: a short assistant turn that only keeps roles alternating.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agents.messages import Message, TextBlock

__all__ = [
    "BOUNDARY_MARKER",
    "BRIDGE_TEXT",
    "TRIM_MARKER",
    "bridge",
    "dropped_count",
    "is_summary_boundary",
    "is_synthetic",
    "is_trim_note",
    "summary_acknowledgement",
    "summary_boundary",
    "trim_note",
]

BOUNDARY_MARKER = "[Conversation compacted]"
SUMMARY_ACK_TEXT = "Understood. I will continue from this summary and the messages that follow."
TRIM_MARKER = "[Context trimmed]"
BRIDGE_TEXT = "Understood. I will continue from the messages that follow."
_TRIM_COUNT = re.compile(r"^\[Context trimmed\] (\d+) ")


def summary_boundary(summary: str, summarized_count: int) -> Message:
    marker = (
        f"{BOUNDARY_MARKER} {summarized_count} earlier messages were replaced by the summary "
        "below. Tool outputs they held can still be read with Recall."
    )
    return Message(role="user", content=(TextBlock(text=marker), TextBlock(text=summary)))


def summary_acknowledgement() -> Message:
    return Message.assistant(TextBlock(text=SUMMARY_ACK_TEXT))


def is_summary_boundary(message: Message) -> bool:
    return message.role == "user" and message.text.startswith(BOUNDARY_MARKER)


def trim_note(dropped: int, strategy: str) -> str:
    return (
        f"{TRIM_MARKER} {dropped} earlier messages were dropped here by the '{strategy}' "
        "compaction strategy. Tool outputs they held are kept in the record; Recall(id=...) "
        "returns one when you know its id."
    )


def bridge() -> Message:
    return Message.assistant(TextBlock(text=BRIDGE_TEXT))


def is_trim_note(message: Message) -> bool:
    return not message.tool_uses and not message.tool_results_in and message.text.startswith(TRIM_MARKER)


def is_synthetic(message: Message) -> bool:
    """A trim note, a bridge or a summary acknowledgement: stands for no real turn."""
    if is_trim_note(message):
        return True
    return (
        message.role == "assistant"
        and not message.tool_uses
        and message.text in (BRIDGE_TEXT, SUMMARY_ACK_TEXT)
    )


def dropped_count(middle: Sequence[Message]) -> int:
    """The real messages `middle` stands for: earlier trim notes count what they say."""
    count = 0
    for message in middle:
        if is_trim_note(message):
            match = _TRIM_COUNT.match(message.text)
            count += int(match.group(1)) if match else 0
        elif not is_synthetic(message):
            count += 1
    return count
