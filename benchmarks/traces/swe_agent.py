"""SWE-agent `.traj` (0.x and 1.x).

Both versions carry `trajectory`: one entry per step with `thought`, `action` (a SWE-agent
command string such as `open file.py`, `edit 3:5\\n...\\nend_of_edit`, `submit`) and
`observation`. That list is the common ground, so it is what is read; `history` is used only
for the system prompt and the task (skipping the `is_demo` demonstration of 0.x).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.messages import ToolResultBlock, ToolUseBlock

from .model import ConversationBuilder, Trace, load_checked, single_object, text_of

__all__ = ["SOURCE", "detect", "load_swe_agent", "parse"]

SOURCE = "swe-agent"


def detect(docs: list[Any]) -> bool:
    doc = single_object(docs)
    steps = doc.get("trajectory")
    return (
        isinstance(steps, list)
        and all(isinstance(s, dict) and "action" in s and "observation" in s for s in steps)
        and isinstance(doc.get("history", []), list)
    )


def parse(docs: list[Any], path: str | Path) -> list[Trace]:
    doc = docs[0]
    history = doc.get("history") or []
    system = text_of(history[0].get("content")) if history and history[0].get("role") == "system" else ""
    task = next(
        (text_of(m.get("content")) for m in history if m.get("role") == "user" and not m.get("is_demo")),
        "",
    )
    builder = ConversationBuilder(task)
    for n, step in enumerate(doc["trajectory"]):
        action = text_of(step.get("action"))
        thought = text_of(step.get("thought"))
        if not action.strip():
            # Nothing was run (e.g. a response SWE-agent could not parse); what came back is
            # feedback text, not a tool result.
            builder.step(thought)
            builder.user_text(text_of(step.get("observation")))
            continue
        use = ToolUseBlock(
            id=builder.unique_id(None, f"step-{n}"),
            name=action.split()[0],
            input={"command": action},
        )
        result = ToolResultBlock(tool_use_id=use.id, content=text_of(step.get("observation")))
        builder.step(thought, [use], [result])
    info = doc.get("info") or {}
    return [
        Trace(
            source=SOURCE,
            task_id=Path(path).name.removesuffix(".traj"),
            model=_model(doc, Path(path)),
            final_status=info.get("exit_status"),
            system=system,
            messages=builder.messages,
            final_patch=info.get("submission") or None,
            path=str(path),
        )
    ]


def load_swe_agent(path: str | Path) -> list[Trace]:
    return load_checked(path, detect, parse, what="a SWE-agent .traj")


def _model(doc: dict[str, Any], path: Path) -> str | None:
    """1.x records the model in replay_config; 0.x only in the run folder's name, which
    SWE-agent builds as `<model>__<data>__<config>__...`."""
    replay = doc.get("replay_config")
    if isinstance(replay, dict):
        name = ((replay.get("agent") or {}).get("model") or {}).get("name")
        if name:
            return str(name)
    folder = path.parent.name
    return folder.split("__", 1)[0] if "__" in folder else None
