"""What a strategy counts: messages, or events as OpenHands counts them.

OpenHands keeps its history as events, each one action or one observation, and its
condensers count those. In Workingset's typed conversation an event is:

- in an assistant message, each tool_use block (an action; the message's text and
  thinking are that action's thought); a message without tool uses is one event
  (an agent message);
- in a user message, each tool_result block (an observation), plus one event for its
  other content (text, images) when it has any (a user message);
- of what compaction writes, a summary boundary is one event (OpenHands' condensation
  observation); a trim note, a bridge and a summary acknowledgement are none — they
  only mark a drop or keep roles alternating, and OpenHands has nothing in their place.

The system prompt is request overhead here, not a message, so it is never an event:
where OpenHands' history begins with a system-message event, that event is always kept
by Workingset and is not counted.

Within a user message the tool results come first (the Messages API requires it), so
its other content is its last event. A parallel batch is its uses, then its results, as
the OpenHands V1 SDK records one; V0 runs the calls one at a time and interleaves them
(use, result, use, result). A batch is 2m events either way; the order matters only to
which of its results a masking window that ends inside the batch keeps.

Splits stay at clean boundaries (`agents.compaction.boundaries`): no tool_use is ever
separated from its tool_result. Counted in events, a cut that would fall inside an
interaction (between an action and its observation, or through a parallel batch) drops
that interaction whole, on either side of the cut. OpenHands does the same when it turns
its view into messages — its conversation memory removes a tool call without its result
and a result without its call — except that of a parallel batch it can keep the calls
whose results it kept, where Workingset, which never rewrites a message, drops the batch.
Counted in messages, a cut moves to keep more, as it always has.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from agents.compaction.boundaries import clean_boundaries
from agents.compaction.boundaries import head_end as head_end_messages
from agents.compaction.boundaries import split_keeping_recent as split_keeping_recent_messages
from agents.compaction.notes import is_summary_boundary, is_synthetic
from agents.messages import Message, ToolResultBlock

__all__ = [
    "UNITS",
    "Unit",
    "check_unit",
    "conversation_events",
    "first_in_messages",
    "head_end",
    "message_events",
    "midpoint_after",
    "results_in_last_events",
    "size",
    "split_keeping_recent",
]

Unit = Literal["messages", "events"]
UNITS: tuple[str, ...] = ("messages", "events")


def check_unit(unit: str, allowed: Sequence[str] = UNITS) -> None:
    """A strategy's `unit` parameter: one of `allowed`, else a clear error."""
    if unit not in allowed:
        raise ValueError(f"unit must be one of {', '.join(allowed)} (got '{unit}')")


def message_events(message: Message) -> int:
    """How many events `message` is (the module docstring's definition)."""
    if is_synthetic(message):
        return 0
    if is_summary_boundary(message):
        return 1
    if message.role == "assistant":
        return max(len(message.tool_uses), 1)
    results = len(message.tool_results_in)
    others = any(not isinstance(b, ToolResultBlock) for b in message.content)
    return results + (1 if others or not results else 0)


def conversation_events(messages: Sequence[Message]) -> int:
    return sum(message_events(m) for m in messages)


def size(messages: Sequence[Message], unit: Unit) -> int:
    """The conversation's length in `unit`."""
    return len(messages) if unit == "messages" else conversation_events(messages)


def split_keeping_recent(
    messages: Sequence[Message], keep: int, unit: Unit, clean: Sequence[bool] | None = None
) -> int | None:
    """Index of the split that keeps the last `keep` units; None when nothing would be
    left to call "older". In messages: the latest clean split keeping at least `keep`.
    In events: the earliest clean split keeping at most `keep` — an interaction the
    count cuts is dropped whole (the module docstring says why)."""
    if unit == "messages":
        return split_keeping_recent_messages(messages, keep, clean)
    if conversation_events(messages) <= keep:
        return None
    clean = clean_boundaries(messages) if clean is None else clean
    counts = [message_events(m) for m in messages]
    held = sum(counts)
    for i in range(1, len(messages)):
        held -= counts[i - 1]
        if held <= keep and clean[i]:
            return i
    return None


def head_end(messages: Sequence[Message], first: int, unit: Unit, clean: Sequence[bool] | None = None) -> int:
    """End of a kept head of `first` units, at a clean boundary (0 keeps none). In
    messages: the first clean boundary at or after `first` (the whole conversation when
    there is none). In events: the latest clean boundary holding at most `first` events —
    an interaction the count cuts is dropped whole."""
    if unit == "messages" or first <= 0:
        return head_end_messages(messages, first, clean)
    clean = clean_boundaries(messages) if clean is None else clean
    n, best, held = len(messages), 0, 0
    for i in range(1, n + 1):
        held += message_events(messages[i - 1])
        if held > first:
            break
        if i == n or clean[i]:
            best = i
    return best


def first_in_messages(messages: Sequence[Message], first: int, unit: Unit) -> int:
    """A head of `first` units as a head of messages, for the steps that count messages
    (the prompt-too-long fallbacks, manual summaries)."""
    return first if unit == "messages" else head_end(messages, first, unit)


def midpoint_after(messages: Sequence[Message], start: int, unit: Unit) -> int:
    """The first index at which messages[start:index] holds half of what follows `start`
    (rounded down), in `unit`."""
    if unit == "messages":
        return start + (len(messages) - start) // 2
    half, held = conversation_events(messages[start:]) // 2, 0
    for i in range(start, len(messages)):
        if held >= half:
            return i
        held += message_events(messages[i])
    return len(messages)


def results_in_last_events(messages: Sequence[Message], events: int) -> int:
    """How many tool results lie among the last `events` events (each result is one
    event; a user message's other content is its last event)."""
    remaining, results = events, 0
    for message in reversed(messages):
        if remaining <= 0:
            break
        count = message_events(message)
        in_message = len(message.tool_results_in) if message.role == "user" else 0
        trailing = count - in_message  # a user message's other content comes after its results
        results += min(in_message, max(remaining - trailing, 0))
        remaining -= count
    return results
