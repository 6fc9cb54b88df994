"""The session's state: the one mutable record the loop advances, and what a snapshot keeps.

`SessionState` holds the typed conversation plus control state (mode, goal, a parked
tool batch, usage, counters). The loop advances one instance in place; a snapshot is
a copy of it stamped with the environment it was taken in (`agents.snapshots._persistence`), and
a resume copies a loaded one back. The system prompt, tool catalog, skills, memory
index, MCP tools and model are NOT kept: a resumed session rebuilds them from the
environment it resumes in.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar, overload

from pydantic import BaseModel, Field, model_validator

from agents.messages import Message, ToolResultBlock
from agents.modes import Mode
from agents.snapshots import upgrade_messages, upgrade_result
from agents.usage import Usage
from tools.host_git import repository_head

__all__ = [
    "READABLE_SCHEMAS",
    "SCHEMA_VERSION",
    "GoalState",
    "PendingState",
    "PermissionState",
    "SessionState",
    "StateField",
    "git_head",
    "settings_fingerprint",
]

# 2: compaction markers are typed fields of the message model. 1: they were plain
# text; a schema-1 state is upgraded when it is loaded (`agents.snapshots._upgrade`).
SCHEMA_VERSION = 2
READABLE_SCHEMAS = (1, 2)


class GoalState(BaseModel):
    """A goal: its condition, where its evidence starts, and how the judge has ruled."""

    condition: str
    since_index: int  # first message of the evidence (kept current across compaction)
    auto_turns: int = 0
    status: Literal["active", "met"] = "active"
    last_reason: str | None = None


class PendingState(BaseModel):
    """One reply's tool calls while their permissions are being settled: which calls of
    the last reply are settled (with their results), allowed, or asking (and why).
    Calls are named by tool_use id; the tool batch prepares them again from the reply."""

    order: list[str]
    results: list[ToolResultBlock] = Field(default_factory=list)
    allowed: list[str] = Field(default_factory=list)
    asks: list[str] = Field(default_factory=list)
    reasons: dict[str, str] = Field(default_factory=dict)
    # The calls started and not settled yet: saved with them, a version tells a resume
    # which calls may or may not have taken effect (a resume never runs them again).
    running: list[str] = Field(default_factory=list)
    # When each call was first seen (perf_counter), for the durations events report;
    # meaningless in another process, so never saved.
    started: dict[str, float] = Field(default_factory=dict, exclude=True)

    def settle(self, result: ToolResultBlock) -> None:
        """Record a call's final result (replacing one recorded before)."""
        for i, known in enumerate(self.results):
            if known.tool_use_id == result.tool_use_id:
                self.results[i] = result
                return
        self.results.append(result)

    def results_in_order(self) -> list[ToolResultBlock]:
        by_id = {r.tool_use_id: r for r in self.results}
        return [by_id[i] for i in self.order]


class PermissionState(BaseModel):
    """Grants are only meaningful under the rules they were given with; refusals always
    hold (they only make a child deny more)."""

    config_fingerprint: str
    grants: list[tuple[str, str | None]] = Field(default_factory=list, description="(tool, exact subject)")
    refused: list[tuple[str, str | None]] = Field(
        default_factory=list, description="Calls the user answered no to (tool, exact subject): children deny them."
    )


StartSource = Literal["startup", "resume", "clear"]


