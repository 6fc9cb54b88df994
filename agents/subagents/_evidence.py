"""Evidence a subagent used, as references its parent can follow.

When a child finishes, its conversation is read once for the tool calls that
gathered something (every successful call but Agent and Recall): a Read becomes a
file reference with the line range it showed, any other call a reference to its
result. Each reference names the call's tool-use id, and the call's full body
travels with the child's result as a `RecallRecord`; the parent's Agent tool keeps
those in the parent's artifact store, the one `Recall` reads, so the parent (or
its user) can read any body back by id while its conversation holds only the short
list. The store is the parent's own, wherever the child ran (in-process the tree
shares one; on Ray the bodies cross with the result), so a parent on another node
than its child still recalls them.

Both lists are capped: a child that made hundreds of calls hands back its last
`MAX_REFERENCES` and at most `MAX_RECORD_CHARS` of bodies; a reference is listed
only when its body came along.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.messages import Message, ToolResultBlock, ToolUseBlock

__all__ = ["MAX_RECORD_CHARS", "MAX_REFERENCES", "EvidenceRef", "RecallRecord", "gather_evidence", "render_evidence"]

MAX_REFERENCES = 16
MAX_RECORD_CHARS = 400_000  # all bodies of one child together
_MAX_PATH_CHARS = 300
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NOT_EVIDENCE = frozenset({"Agent", "Recall"})
_NUMBERED_LINE = re.compile(r"^ *(\d+)\t", re.MULTILINE)  # Read's `cat -n` numbering


class EvidenceRef(BaseModel):
    """One piece of evidence: the call that found it, and for a file the lines shown."""

    model_config = ConfigDict(frozen=True)

    tool_use_id: str = Field(description="The child's tool call; Recall(id=...) in the parent returns its body.")
    tool: str
    kind: Literal["file", "tool_result"]
    path: str | None = Field(None, description="The file, for a Read.")
    start_line: int | None = Field(None, ge=1, description="First line shown (1-based), for a Read.")
    end_line: int | None = Field(None, ge=1, description="Last line shown, for a Read.")
    chars: int = Field(0, ge=0, description="Size of the full body.")


class RecallRecord(BaseModel):
    """A body the parent keeps so that its Recall can return it."""

    model_config = ConfigDict(frozen=True)

    tool_use_id: str
    body: str


def gather_evidence(
    conversation: Iterable[Message], full_body: Callable[[str], str | None] = lambda _id: None
) -> tuple[tuple[EvidenceRef, ...], tuple[RecallRecord, ...]]:
    """References and bodies for the evidence-gathering calls in a finished child's
    conversation, newest kept when capped. `full_body(id)` returns the stored original
    of a result that compaction clipped or cleared (else the shown text is the body)."""
    uses: dict[str, ToolUseBlock] = {}
    found: list[tuple[EvidenceRef, RecallRecord]] = []
    for message in conversation:
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                uses[block.id] = block
            elif isinstance(block, ToolResultBlock) and not block.is_error:
                use = uses.get(block.tool_use_id)
                if use is not None and use.name not in _NOT_EVIDENCE:
                    body = (full_body(block.tool_use_id) if block.marker is not None else None) or block.content
                    found.append((_reference(use, body), RecallRecord(tool_use_id=use.id, body=body)))
    kept: list[tuple[EvidenceRef, RecallRecord]] = []
    chars = 0
    for ref, record in reversed(found):
        if len(kept) == MAX_REFERENCES or chars + len(record.body) > MAX_RECORD_CHARS:
            break
        kept.append((ref, record))
        chars += len(record.body)
    kept.reverse()
    return tuple(ref for ref, _ in kept), tuple(record for _, record in kept)


def _reference(use: ToolUseBlock, body: str) -> EvidenceRef:
    path = use.input.get("path")
    # The model wrote it: one short line, so it cannot stretch or forge lines of the list.
    path = _CONTROL.sub("?", path[:_MAX_PATH_CHARS]) if isinstance(path, str) else None
    if use.name == "Read" and path is not None:
        numbers = _NUMBERED_LINE.findall(body)
        if numbers:
            return EvidenceRef(
                tool_use_id=use.id,
                tool=use.name,
                kind="file",
                path=path,
                start_line=int(numbers[0]),
                end_line=int(numbers[-1]),
                chars=len(body),
            )
    return EvidenceRef(tool_use_id=use.id, tool=use.name, kind="tool_result", path=path, chars=len(body))


def render_evidence(refs: Iterable[EvidenceRef]) -> str:
    """The compact list a parent's model sees under a child's answer ('' for none)."""
    lines = []
    for ref in refs:
        if ref.kind == "file":
            what = f"{ref.path} lines {ref.start_line}-{ref.end_line}"
        else:
            what = f"{ref.tool} result" + (f" ({ref.path})" if ref.path else "")
        lines.append(f"- {what} · id {ref.tool_use_id} · {ref.chars:,} chars")
    if not lines:
        return ""
    return "Evidence (Recall with an id returns that body in full):\n" + "\n".join(lines)
