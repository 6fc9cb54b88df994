"""Summaries of older history: the handoff request, chunking, and the next conversation.

Next conversation = one boundary message (marker + summary) + the ORIGINAL recent
messages, untouched. When older history exceeds the summarizer's own window it is
summarized in chunks, then the chunk summaries are summarized (hierarchically).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agents.compaction.boundaries import clean_boundaries
from agents.compaction.notes import (
    bridge,
    is_summary_boundary,
    is_synthetic,
    summary_acknowledgement,
    summary_boundary,
)
from agents.errors import WorkingsetError
from agents.messages import Message
from agents.ports import Summarizer
from agents.tokens import TokenCounter

__all__ = [
    "HANDOFF_SECTIONS",
    "SummaryFailed",
    "SummaryOutcome",
    "handoff_instructions",
    "is_summary_boundary",
    "summarize_older",
    "summarized_conversation",
    "turns_since_summary",
    "with_summary",
]

HANDOFF_SECTIONS = (
    "Objective",
    "Current state",
    "Verified evidence",
    "Decisions and constraints",
    "Active artifacts",
    "Remaining work",
)


class SummaryFailed(WorkingsetError):
    """The summarizer failed, timed out, or returned nothing usable."""


def handoff_instructions(focus: str | None = None) -> str:
    sections = "\n".join(f"## {name}" for name in HANDOFF_SECTIONS)
    focus_line = f"\nGive particular attention to: {focus}\n" if focus else ""
    return (
        "Write a handoff summary of the conversation above for the agent that continues "
        "this task. It will see only your summary and the most recent messages, so keep "
        "what it needs and nothing else. Use exactly these sections:\n"
        f"{sections}\n"
        "Under 'Verified evidence' give each item its provenance (the tool call, file or "
        "command it came from). Keep exact paths, symbols, commands with their exit codes, "
        "failing test names and error lines. Do not call tools; answer with the summary only."
        f"{focus_line}"
    )


def summarized_conversation(summary: str, recent: Sequence[Message], summarized_count: int) -> list[Message]:
    """One boundary message with the summary + the ORIGINAL recent messages."""
    head = [summary_boundary(summary, summarized_count)]
    if recent and recent[0].role == "user":
        head.append(summary_acknowledgement())  # keep roles alternating
    return head + list(recent)


def with_summary(head: Sequence[Message], summary: str, tail: Sequence[Message], summarized: int) -> list[Message]:
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


@dataclass(frozen=True)
class SummaryOutcome:
    text: str
    calls: int


def _chunks(messages: Sequence[Message], window_tokens: int, counter: TokenCounter) -> list[list[Message]]:
    """Cut at clean boundaries into pieces of at most `window_tokens` where possible."""
    clean = clean_boundaries(messages)
    chunks: list[list[Message]] = []
    start, size = 0, 0
    last_cut, size_at_cut = None, 0  # the latest clean cut inside the current chunk
    for i, message in enumerate(messages):
        if i > start and clean[i]:
            last_cut, size_at_cut = i, size
        tokens = counter.count_message(message)
        if size + tokens > window_tokens and last_cut is not None:
            # Back up to the latest clean cut, so the chunk stays inside the window.
            chunks.append(list(messages[start:last_cut]))
            start, size = last_cut, size - size_at_cut
            last_cut = i if i > start and clean[i] else None
            size_at_cut = size
        size += tokens
    chunks.append(list(messages[start:]))
    return chunks


async def _summarize_once(summarizer: Summarizer, messages: list[Message], focus: str | None) -> str:
    try:
        text = await summarizer.summarize(messages, focus=focus)
    except SummaryFailed:
        raise
    except Exception as exc:  # any summarizer failure is recoverable by the caller's policy
        raise SummaryFailed(f"summarizer failed: {type(exc).__name__}: {exc}") from exc
    if not text or not text.strip():
        raise SummaryFailed("summarizer returned an empty summary")
    return text.strip()


async def summarize_older(
    summarizer: Summarizer,
    older: Sequence[Message],
    *,
    window_tokens: int,
    counter: TokenCounter,
    focus: str | None = None,
) -> SummaryOutcome:
    """Summarize `older`, in chunks when it does not fit the summarizer's window."""
    pending = list(older)
    calls = 0
    while True:
        chunks = _chunks(pending, window_tokens, counter)
        if len(chunks) == 1:
            text = await _summarize_once(summarizer, chunks[0], focus)
            return SummaryOutcome(text=text, calls=calls + 1)
        partials = []
        for n, chunk in enumerate(chunks, start=1):
            partials.append(f"### Part {n} of {len(chunks)}\n{await _summarize_once(summarizer, chunk, focus)}")
            calls += 1
        if len(partials) >= len(pending):
            raise SummaryFailed("older history cannot be reduced to fit the summarizer window")
        pending = [
            Message.user(
                "Summaries of consecutive parts of the conversation, oldest first:\n\n" + "\n\n".join(partials)
            )
        ]
