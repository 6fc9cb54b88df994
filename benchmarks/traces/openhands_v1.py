"""OpenHands V1 agent-SDK `output.jsonl` (one run per line).

The run record keeps V0's top level (`instance_id`, `instruction`, `metadata.llm.model`,
`history`, `test_result`), but each history event is typed by `kind`: an `ActionEvent`
carries `tool_name`, `tool_call_id`, `tool_call.arguments`, `thought` (text parts) and
`llm_response_id`; the `ObservationEvent` with the same `tool_call_id` carries the result in
`observation` (`output`, or `content` / `message`). Actions of one model response share
`llm_response_id` and become one assistant message. A `finish` action is the run's closing
text, as in the V0 loader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.messages import ToolResultBlock, ToolUseBlock

from .model import (
    ConversationBuilder,
    Trace,
    load_checked,
    object_at,
    parse_arguments,
    text_of,
    unix_time,
    usage_record,
)

__all__ = ["SOURCE", "detect", "load_openhands_v1", "parse"]

SOURCE = "openhands-v1"

_TEXT_TOOLS = {"finish", "think"}


def _is_run(doc: Any) -> bool:
    history = doc.get("history") if isinstance(doc, dict) else None
    return (
        isinstance(history, list)
        and bool(history)
        and all(isinstance(e, dict) and isinstance(e.get("kind"), str) for e in history)
        and any(e["kind"] == "ActionEvent" for e in history)
    )


def detect(docs: list[Any]) -> bool:
    return bool(docs) and all(_is_run(d) for d in docs)


def _parts(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in value).strip()
    return text_of(value).strip()


def _message_text(event: dict[str, Any]) -> str:
    message = object_at(event, "llm_message")
    return _parts(message.get("content"))


def _result_text(observation: Any) -> str:
    if not isinstance(observation, dict):
        return text_of(observation)
    for key in ("output", "content", "message", "text"):
        if observation.get(key) is not None:
            return _parts(observation[key])
    return ""


class _Walk:
    def __init__(self, events: list[dict[str, Any]], instruction: str) -> None:
        task = next((e for e in events if e.get("kind") == "MessageEvent" and e.get("source") == "user"), None)
        self.task_event = task
        self.builder = ConversationBuilder(_message_text(task) if task else instruction)
        self.results = {e.get("tool_call_id"): e for e in events if e.get("kind") == "ObservationEvent"}
        self.group: list[dict[str, Any]] = []
        self.finished = False

    def flush(self) -> None:
        if not self.group:
            return
        thoughts, uses, results = [], [], []
        for action in self.group:
            thought = _parts(action.get("thought")) or _parts(action.get("reasoning_content"))
            if thought and thought not in thoughts:
                thoughts.append(thought)
            if action.get("tool_name") in _TEXT_TOOLS:
                self.finished |= action.get("tool_name") == "finish"
                said = _parts(
                    (action.get("action") or {}).get("message") or (action.get("action") or {}).get("thought")
                )
                thoughts.extend([said] if said and said not in thoughts else [])
                continue
            uses.append(self._use(action))
            observation = self.results.get(action.get("tool_call_id"))
            if observation is not None:
                body = observation.get("observation")
                error = isinstance(body, dict) and (
                    bool(body.get("error")) or body.get("kind") == "AgentErrorObservation"
                )
                results.append(ToolResultBlock(tool_use_id=uses[-1].id, content=_result_text(body), is_error=error))
        first = self.group[0]
        self.builder.step(
            "\n\n".join(thoughts),
            uses,
            results,
            usage_record((first.get("metrics") or {}).get("usage"), unix_time(first.get("timestamp"))),
        )
        self.group = []

    def _use(self, action: dict[str, Any]) -> ToolUseBlock:
        call = object_at(action, "tool_call")
        arguments = parse_arguments(call.get("arguments"))
        if not arguments and isinstance(action.get("action"), dict):
            arguments = {k: v for k, v in action["action"].items() if k != "kind"}
        return ToolUseBlock(
            id=self.builder.unique_id(
                action.get("tool_call_id") or call.get("id"), f"step-{len(self.builder.messages)}"
            ),
            name=str(action.get("tool_name") or call.get("name") or "unknown"),
            input=arguments,
        )

    def event(self, e: dict[str, Any]) -> None:
        kind = e.get("kind")
        if kind == "ActionEvent":
            if self.group and e.get("llm_response_id") != self.group[-1].get("llm_response_id"):
                self.flush()
            self.group.append(e)
            return
        if kind == "MessageEvent" and e is not self.task_event:
            self.flush()
            text = _message_text(e)
            if e.get("source") == "user":
                self.builder.user_text(text)
            elif text:
                self.builder.step(text)


def parse(docs: list[Any], path: str | Path) -> list[Trace]:
    traces = []
    for n, doc in enumerate(docs):
        events = doc["history"]
        walk = _Walk(events, text_of(doc.get("instruction")))
        for e in events:
            walk.event(e)
        walk.flush()
        system = next(
            (
                _parts(
                    (e.get("system_prompt") or {}).get("text")
                    if isinstance(e.get("system_prompt"), dict)
                    else e.get("system_prompt")
                )
                for e in events
                if e.get("kind") == "SystemPromptEvent"
            ),
            "",
        )
        metadata = doc.get("metadata") or {}
        traces.append(
            Trace(
                source=SOURCE,
                task_id=str(doc.get("instance_id") or f"run-{n}"),
                model=(metadata.get("llm") or {}).get("model") or (metadata.get("llm_config") or {}).get("model"),
                final_status="finish" if walk.finished else (doc.get("error") or "no finish"),
                system=system,
                messages=walk.builder.messages,
                final_patch=(doc.get("test_result") or {}).get("git_patch") or None,
                path=str(path),
                calls=walk.builder.calls,
            )
        )
    return traces


def load_openhands_v1(path: str | Path) -> list[Trace]:
    return load_checked(path, detect, parse, what="an OpenHands V1 SDK output.jsonl")
