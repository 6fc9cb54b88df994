"""The synthetic messages compaction writes, and how they are recognised — by their
typed markers (`agents.messages`), never by their text.

- The summary boundary: one user message (a marker line + the summary) standing for
  the summarized messages, followed by an acknowledgement when the next message
  speaks as the user.
- The trim note: the one message standing where whole messages were dropped. A later
  trim that drops an earlier note adds its count, so the note always says how many
  real messages are gone in total.
- The digest: one user message (a marker line + one line per folded tool call) standing
  for turns folded without a summarizer (`current`). It counts, like a trim note, the
  real messages it stands for.
- The bridge: a short assistant turn that only keeps roles alternating.
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.messages import (
    Bridge,
    DroppedSpan,
    FoldedTurns,
    Message,
    SummaryBoundary,
    TextBlock,
    TextMarker,
)

__all__ = [
    "BOUNDARY_MARKER",
    "BRIDGE_TEXT",
    "TRIM_MARKER",
    "bridge",
    "digest_message",
    "dropped_count",
    "is_digest",
    "is_summary_boundary",
    "is_synthetic",
    "is_trim_note",
    "marked_text",
    "summary_acknowledgement",
    "summary_boundary",
    "trim_note",
]

# How the markers begin when rendered, for readers and tests; recognition uses the marker.
BOUNDARY_MARKER = "[Conversation compacted]"
TRIM_MARKER = "[Context trimmed]"
BRIDGE_TEXT = Bridge().render()


def marked_text(marker: TextMarker) -> TextBlock:
    """A text block showing what `marker` renders, carrying the marker."""
    return TextBlock(text=marker.render(), marker=marker)


def summary_boundary(summary: str, summarized_count: int) -> Message:
    marker = marked_text(SummaryBoundary(summarized=summarized_count))
    return Message(role="user", content=(marker, TextBlock(text=summary)))


def summary_acknowledgement() -> Message:
    return Message.assistant(marked_text(Bridge(after_summary=True)))


def digest_message(folded: int, lines: str) -> Message:
    """The digest of `folded` real messages: the marker line, then the digest lines."""
    return Message(role="user", content=(marked_text(FoldedTurns(folded=folded)), TextBlock(text=lines)))


def bridge() -> Message:
    return Message.assistant(marked_text(Bridge()))


def trim_note(dropped: int, strategy: str) -> TextBlock:
    return marked_text(DroppedSpan(dropped=dropped, strategy=strategy))


def _markers(message: Message) -> list[TextMarker | None]:
    return [b.marker if isinstance(b, TextBlock) else None for b in message.content]


def is_summary_boundary(message: Message) -> bool:
    return message.role == "user" and any(isinstance(m, SummaryBoundary) for m in _markers(message))


def is_trim_note(message: Message) -> bool:
    return any(isinstance(m, DroppedSpan) for m in _markers(message))


def is_digest(message: Message) -> bool:
    return message.role == "user" and any(isinstance(m, FoldedTurns) for m in _markers(message))


def is_synthetic(message: Message) -> bool:
    """A trim note, a digest, a bridge or a summary acknowledgement: stands for no real turn."""
    markers = _markers(message)
    if any(isinstance(m, DroppedSpan | FoldedTurns) for m in markers):
        return True
    return message.role == "assistant" and bool(markers) and all(isinstance(m, Bridge) for m in markers)


def dropped_count(middle: Sequence[Message]) -> int:
    """The real messages `middle` stands for: earlier trim notes count what they say."""
    count = 0
    for message in middle:
        spans = [m for m in _markers(message) if isinstance(m, DroppedSpan | FoldedTurns)]
        if spans:
            count += sum(span.dropped if isinstance(span, DroppedSpan) else span.folded for span in spans)
        elif not is_synthetic(message):
            count += 1
    return count
