"""The normalized trace: one recorded agent run as a typed, protocol-complete conversation.

Every loader reduces its format to a `Trace` through `ConversationBuilder`, so the shape
rules (task first, one assistant message per model call, results in the next user message,
unique ids, no dangling tool_use) live in one place instead of in five loaders.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, model_validator

from agents.messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    protocol_problems,
)

__all__ = [
    "NO_OBSERVATION",
    "CallRecord",
    "ConversationBuilder",
    "Trace",
    "UnknownTraceFormat",
    "model_calls",
    "object_at",
    "parse_arguments",
    "load_checked",
    "read_json_documents",
    "single_object",
    "text_of",
    "unix_time",
    "usage_record",
]

# The result given to a recorded tool call whose observation the file does not hold (e.g. the
# final submit command, whose output ended the run instead of reaching the model).
NO_OBSERVATION = "(no observation recorded)"


class UnknownTraceFormat(ValueError):
    """The file is not JSON/JSONL, or no loader recognises its content."""


class CallRecord(BaseModel):
    """What the file says about one recorded model call, where it says it: the provider's
    own token counts for the prompt it was sent and the reply it wrote (`input_tokens`
    includes cached tokens), and when the call was made (Unix seconds)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    timestamp: float | None = None

    @property
    def empty(self) -> bool:
        return self == _NO_RECORD


_NO_RECORD = CallRecord()


class Trace(BaseModel):
    """One agent run. `messages` starts with the task as a user message; it is validated to be
    protocol complete so replay code never has to repair it. `calls`, when not empty, has one
    record per model call (per assistant message, in order)."""

    source: str
    task_id: str
    model: str | None = None
    final_status: str | None = None
    system: str = ""
    messages: list[Message]
    final_patch: str | None = None
    path: str
    calls: list[CallRecord] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check_shape(self) -> Trace:
        if not self.messages or self.messages[0].role != "user":
            raise ValueError(f"{self.path}: a trace must start with the task as a user message")
        problems = protocol_problems(self.messages, allow_trailing_uses=False)
        if problems:
            raise ValueError(f"{self.path} ({self.task_id}): not protocol complete: {problems[:3]}")
        if all(c.empty for c in self.calls):
            self.calls = []
        elif len(self.calls) != sum(m.role == "assistant" for m in self.messages):
            raise ValueError(
                f"{self.path} ({self.task_id}): {len(self.calls)} call records for "
                f"{sum(m.role == 'assistant' for m in self.messages)} model calls"
            )
        return self

    def call_record(self, k: int) -> CallRecord:
        """The record of the k-th model call (an empty one when the file has none)."""
        return self.calls[k] if k < len(self.calls) else _NO_RECORD

    @property
    def task(self) -> str:
        return self.messages[0].text

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        return [u for m in self.messages for u in m.tool_uses]


def model_calls(trace: Trace) -> list[int]:
    """Indexes of the messages the recorded model produced: `messages[:i]` is the context it
    had when it produced `messages[i]`. Each assistant message is exactly one model call."""
    return [i for i, m in enumerate(trace.messages) if m.role == "assistant"]


class ConversationBuilder:
    """Appends agent steps and keeps the conversation well formed while doing so."""

    def __init__(self, task: str) -> None:
        self.messages: list[Message] = [Message.user(task)]
        self.calls: list[CallRecord] = []  # one per assistant message appended
        self._ids: set[str] = set()

    def unique_id(self, preferred: str | None, fallback: str) -> str:
        """The recorded id when it is usable, else `fallback`; suffixed if already taken, since
        some agents reuse ids across responses and the protocol pairs uses to results by id."""
        base = preferred or fallback
        candidate, n = base, 1
        while candidate in self._ids:
            n += 1
            candidate = f"{base}-{n}"
        self._ids.add(candidate)
        return candidate

    def step(
        self,
        thought: str,
        uses: Sequence[ToolUseBlock] = (),
        results: Iterable[ToolResultBlock] = (),
        call: CallRecord | None = None,
    ) -> None:
        """One model call: its thought and tool uses, then (if it used tools) one user message
        answering every use in order; a use with no recorded result gets NO_OBSERVATION.
        `call` is what the file recorded about the call (usage, time)."""
        blocks: list[TextBlock | ToolUseBlock] = []
        if thought.strip():
            blocks.append(TextBlock(text=thought))
        blocks.extend(uses)
        if not blocks:
            return  # an empty assistant turn carries nothing and is invalid for the API
        self.messages.append(Message.assistant(*blocks))
        self.calls.append(call or _NO_RECORD)
        if uses:
            by_id = {r.tool_use_id: r for r in results}
            answered = [by_id.get(u.id) or ToolResultBlock(tool_use_id=u.id, content=NO_OBSERVATION) for u in uses]
            self.messages.append(Message.tool_results(answered))

    def user_text(self, text: str) -> None:
        """Text the environment or user sent outside a tool result. Merged into a trailing user
        message so roles keep alternating (results first, as the Messages API requires)."""
        if not text.strip():
            return
        last = self.messages[-1]
        if last.role == "user":
            self.messages[-1] = Message(role="user", content=(*last.content, TextBlock(text=text)))
        else:
            self.messages.append(Message.user(text))


