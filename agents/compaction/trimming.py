"""Dropping whole messages: a span of the conversation replaced by one trim note.

Roles keep alternating: the note is a user message, except between two user
messages, where it speaks as the assistant; between a user message and an
assistant message a bridge comes first. Untouched messages stay the same objects.
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.compaction.notes import bridge, dropped_count, trim_note
from agents.messages import Message, TextBlock

__all__ = ["drop_span", "joined"]


def joined(head: Sequence[Message], note: TextBlock, tail: Sequence[Message]) -> list[Message]:
    """head + one note message + tail, roles alternating."""
    before = head[-1].role if head else None
    after = tail[0].role if tail else None
    if before == "user":
        middle = (
            [bridge(), Message(role="user", content=(note,))] if after == "assistant" else [Message.assistant(note)]
        )
    else:
        middle = [Message(role="user", content=(note,)), *([bridge()] if after == "user" else [])]
    return [*head, *middle, *tail]


def drop_span(messages: Sequence[Message], start: int, end: int, strategy: str) -> list[Message]:
    """messages[start:end] replaced by one trim note counting every real message gone."""
    note = trim_note(dropped_count(messages[start:end]), strategy)
    return joined(messages[:start], note, messages[end:])
