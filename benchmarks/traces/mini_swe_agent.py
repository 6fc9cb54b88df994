"""mini-SWE-agent `*.traj.json`.

Two generations are read:
- "mini-swe-agent-1.1" (v2.x): OpenAI chat messages; assistant `tool_calls` (only `bash`,
  arguments `{"command": ...}`), answered by `role: "tool"` messages, ended by `role: "exit"`
  whose content is the submitted diff.
- older files (v1.x, or a bare message list): no tool calls; the action is the single
  ```bash block of the assistant text and the observation is the next user message.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agents.messages import ToolResultBlock, ToolUseBlock

from .model import (
    CallRecord,
    ConversationBuilder,
    Trace,
    UnknownTraceFormat,
    load_checked,
    object_at,
    parse_arguments,
    text_of,
    unix_time,
    usage_record,
)

__all__ = ["SOURCE", "detect", "load_mini_swe_agent", "parse"]

SOURCE = "mini-swe-agent"

# mini-swe-agent only executes a response holding exactly one such block.
_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)


def _messages_of(doc: Any) -> list[dict[str, Any]] | None:
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        fmt = str(doc.get("trajectory_format", ""))
        info = object_at(doc, "info")
        if fmt.startswith("mini-swe-agent") or "mini_version" in info:
            return doc["messages"]
        return None
    # A bare list is only claimed when it opens with a system message: the Anthropic
    # Messages format has no system role, so the two cannot be confused.
    is_chat = isinstance(doc, list) and bool(doc) and all(isinstance(m, dict) for m in doc)
    return doc if is_chat and doc[0].get("role") == "system" else None


def detect(docs: list[Any]) -> bool:
    return len(docs) == 1 and _messages_of(docs[0]) is not None


def parse(docs: list[Any], path: str | Path) -> list[Trace]:
    doc = docs[0]
    messages = _messages_of(doc) or []
    info = doc.get("info", {}) if isinstance(doc, dict) else {}
    system = next((text_of(m.get("content")) for m in messages if m.get("role") == "system"), "")
    task_at = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
    if task_at is None:
        raise UnknownTraceFormat(f"{path}: mini-swe-agent trajectory without a task message")
    builder = ConversationBuilder(text_of(messages[task_at]["content"]))
    final_patch = _walk(builder, messages[task_at + 1 :])
    if final_patch is None:
        final_patch = info.get("submission") or None
    model = ((info.get("config") or {}).get("model") or {}).get("model_name")
    task_id = doc.get("instance_id") if isinstance(doc, dict) else None
    return [
        Trace(
            source=SOURCE,
            task_id=task_id or Path(path).name.removesuffix(".json").removesuffix(".traj"),
            model=model,
            final_status=info.get("exit_status"),
            system=system,
            messages=builder.messages,
            final_patch=final_patch,
            path=str(path),
            calls=builder.calls,
        )
    ]


def load_mini_swe_agent(path: str | Path) -> list[Trace]:
    return load_checked(path, detect, parse, what="a mini-swe-agent trajectory")


class _Pending:
    """An assistant step whose results are still being collected."""

    def __init__(self, thought: str, uses: list[ToolUseBlock], awaits_user: bool, call: CallRecord) -> None:
        self.thought, self.uses = thought, uses
        self.results: list[ToolResultBlock] = []
        self.awaits_user = awaits_user  # old format: the next user message is the observation
        self.call = call


def _walk(builder: ConversationBuilder, messages: list[dict[str, Any]]) -> str | None:
    """Feed the messages after the task into the builder; returns the exit message's diff."""
    pending: _Pending | None = None
    final_patch: str | None = None

    def flush() -> None:
        nonlocal pending
        if pending is not None:
            builder.step(pending.thought, pending.uses, pending.results, pending.call)
            pending = None

    for m in messages:
        role, content = m.get("role"), text_of(m.get("content"))
        if role == "assistant":
            flush()
            pending = _assistant_step(builder, m, len(builder.messages))
        elif role == "tool" and pending is not None:
            pending.results.append(ToolResultBlock(tool_use_id=_result_id(pending, m), content=content))
        elif role == "user" and pending is not None and pending.awaits_user:
            pending.results.append(ToolResultBlock(tool_use_id=pending.uses[0].id, content=content))
            flush()
        elif role == "exit":
            final_patch = content or None
        elif role in ("user", "tool"):
            flush()
            builder.user_text(content)  # e.g. format-error feedback, not a tool result
    flush()
    return final_patch


def _assistant_step(builder: ConversationBuilder, m: dict[str, Any], n: int) -> _Pending:
    # DeepSeek-reasoner leaves `content` empty and puts the reasoning aside; the reasoning is
    # then the only record of the thought.
    thought = text_of(m.get("content")) or text_of(m.get("reasoning_content"))
    call = _call_record(m)
    calls = m.get("tool_calls") or []
    if calls:
        uses = [
            ToolUseBlock(
                id=builder.unique_id(c.get("id"), f"step-{n}-{k}"),
                name=(c.get("function") or {}).get("name") or "bash",
                input=parse_arguments((c.get("function") or {}).get("arguments")),
            )
            for k, c in enumerate(calls)
        ]
        return _Pending(thought, uses, awaits_user=False, call=call)
    blocks = _BASH_BLOCK.findall(thought)
    if len(blocks) != 1:
        return _Pending(thought, [], awaits_user=False, call=call)  # a format error: nothing was run
    use = ToolUseBlock(id=builder.unique_id(None, f"step-{n}"), name="bash", input={"command": blocks[0]})
    # The command now lives in the tool_use; keep only the reasoning around it as text.
    return _Pending(_BASH_BLOCK.sub("", thought).strip(), [use], awaits_user=True, call=call)


def _call_record(m: dict[str, Any]) -> CallRecord:
    """Usage and time of one call: v2 keeps them in `extra.response.usage` and
    `extra.timestamp`; v1 keeps the raw completion (`usage`, `created`) in `extra.response`."""
    extra = object_at(m, "extra")
    response = object_at(extra, "response")
    when = unix_time(extra.get("timestamp")) or unix_time(response.get("created"))
    return usage_record(response.get("usage"), when)


def _result_id(pending: _Pending, m: dict[str, Any]) -> str:
    """The use this tool message answers: by tool_call_id, else the first unanswered use."""
    ids = [u.id for u in pending.uses]
    wanted = m.get("tool_call_id")
    if wanted in ids:
        return wanted
    answered = {r.tool_use_id for r in pending.results}
    return next((i for i in ids if i not in answered), ids[0] if ids else str(wanted))
