"""OpenHands evaluation `output.jsonl` (one run per line).

Two history layouts:
- event format: events with `id`/`source`; an action (`action` + `args` +
  `tool_call_metadata`) is answered by the observation whose `cause` is the action's id (or
  that shares its tool_call_id). `system` gives the system prompt, the first user `message`
  the task; `recall` is workspace bookkeeping the model never sees as a turn, so it is dropped.
- older flat format: action dicts each followed by their observation dict (or
  `[action, observation]` pairs), with fields at the top level instead of under `args`.
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

__all__ = ["SOURCE", "detect", "load_openhands", "parse"]

SOURCE = "openhands"

# Actions that are speech, not tool calls, when no observation answers them.
_TEXT_ACTIONS = {"message", "think", "finish"}
# Fields of a flat-format action that are bookkeeping rather than tool input.
# fmt: off
_NOT_INPUT = {
    "action", "thought", "source", "id", "timestamp", "message", "keep_prompt", "is_confirmed",
    "action_risk", "security_risk", "kernel_init_code", "images_urls", "wait_for_response",
    "impl_source", "is_input", "blocking", "confirmation_state", "tool_call_metadata", "args",
}
# fmt: on


def _is_run(doc: Any) -> bool:
    if not isinstance(doc, dict) or "trajectory" in doc or not isinstance(doc.get("history"), list):
        return False
    items = [i for e in doc["history"] for i in (e if isinstance(e, list) else [e])]
    return bool(items) and all(isinstance(i, dict) and ("action" in i or "observation" in i) for i in items)


def detect(docs: list[Any]) -> bool:
    return bool(docs) and all(_is_run(d) for d in docs)


def parse(docs: list[Any], path: str | Path) -> list[Trace]:
    return [_parse_run(doc, path, n) for n, doc in enumerate(docs)]


def load_openhands(path: str | Path) -> list[Trace]:
    return load_checked(path, detect, parse, what="an OpenHands output.jsonl")


def _parse_run(doc: dict[str, Any], path: str | Path, n: int) -> Trace:
    history = doc["history"]
    event_format = all(isinstance(e, dict) and "id" in e for e in history)
    events = history if event_format else [i for e in history for i in (e if isinstance(e, list) else [e])]
    system = next((_args(e).get("content", "") for e in events if e.get("action") == "system"), "")
    walk = _walk_events if event_format else _walk_flat
    builder, finished = walk(events, doc.get("instruction") or "")
    metadata = doc.get("metadata") or {}
    patch = (doc.get("test_result") or {}).get("git_patch") or doc.get("git_patch") or None
    issue = doc.get("issue") or {}
    task_id = doc.get("instance_id") or (
        f"{issue.get('owner')}/{issue.get('repo')}#{issue.get('number')}" if issue else f"run-{n}"
    )
    return Trace(
        source=SOURCE,
        task_id=str(task_id),
        model=(metadata.get("llm_config") or {}).get("model"),
        final_status="finish" if finished else (doc.get("error") or "no finish"),
        system=text_of(system),
        messages=builder.messages,
        final_patch=patch,
        path=str(path),
        calls=builder.calls,
    )


def _args(e: dict[str, Any]) -> dict[str, Any]:
    return object_at(e, "args", e)


def _is_user_message(e: dict[str, Any]) -> bool:
    return e.get("action") == "message" and e.get("source", "user") == "user"


def _walk_events(events: list[dict[str, Any]], instruction: str) -> tuple[ConversationBuilder, bool]:
    actions = {e["id"]: e for e in events if "action" in e}
    by_cause, by_call = _index_observations(events)
    task_event = next((e for e in events if _is_user_message(e)), None)
    builder = ConversationBuilder(text_of(_args(task_event).get("content")) if task_event else instruction)
    finished = False
    group: list[tuple[dict[str, Any], dict[str, Any] | None]] = []

    def flush() -> None:
        if group:
            _emit(builder, group)
            group.clear()

    for e in events:
        if e is task_event or e.get("action") in ("system", "recall"):
            continue
        if "observation" in e:
            cause = actions.get(e.get("cause"))
            if cause is None and e.get("observation") != "recall":
                # An observation no recorded action caused: e.g. an error for a malformed tool
                # call that OpenHands rejected before it became an action. The model saw it.
                flush()
                builder.user_text(text_of(e.get("content") or e.get("message")))
            continue
        finished |= e.get("action") == "finish"
        if _is_user_message(e):
            flush()
            builder.user_text(text_of(_args(e).get("content")))
            continue
        meta = e.get("tool_call_metadata") or {}
        obs = by_cause.get(e["id"]) or by_call.get(meta.get("tool_call_id") or "")
        # Actions from one model response (total_calls_in_response > 1) form one step.
        if group and not _same_response(group[-1][0], e):
            flush()
        group.append((e, obs))
    flush()
    return builder, finished


def _index_observations(events: list[dict[str, Any]]) -> tuple[dict[Any, Any], dict[str, Any]]:
    """Observations by the id of the action that caused them, and by tool_call_id."""
    by_cause: dict[Any, dict[str, Any]] = {}
    by_call: dict[str, dict[str, Any]] = {}
    for e in events:
        if "observation" not in e:
            continue
        if e.get("cause") is not None:
            by_cause.setdefault(e["cause"], e)
        call_id = (e.get("tool_call_metadata") or {}).get("tool_call_id")
        if call_id:
            by_call.setdefault(call_id, e)
    return by_cause, by_call


def _response_id(e: dict[str, Any]) -> str | None:
    meta = e.get("tool_call_metadata") or {}
    if (meta.get("total_calls_in_response") or 1) <= 1:
        return None
    return (meta.get("model_response") or {}).get("id") or None


def _same_response(a: dict[str, Any], b: dict[str, Any]) -> bool:
    rid = _response_id(a)
    return rid is not None and rid == _response_id(b)


def _walk_flat(events: list[dict[str, Any]], instruction: str) -> tuple[ConversationBuilder, bool]:
    task_at = next((i for i, e in enumerate(events) if e.get("action") == "message"), None)
    task = text_of(events[task_at].get("content")) if task_at is not None else instruction
    builder, finished = ConversationBuilder(task), False
    i = 0 if task_at is None else task_at + 1
    while i < len(events):
        e = events[i]
        nxt = events[i + 1] if i + 1 < len(events) else None
        obs = nxt if nxt is not None and "observation" in nxt and "action" not in nxt else None
        i += 2 if obs is not None else 1
        if obs is not None and obs.get("observation") == "null":
            obs = None  # the pair layout pads actions that had no observation with a null one
        if "action" not in e:
            builder.user_text(text_of(e.get("content")))
            continue
        finished |= e.get("action") == "finish"
        if e.get("action") == "message" and e.get("source") == "user":
            builder.user_text(text_of(e.get("content")))
        else:
            _emit(builder, [(e, obs)])
    return builder, finished


def _emit(builder: ConversationBuilder, group: list[tuple[dict[str, Any], dict[str, Any] | None]]) -> None:
    """One model call: the thought once, then a tool_use per action that was executed."""
    thoughts: list[str] = []
    uses: list[ToolUseBlock] = []
    results: list[ToolResultBlock] = []
    for action, obs in group:
        args = _args(action)
        thought = text_of(args.get("thought"))
        if thought and thought not in thoughts:
            thoughts.append(thought)
        if obs is None and action.get("action") in _TEXT_ACTIONS:
            said = args.get("final_thought") or args.get("content") or ""
            thoughts.extend([text_of(said)] if said and said not in thoughts else [])
            continue
        meta = action.get("tool_call_metadata") or {}
        use = ToolUseBlock(
            id=builder.unique_id(meta.get("tool_call_id"), f"step-{len(builder.messages)}-{len(uses)}"),
            name=meta.get("function_name") or action.get("action") or "unknown",
            input=_tool_input(action, meta),
        )
        uses.append(use)
        if obs is not None:
            is_error = obs.get("observation") == "error"
            content = obs.get("content") if "content" in obs else obs.get("message")
            results.append(ToolResultBlock(tool_use_id=use.id, content=text_of(content), is_error=is_error))
    first = group[0][0]
    response = (first.get("tool_call_metadata") or {}).get("model_response") or {}
    builder.step(
        "\n\n".join(thoughts), uses, results, usage_record(response.get("usage"), unix_time(first.get("timestamp")))
    )


def _tool_input(action: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """The arguments the model wrote, from the recorded response when it is there; else the
    action's own fields minus OpenHands bookkeeping."""
    call_id = meta.get("tool_call_id")
    for choice in (meta.get("model_response") or {}).get("choices") or []:
        for call in (choice.get("message") or {}).get("tool_calls") or []:
            if call.get("id") == call_id:
                return parse_arguments((call.get("function") or {}).get("arguments"))
    args = _args(action)
    return {k: v for k, v in args.items() if k not in _NOT_INPUT}