class SessionState(BaseModel):
    """The session as the loop advances it. The first group says where a snapshot was
    taken (stamped when it is saved); the rest is the state itself."""

    schema_version: int = SCHEMA_VERSION
    session_id: str
    cwd: str
    git_head: str | None = None
    model: str
    settings_fingerprint: str = ""
    saved_at: float = Field(default_factory=time.time)
    reason: str = Field("turn", description="What ended the turn that wrote this version.")
    permissions: PermissionState | None = None
    tree_tokens: int = Field(0, description="The tree budget's figures when saved (live in the Budget).")
    tree_cost_usd: float = 0.0

    conversation: list[Message] = Field(default_factory=list)
    mode: Mode = Mode.DEFAULT
    goal: GoalState | None = None
    pending: PendingState | None = None
    usage: Usage = Field(default_factory=Usage)
    model_calls: int = Field(0, description="Model calls over the session's life.")
    turn_calls: int = Field(0, description="Model calls in the current outer turn.")
    final_text: str = Field("", description="The last assistant text of the current outer turn.")
    cleared_from: str | None = Field(
        None, description="The version current when /clear emptied the conversation (`/resume` returns to it)."
    )
    unanswered: list[str] = Field(
        default_factory=list,
        description="Tools of the current outer turn's calls denied because nobody could answer their ask.",
    )
    turns: int = Field(0, description="Outer turns begun over the session's life.")
    in_turn: bool = Field(
        False, description="A turn is under way: a version saved around a tool batch, which a resume continues."
    )
    # Not saved (a resumed session starts them afresh): why SessionStart fires before
    # the next turn (None: it has fired; a restore sets "resume"), the priced cost and
    # the calls without a price since the session was opened, and the stop-reason
    # bookkeeping of the current turn.
    start_source: StartSource | None = Field("startup", exclude=True)
    cost_usd: float = Field(0.0, exclude=True, description="Of the calls whose price is known.")
    unpriced_calls: int = Field(0, exclude=True)
    cut_in_a_row: int = Field(0, exclude=True, description="Replies cut off at max_tokens just before this one.")
    resuming_paused: bool = Field(False, exclude=True, description="The next reply continues the last (paused) one.")

    @model_validator(mode="after")
    def _upgrade_schema_1(self) -> SessionState:
        if self.schema_version < 2:
            self.conversation = upgrade_messages(self.conversation)
            if self.pending is not None:
                self.pending.results = [upgrade_result(r) for r in self.pending.results]
            self.schema_version = SCHEMA_VERSION
        return self

    def copy_state(self, **update: Any) -> SessionState:
        """A copy that shares no mutable part with this one (messages are immutable, so
        the conversation's list is copied, not its messages); `update` sets fields."""
        fresh: dict[str, Any] = {
            "conversation": list(self.conversation),
            "goal": self.goal.model_copy() if self.goal is not None else None,
            "pending": self.pending.model_copy(deep=True) if self.pending is not None else None,
            "usage": self.usage.model_copy(),
        }
        return self.model_copy(update={**fresh, **update})

    def assign(self, other: SessionState) -> None:
        """Take every field of `other` (a resume continues in the same state object)."""
        for name in type(self).model_fields:
            setattr(self, name, getattr(other, name))

    def header(self) -> dict[str, Any]:
        """Everything but the conversation (which is stored content-addressed)."""
        return self.model_dump(mode="json", exclude={"conversation"})


def settings_fingerprint(values: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:16]


def git_head(cwd: Path) -> str | None:
    """The commit checked out in the repository holding `cwd`, read from `.git/` directly
    (a snapshot is taken every turn; a `git` process each time would cost more than the
    snapshot itself) and never through a link out of it; see tools.host_git."""
    head = repository_head(cwd)
    return head.commit if head is not None else None


class HoldsState(Protocol):
    state: SessionState


T = TypeVar("T")


class StateField(Generic[T]):
    """An attribute (of a Session) that reads and writes a field of the holder's state."""

    def __init__(self, field: str):
        self.field = field

    @overload
    def __get__(self, holder: None, owner: type) -> StateField[T]: ...

    @overload
    def __get__(self, holder: HoldsState, owner: type) -> T: ...

    def __get__(self, holder: HoldsState | None, owner: type) -> StateField[T] | T:
        return self if holder is None else getattr(holder.state, self.field)

    def __set__(self, holder: HoldsState, value: T) -> None:
        setattr(holder.state, self.field, value)
