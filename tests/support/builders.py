"""Small constructors and readers the tests share, defined once instead of once per test
module: a tool-use block, the scripted model's tool calls (Bash, Write, Agent), a bare
workspace and its config file, settings for the scripted model, a file written with its
directories, a judge's verdict, a root's script with its children's, an approver that
allows all; the JSON events of a `--json` run, events of one type, tool-result bodies by
call id. A helper that does something its own file needs stays in that file, under a name that
says what it makes."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from agents.messages import Message, TextBlock, ToolUseBlock
from agents.session._kit import PermissionAnswer
from agents.settings._config import WorkingsetSettings

__all__ = [
    "agent_call",
    "approve_all",
    "bash_call",
    "json_events",
    "judge_verdict",
    "of_type",
    "result_bodies",
    "scripted_settings",
    "subagent_script",
    "tool_use",
    "workspace",
    "workspace_config",
    "write_call",
    "write_file",
]


def tool_use(use_id: str, name: str, **input: Any) -> ToolUseBlock:
    """A model's tool call as the conversation holds it."""
    return ToolUseBlock(id=use_id, name=name, input=input)


def bash_call(command: str, use_id: str | None = None) -> dict:
    """A Bash call in a scripted model's turn (with the id the model gives it, if any)."""
    return {"name": "Bash", "input": {"command": command}, **({"id": use_id} if use_id else {})}


def write_call(path: str, content: str) -> dict:
    """A Write call in a scripted model's turn."""
    return {"name": "Write", "input": {"path": path, "content": content}}


def workspace(tmp_path: Path) -> Path:
    """`tmp_path/ws`, made if it is not there yet."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ws


def scripted_settings(tmp_path: Path, script: Path, **fields: Any) -> WorkingsetSettings:
    """Settings for the scripted model `script`, with a home of their own under `tmp_path`."""
    return WorkingsetSettings(model=f"scripted:{script}", home=tmp_path / "home", **fields)


def write_file(path: Path, text: str) -> Path:
    """`text` at `path`, its directories made as needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def json_events(out: str) -> list[dict]:
    """The events a `--json` run printed: its lines that are JSON objects."""
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def workspace_config(directory: Path, text: str) -> None:
    """`text` (dedented) as the workspace's .workingset/config.toml."""
    (directory / ".workingset").mkdir(parents=True, exist_ok=True)
    (directory / ".workingset" / "config.toml").write_text(textwrap.dedent(text))


def agent_call(description: str, prompt: str | None = "Do the task.", **extra: Any) -> dict:
    """An Agent call (a subagent) in a scripted model's turn; `prompt=None` leaves it out."""
    payload = {"description": description, **extra}
    if prompt is not None:
        payload["prompt"] = prompt
    return {"name": "Agent", "input": payload}


def of_type(events: list, kind: str, session_id: str | None = None) -> list:
    """The events of one type, of one session if `session_id` is given."""
    return [e for e in events if e.type == kind and (session_id is None or e.session_id == session_id)]


def result_bodies(messages: list[Message]) -> dict[str, str]:
    """Each tool result's body, by the id of the call it answers."""
    return {b.tool_use_id: b.content for m in messages for b in m.tool_results_in}


def judge_verdict(verdict: str, reason: str = "r") -> list[TextBlock]:
    """The goal judge's answer, as the judge model writes it."""
    return [TextBlock(text=json.dumps({"verdict": verdict, "reason": reason}))]


def subagent_script(tmp_path: Path, turns: list[dict], subagents: dict | None = None, final: str = "Done.") -> Path:
    """A scripted root model's file with its children's scripts (by Agent description)."""
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": turns, "final_text": final, "subagents": subagents or {}}))
    return path


async def approve_all(request: Any) -> PermissionAnswer:
    """An approver that allows every request."""
    return PermissionAnswer(allow=True)
