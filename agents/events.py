"""The event stream: what a run reports, one JSON object per line with `--json`.

The schema is stable and versioned (`EVENT_SCHEMA_VERSION` in session_started);
later capabilities add event types, never change existing fields.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from agents.compaction import CompactionEvent
from agents.ports import EventSink, Usage
from agents.subagents import EvidenceRef

__all__ = [
    "EVENT_SCHEMA_VERSION",
    "EndReason",
    "AssistantText",
    "CompactionEvent",
    "Event",
    "EventSink",
    "GoalVerdict",
    "ModeChanged",
    "Notice",
    "SnapshotSaved",
    "PermissionDecided",
    "PermissionRequested",
    "SubagentFinished",
    "SubagentStarted",
    "ModelCall",
    "SessionEnded",
    "SessionStarted",
    "ToolCall",
    "ToolResult",
    "EVENT_ADAPTER",
    "on_path",
]

EVENT_SCHEMA_VERSION = 1


class _EventBase(BaseModel):
    session_id: str
    ts: float = Field(default_factory=time.time, description="Unix time the event was made.")
    path: list[str] = Field(
        default_factory=list,
        description="Where the emitting session sits in its tree: the Agent calls' descriptions from the root "
        "down to it; [] for the root.",
    )


class SessionStarted(_EventBase):
    type: Literal["session_started"] = "session_started"
    schema_version: int = EVENT_SCHEMA_VERSION
    model: str
    cwd: str


class ModelCall(_EventBase):
    type: Literal["model_call"] = "model_call"
    turn: int = Field(description="1-based model call number within the outer turn.")
    estimated_input_tokens: int = Field(description="Workingset's estimate of the request.")
    usage: Usage = Field(description="What the provider reported.")
    stop_reason: str
    duration_ms: float
    cost_usd: float | None = Field(None, description="At the model's prices; None when they are not known.")
    pricing: str = Field("unknown", description="Where the prices came from: list, configured, scripted or unknown.")


class ToolCall(_EventBase):
    type: Literal["tool_call"] = "tool_call"
    tool_use_id: str
    name: str
    input: dict[str, Any]


class ToolResult(_EventBase):
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    name: str
    is_error: bool
    content: str = Field(description="The result text as the model sees it.")
    duration_ms: float


class AssistantText(_EventBase):
    type: Literal["assistant_text"] = "assistant_text"
    text: str


class PermissionRequested(_EventBase):
    """A call is parked (or being asked inline) until the user answers."""

    type: Literal["permission_requested"] = "permission_requested"
    tool_use_id: str
    name: str
    input: dict[str, Any]
    reason: str
    preview: str | None = Field(
        default=None,
        description="For a file change, a bounded unified diff of it (Edit: old_string to new_string; "
        "Write: the current file to the new content). Untrusted text: renderers escape it.",
    )


class PermissionDecided(_EventBase):
    type: Literal["permission_decided"] = "permission_decided"
    tool_use_id: str
    name: str
    effect: Literal["allow", "deny", "ask"]
    source: str = Field(description="rule, grant, mode, headless or user.")
    reason: str
    rule: str | None = None


class GoalVerdict(_EventBase):
    type: Literal["goal_verdict"] = "goal_verdict"
    condition: str
    verdict: Literal["met", "not_met", "error"]
    reason: str
    auto_turns: int


class ModeChanged(_EventBase):
    type: Literal["mode_changed"] = "mode_changed"
    mode: str


class SubagentStarted(_EventBase):
    type: Literal["subagent_started"] = "subagent_started"
    child_session_id: str
    description: str
    depth: int
    child_path: list[str] = Field(
        default_factory=list, description="The child's path (its parent's path + description)."
    )


class SubagentFinished(_EventBase):
    type: Literal["subagent_finished"] = "subagent_finished"
    child_session_id: str
    description: str
    reason: str
    is_error: bool
    usage: Usage
    cost_usd: float
    model_calls: int
    unpriced_calls: int = Field(0, description="Calls of the subagent whose price is unknown (not in cost_usd).")
    child_path: list[str] = Field(
        default_factory=list, description="The child's path (its parent's path + description)."
    )
    evidence: list[EvidenceRef] = Field(default_factory=list, description="What the child's result refers to.")


class SnapshotSaved(_EventBase):
    """The session's state after an outer turn was (or could not be) stored."""

    type: Literal["snapshot"] = "snapshot"
    saved: bool
    version: str | None = None
    reason: str
    error: str | None = None


class Notice(_EventBase):
    """Something the user should know that is not an error: e.g. state dropped on resume."""

    type: Literal["notice"] = "notice"
    text: str


# Why a session ended: a turn's own reasons (agents.session._loop.TurnReason), an error, or the user.
EndReason = Literal[
    "end_turn",
    "turn_limit",
    "error",
    "user_exit",
    "permission",
    "judge_error",
    "goal_limit",
    "budget",
    "truncated",
    "refusal",
    "permission_denied",
]


class SessionEnded(_EventBase):
    type: Literal["session_ended"] = "session_ended"
    reason: EndReason
    final_text: str
    turns: int
    usage: Usage
    error: str | None = None


Event = Annotated[
    SessionStarted
    | ModelCall
    | ToolCall
    | ToolResult
    | AssistantText
    | CompactionEvent
    | PermissionRequested
    | PermissionDecided
    | GoalVerdict
    | ModeChanged
    | SubagentStarted
    | SubagentFinished
    | SnapshotSaved
    | Notice
    | SessionEnded,
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def on_path(sink: EventSink, path: tuple[str, ...]) -> EventSink:
    """`sink` for a session at `path` in its tree: each event it emits carries the path."""
    if not path:
        return sink
    where = list(path)

    def emit(event: BaseModel) -> None:
        sink(event.model_copy(update={"path": where}) if "path" in type(event).model_fields else event)

    return emit


def discard_events(event: BaseModel) -> None:
    """An EventSink that drops everything."""
