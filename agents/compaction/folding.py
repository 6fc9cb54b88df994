"""Folding: old turns replaced by a digest, without a summarizer.

A fold replaces a clean span of the conversation by one digest message (marker + one
line per tool call: the call, then the residue of its output, or what superseded it),
behind a bridge. Digests are append-only: the compacted region is the head (the task)
followed by bridge + digest pairs, and a later fold adds its pair after the earlier
ones without touching them, so the prefix up to the last digest stays byte-identical
and cached (`agents.compaction.cache_points`). User text in a folded span is kept in
the digest (clipped); assistant text is not — the calls it made are.

Pure functions; untouched messages stay the same objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agents.compaction.currentness import Supersession
from agents.compaction.notes import (
    bridge,
    digest_message,
    dropped_count,
    is_digest,
    is_summary_boundary,
    is_synthetic,
)
from agents.compaction.residue import residue
from agents.messages import (
    ClearedBody,
    Message,
    SupersededBody,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)

__all__ = ["compacted_end", "digest_lines", "digest_text", "fold_span", "merged_digest", "message_lines"]

_CALL_CHARS = 100
_USER_CHARS = 500
_SUMMARY_CHARS = 2_000


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe(use: ToolUseBlock) -> str:
    command = use.input.get("command")
    if isinstance(command, str) and len(use.input) == 1:
        return "$ " + _clip(command.split("\n", 1)[0], _CALL_CHARS)
    args = ", ".join(
        f"{k}={_clip(str(v), 40)}"
        for k, v in use.input.items()
        if k not in ("content", "new_str", "old_str", "file_text", "new_string", "old_string")
    )
    return _clip(f"{use.name}({args})", _CALL_CHARS)


def _outcome(result: ToolResultBlock | None, stale: Supersession | None, residue_chars: int) -> str:
    if result is None:
        return "no result"
    marker = result.marker
    if stale is not None or isinstance(marker, SupersededBody):
        by = stale.by if stale is not None else marker.by  # type: ignore[union-attr]
        why = stale.reason if stale is not None else marker.reason  # type: ignore[union-attr]
        return f"superseded ({why}) by {by}"
    kept = marker.residue if isinstance(marker, ClearedBody) else residue(result.content, residue_chars)
    status = "error" if result.is_error else ""
    return "; ".join(p for p in (status, kept) if p) or "(nothing kept)"


def message_lines(
    message: Message,
    results: Mapping[str, ToolResultBlock],
    superseded: Mapping[str, Supersession],
    residue_chars: int,
) -> list[str]:
    """The digest lines one folded message contributes: one per tool call it made (its
    result is looked up in `results`), its text if it is the user's, the lines of an
    earlier digest folded again."""
    if is_digest(message):
        return digest_text(message).split("\n")
    if is_summary_boundary(message):
        return ["- earlier summary: " + _clip(message.text, _SUMMARY_CHARS)]
    if is_synthetic(message):
        return []
    if message.role == "assistant":
        return [
            f"- {use.name} {use.id}: {_describe(use)} → "
            + _outcome(results.get(use.id), superseded.get(use.id), residue_chars)
            for use in message.tool_uses
        ]
    if message.text.strip():
        return ["- user: " + _clip(message.text, _USER_CHARS)]
    return []


def digest_text(message: Message) -> str:
    """The lines of a digest message (the block after its marker)."""
    last = message.content[-1]
    return last.text if len(message.content) > 1 and isinstance(last, TextBlock) else ""


def digest_lines(span: Sequence[Message], superseded: Mapping[str, Supersession], residue_chars: int) -> str:
    """One line per tool call in `span` (and per user text), oldest first."""
    results = {b.tool_use_id: b for m in span for b in m.tool_results_in}
    lines = [line for m in span for line in message_lines(m, results, superseded, residue_chars)]
    return "\n".join(lines) if lines else "- (no tool calls)"


def compacted_end(messages: Sequence[Message], head: int) -> int:
    """End of the compacted region: the head and the bridge + digest pairs right after it."""
    i = head
    while (
        i + 1 < len(messages)
        and is_synthetic(messages[i])
        and messages[i].role == "assistant"
        and is_digest(messages[i + 1])
    ):
        i += 2
    return i


def fold_span(
    messages: Sequence[Message], start: int, end: int, superseded: Mapping[str, Supersession], residue_chars: int
) -> list[Message]:
    """messages[start:end] (a clean span after a user message) replaced by bridge + digest;
    a second bridge when the kept tail opens with a user message."""
    span = messages[start:end]
    digest = digest_message(dropped_count(span), digest_lines(span, superseded, residue_chars))
    tail = list(messages[end:])
    after = [bridge()] if tail and tail[0].role == "user" else []
    return [*messages[:start], bridge(), digest, *after, *tail]


def merged_digest(messages: Sequence[Message], head: int, end: int, keep_lines: int) -> list[Message]:
    """The compacted region messages[head:end] rebuilt as one digest holding at most its
    newest `keep_lines` lines (a count line stands for the rest) — a rewrite from the
    head, so done only when the digests outgrow their share."""
    region = messages[head:end]
    lines = [line for m in region if is_digest(m) for line in digest_text(m).split("\n") if line]
    shown = lines[len(lines) - keep_lines :] if keep_lines > 0 else []
    hidden = len(lines) - len(shown)
    if hidden:
        shown = [f"- ({hidden} older digest lines dropped; their outputs stay in the session record)", *shown]
    digest = digest_message(dropped_count(region), "\n".join(shown))
    return [*messages[:head], bridge(), digest, *messages[end:]]
