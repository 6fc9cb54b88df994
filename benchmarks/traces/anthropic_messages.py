"""Plain Anthropic Messages JSON: a list of messages, or {"system": ..., "messages": [...]}.

Content is a string or a list of blocks; text, tool_use and tool_result are kept (a
tool_result's content may itself be a string or a list of text blocks). Other block kinds
(thinking, images) are not part of Workingset's typed conversation and are dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.messages import MESSAGES_ADAPTER, Message, TextBlock, ToolResultBlock, ToolUseBlock

from .model import NO_OBSERVATION, Trace, UnknownTraceFormat, load_checked, text_of

__all__ = ["SOURCE", "detect", "load_anthropic_messages", "parse", "to_anthropic_messages"]

SOURCE = "anthropic-messages"


def _messages_of(doc: Any) -> list[Any] | None:
    messages = doc.get("messages") if isinstance(doc, dict) else doc
    if not isinstance(messages, list) or not messages:
        return None
    # Only user/assistant roles: chat logs with system/tool roles belong to other loaders.
    ok = all(isinstance(m, dict) and m.get("role") in ("user", "assistant") and "content" in m for m in messages)
    return messages if ok else None


def detect(docs: list[Any]) -> bool:
    return len(docs) == 1 and _messages_of(docs[0]) is not None


def parse(docs: list[Any], path: str | Path) -> list[Trace]:
    doc = docs[0]
    meta = doc if isinstance(doc, dict) else {}
    messages = [_message(m) for m in _messages_of(doc) or []]
    messages = [m for m in messages if m.content]
    if not messages or messages[0].role != "user" or not messages[0].text:
        raise UnknownTraceFormat(f"{path}: Anthropic messages must open with a user task text")
    # A run cut off after the model asked for tools: answer them so the trace is complete.
    if messages[-1].role == "assistant" and messages[-1].tool_uses:
        results = (ToolResultBlock(tool_use_id=u.id, content=NO_OBSERVATION) for u in messages[-1].tool_uses)
        messages.append(Message.tool_results(results))
    return [
        Trace(
            source=SOURCE,
            task_id=str(meta.get("task_id") or Path(path).stem),
            model=meta.get("model"),
            final_status=meta.get("final_status"),
            system=text_of(meta.get("system")),
            messages=messages,
            final_patch=meta.get("final_patch"),
            path=str(path),
        )
    ]


def load_anthropic_messages(path: str | Path) -> list[Trace]:
    return load_checked(path, detect, parse, what="an Anthropic Messages conversation")


def to_anthropic_messages(trace: Trace) -> dict[str, Any]:
    """The trace in this format (what `parse` reads back unchanged)."""
    return {
        "task_id": trace.task_id,
        "model": trace.model,
        "final_status": trace.final_status,
        "final_patch": trace.final_patch,
        "system": trace.system,
        # Compaction markers are Workingset's own; the format holds only the text they show.
        "messages": MESSAGES_ADAPTER.dump_python(trace.messages, mode="json", exclude=_MARKERS),
    }


_MARKERS = {"__all__": {"content": {"__all__": {"marker"}}}}


def _message(raw: dict[str, Any]) -> Message:
    content = raw["content"]
    if isinstance(content, str):
        blocks: list[Any] = [TextBlock(text=content)] if content else []
    else:
        blocks = [b for b in (_block(item) for item in content) if b is not None]
    return Message(role=raw["role"], content=tuple(blocks))


def _block(item: Any) -> TextBlock | ToolUseBlock | ToolResultBlock | None:
    if isinstance(item, str):
        return TextBlock(text=item)
    kind = item.get("type") if isinstance(item, dict) else None
    if kind == "text":
        return TextBlock(text=item.get("text", ""))
    if kind == "tool_use":
        return ToolUseBlock(id=item["id"], name=item["name"], input=item.get("input") or {})
    if kind == "tool_result":
        return ToolResultBlock(
            tool_use_id=item["tool_use_id"],
            content=text_of(item.get("content")),
            is_error=bool(item.get("is_error", False)),
        )
    return None