def read_json_documents(path: str | Path) -> list[Any]:
    """The top-level JSON values of a file: one for JSON, one per line for JSONL.

    Raises UnknownTraceFormat naming the file when it is neither."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UnknownTraceFormat(f"{p}: not UTF-8 text ({exc})") from exc
    try:
        return [json.loads(text)]
    except json.JSONDecodeError as whole_error:
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) > 1:
            try:
                return [json.loads(line) for line in lines]
            except json.JSONDecodeError:
                pass
        raise UnknownTraceFormat(f"{p}: not valid JSON or JSONL ({whole_error})") from whole_error


def load_checked(
    path: str | Path,
    detect: Callable[[list[Any]], bool],
    parse: Callable[[list[Any], str | Path], list[Trace]],
    *,
    what: str,
) -> list[Trace]:
    """A loader for one format: the file's documents, refused unless `detect` says they
    are `what` ("a SWE-agent .traj"), then parsed."""
    docs = read_json_documents(path)
    if not detect(docs):
        raise UnknownTraceFormat(f"{path}: not {what}")
    return parse(docs, path)


def single_object(docs: list[Any]) -> dict[str, Any]:
    """The file's one JSON object; {} when it holds several documents or something else
    (a format of one object per file then detects nothing in it)."""
    return docs[0] if len(docs) == 1 and isinstance(docs[0], dict) else {}


def text_of(content: Any) -> str:
    """Flatten content that is a string or a list of {"type": "text", "text": ...} blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content)


def object_at(doc: dict[str, Any], key: str, fallback: dict[str, Any] | None = None) -> dict[str, Any]:
    """`doc[key]` when it is a JSON object; else `fallback` ({}): a field a trace left out
    or filled with something else reads as empty."""
    value = doc.get(key)
    if isinstance(value, dict):
        return value
    return {} if fallback is None else fallback


def parse_arguments(raw: Any) -> dict[str, Any]:
    """OpenAI-style tool arguments (a JSON string, sometimes already a dict) as a dict; text
    that is not a JSON object is kept whole rather than dropped."""
    if isinstance(raw, dict):
        return raw
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except (TypeError, json.JSONDecodeError):
        return {"arguments": str(raw)}
    return value if isinstance(value, dict) else {"arguments": value}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def usage_record(usage: Any, timestamp: float | None = None) -> CallRecord:
    """A CallRecord from an OpenAI-style (`prompt_tokens`, `completion_tokens`,
    `prompt_tokens_details.cached_tokens`) or Anthropic-style (`input_tokens` + cache
    fields, `output_tokens`) usage dict; anything unreadable is left unknown."""
    if not isinstance(usage, dict):
        return CallRecord(timestamp=timestamp)
    if "prompt_tokens" in usage:
        details = usage.get("prompt_tokens_details") or {}
        cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else None
        return CallRecord(
            input_tokens=_int(usage.get("prompt_tokens")),
            output_tokens=_int(usage.get("completion_tokens")),
            cached_tokens=cached if cached is not None else _int(usage.get("cached_tokens")),
            timestamp=timestamp,
        )
    base = _int(usage.get("input_tokens"))
    read = _int(usage.get("cache_read_input_tokens")) or 0
    written = _int(usage.get("cache_creation_input_tokens")) or 0
    return CallRecord(
        input_tokens=None if base is None else base + read + written,
        output_tokens=_int(usage.get("output_tokens")),
        cached_tokens=read or _int(usage.get("cached_tokens")),
        timestamp=timestamp,
    )


def unix_time(value: Any) -> float | None:
    """Seconds since the epoch from a number or an ISO-8601 string; None if neither."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value:
        from datetime import UTC, datetime

        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    return None
