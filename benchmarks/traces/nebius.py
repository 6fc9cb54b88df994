"""Rows of the Nebius `SWE-agent-trajectories` dataset (one JSON object per file).

A row is `{instance_id, model_name, target, exit_status, generated_patch, trajectory}`, and
`trajectory` is a list of `{role: "system" | "user" | "ai", text, system_prompt, mask}`:
the system prompt, the task, then `ai` turns (a thought and one fenced SWE-agent command)
each answered by the next `user` text (the observation). An `ai` turn without a fenced
command ran nothing: its text is assistant text and the reply is user text.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agents.messages import ToolResultBlock, ToolUseBlock

from .model import (
    ConversationBuilder,
    Trace,
    UnknownTraceFormat,
    load_checked,
    single_object,
    text_of,
)

__all__ = ["SOURCE", "detect", "load_nebius", "parse"]

SOURCE = "nebius-swe-agent"

_FENCE = re.compile(r"```[^\n]*\n(.*?)\n?```", re.DOTALL)
_ROLES = {"system", "user", "ai"}


def detect(docs: list[Any]) -> bool:
    steps = single_object(docs).get("trajectory")
    return (
        isinstance(steps, list)
        and bool(steps)
        and all(isinstance(s, dict) and s.get("role") in _ROLES for s in steps)
        and any(s.get("role") == "ai" for s in steps)
    )


def _split_action(text: str) -> tuple[str, str | None]:
    """(thought, command): the command is the last fenced block, the thought the text before it."""
    blocks = list(_FENCE.finditer(text))
    if not blocks or not blocks[-1].group(1).strip():
        return text, None
    last = blocks[-1]
    return (text[: last.start()] + text[last.end() :]).strip(), last.group(1).strip()


def parse(docs: list[Any], path: str | Path) -> list[Trace]:
    doc = docs[0]
    steps = doc["trajectory"]
    system = next((text_of(s.get("system_prompt") or s.get("text")) for s in steps if s.get("role") == "system"), "")
    task_at = next((i for i, s in enumerate(steps) if s.get("role") == "user"), None)
    if task_at is None:
        raise UnknownTraceFormat(f"{path}: Nebius trajectory row without a task message")
    builder = ConversationBuilder(text_of(steps[task_at].get("text")))
    rest = steps[task_at + 1 :]
    for i, step in enumerate(rest):
        if step.get("role") != "ai":
            continue
        thought, command = _split_action(text_of(step.get("text")))
        following = rest[i + 1] if i + 1 < len(rest) and rest[i + 1].get("role") == "user" else None
        reply = text_of(following.get("text")) if following is not None else None
        if command is None:
            builder.step(thought)
            builder.user_text(reply or "")
            continue
        use = ToolUseBlock(id=builder.unique_id(None, f"step-{i}"), name=command.split()[0], input={"command": command})
        results = [] if reply is None else [ToolResultBlock(tool_use_id=use.id, content=reply)]
        builder.step(thought, [use], results)
    return [
        Trace(
            source=SOURCE,
            task_id=str(doc.get("instance_id") or Path(path).stem),
            model=doc.get("model_name"),
            final_status=doc.get("exit_status"),
            system=system,
            messages=builder.messages,
            final_patch=doc.get("generated_patch") or None,
            path=str(path),
        )
    ]


def load_nebius(path: str | Path) -> list[Trace]:
    return load_checked(path, detect, parse, what="a Nebius SWE-agent trajectory row")
