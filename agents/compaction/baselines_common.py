"""Shared pieces of the baseline strategies (see `agents.compaction.baselines`).

- Parameter validation (`check`).
- Result rewriting that returns untouched messages as the same objects, so the cached
  prefix and the recent tail stay identical.
- The trim note: the one synthetic message standing where whole messages were dropped.
  Roles keep alternating (a short assistant bridge is added when needed); a later trim
  that drops an earlier note adds its count, so the note always says how many real
  messages are gone in total.
- Split points at clean boundaries (a tool_use never loses its tool_result).

`Steps` (baselines_steps.py) applies these to one compaction and keeps its ledger.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agents.compaction.summary import is_summary_boundary, summarized_conversation
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock

__all__ = [
    "BRIDGE_TEXT",
    "ELIDED_PREFIX",
    "TRIM_MARKER",
    "bridge",
    "check",
    "dropped_count",
    "elided_placeholder",
    "first_clean_at_or_after",
    "head_end",
    "is_elided",
    "is_synthetic",
    "is_trim_note",
    "joined",
    "rewrite_inputs",
    "rewrite_results",
    "tail_start",
    "trim_note",
    "turns_since_summary",
    "with_summary",
]

TRIM_MARKER = "[Context trimmed]"
BRIDGE_TEXT = "Understood. I will continue from the messages that follow."
ELIDED_PREFIX = "[observation elided: "
_TRIM_COUNT = re.compile(r"^\[Context trimmed\] (\d+) ")
# The acknowledgement summarized_conversation puts after its boundary (not a real turn).
_SUMMARY_ACK = summarized_conversation("-", [Message.user("-")], 0)[1].text


def check(condition: bool, message: str) -> None:
    """Parameter validation; make_strategy turns the ValueError into a ConfigError."""
    if not condition:
        raise ValueError(message)


# -- placeholders and notes ----------------------------------------------------------------


def elided_placeholder(tool_use_id: str, original_chars: int) -> str:
    return f'{ELIDED_PREFIX}{original_chars} chars; Recall(id="{tool_use_id}")]'


def is_elided(block: ToolResultBlock) -> bool:
    return block.content.startswith(ELIDED_PREFIX)


def trim_note(dropped: int, strategy: str) -> str:
    return (
        f"{TRIM_MARKER} {dropped} earlier messages were dropped here by the '{strategy}' "
        "compaction strategy. Tool outputs they held are kept in the record; Recall(id=...) "
        "returns one when you know its id."
    )


def bridge() -> Message:
    return Message.assistant(TextBlock(text=BRIDGE_TEXT))


def is_trim_note(message: Message) -> bool:
    return (
        not message.tool_uses
        and not message.tool_results_in
        and message.text.startswith(TRIM_MARKER)
    )


def is_synthetic(message: Message) -> bool:
    """A trim note or a bridge: stands for no real turn of the conversation."""
    if is_trim_note(message):
        return True
    return (
        message.role == "assistant"
        and not message.tool_uses
        and message.text in (BRIDGE_TEXT, _SUMMARY_ACK)
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


def joined(head: Sequence[Message], note: str, tail: Sequence[Message]) -> list[Message]:
    """head + one note message + tail, roles alternating. The note is a user message,
    except between two user messages, where it speaks as the assistant; between a user
    message and an assistant message a bridge comes first."""
    before = head[-1].role if head else None
    after = tail[0].role if tail else None
    if before == "user":
        middle = (
            [bridge(), Message.user(note)]
            if after == "assistant"
            else [Message.assistant(TextBlock(text=note))]
        )
    else:
        middle = [Message.user(note), *([bridge()] if after == "user" else [])]
    return [*head, *middle, *tail]


def with_summary(
    head: Sequence[Message], summary: str, tail: Sequence[Message], summarized: int
) -> list[Message]:
    """head + (bridge) + summary boundary + the original tail, roles alternating."""
    body = summarized_conversation(summary, tail, summarized_count=summarized)
    between = [bridge()] if head and head[-1].role == "user" else []
    return [*head, *between, *body]


def turns_since_summary(messages: Sequence[Message], kept: int = 0) -> int:
    """Assistant messages taken since the latest summary boundary (since the start when
    there is none), not counting the `kept` messages right after it (what that summary
    kept) nor synthetic acknowledgements and bridges."""
    start = max((i + 1 for i, m in enumerate(messages) if is_summary_boundary(m)), default=None)
    if start is None:
        recent = messages
    else:
        real = [m for m in messages[start:] if not is_synthetic(m)]
        recent = real[kept:]
    return sum(1 for m in recent if m.role == "assistant" and not is_synthetic(m))


# -- rewriting ----------------------------------------------------------------------------


def rewrite_results(messages: Sequence[Message], replacements: dict[str, str]) -> list[Message]:
    """Tool result bodies replaced by id; every message not touched stays the same object."""
    out: list[Message] = []
    for message in messages:
        if message.role != "user" or not any(
            b.tool_use_id in replacements for b in message.tool_results_in
        ):
            out.append(message)
            continue
        blocks = tuple(
            ToolResultBlock(
                tool_use_id=b.tool_use_id, content=replacements[b.tool_use_id], is_error=b.is_error
            )
            if isinstance(b, ToolResultBlock) and b.tool_use_id in replacements
            else b
            for b in message.content
        )
        out.append(Message(role="user", content=blocks))
    return out


def rewrite_inputs(messages: Sequence[Message], use_ids: set[str]) -> list[Message]:
    """Tool use inputs replaced by {} by id (name and id stay); other messages untouched."""
    out: list[Message] = []
    for message in messages:
        if message.role != "assistant" or not any(
            u.id in use_ids and u.input for u in message.tool_uses
        ):
            out.append(message)
            continue
        blocks = tuple(
            ToolUseBlock(id=b.id, name=b.name, input={})
            if isinstance(b, ToolUseBlock) and b.id in use_ids
            else b
            for b in message.content
        )
        out.append(Message(role="assistant", content=blocks))
    return out


# -- split points -------------------------------------------------------------------------


def head_end(clean: Sequence[bool], n: int, first: int) -> int:
    """End of the kept head: the first clean boundary at or after `first` (0 keeps none)."""
    if first <= 0:
        return 0
    return next((i for i in range(first, n) if clean[i]), n)


def tail_start(clean: Sequence[bool], n: int, last: int) -> int | None:
    """Start of the kept tail: the latest clean split keeping at least `last` messages."""
    return next((i for i in range(min(n - last, n - 1), 0, -1) if clean[i]), None)


def first_clean_at_or_after(clean: Sequence[bool], n: int, index: int) -> int | None:
    return next((i for i in range(max(index, 1), n) if clean[i]), None)
