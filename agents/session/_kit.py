"""What a Session is given: the five ports, and the kit of collaborators that are not ports.

`SessionPorts` holds exactly the five ways the agent reaches the world (model, tool
executor, summarizer, snapshot store, subagent spawner); the same loop runs with
in-process implementations or Ray ones. `SessionKit` holds the session's own
collaborators: its tools and their context, permission rules, hooks, the record of
clipped results, token counting, budgets, the trace and the event sink. Both are
fixed when the session is assembled (`agents.opening._blueprint.assemble`) and never patched
afterwards.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel

from agents.compaction import ExtractiveSummarizer
from agents.events import EventSink, Notice, PermissionRequested, discard_events, on_path
from agents.permissions import PermissionRuntime
from agents.ports import ModelClient, SnapshotStore, SubagentSpawner, Summarizer, ToolExecutor
from agents.sources import HookEvent, HookResult, HookRunner
from agents.subagents import Budget
from agents.tokens import CharRatioEstimator, TokenCounter
from agents.trace import TraceWriter
from tools.artifacts import ArtifactStore
from tools.base import ToolContext
from tools.registry import ToolRegistry

__all__ = ["Approver", "PermissionAnswer", "SessionKit", "SessionPorts", "notify_hooks"]


class PermissionAnswer(BaseModel):
    allow: bool
    always: bool = False


class Approver(Protocol):
    """Answers a subagent's permission question while the tree runs (a seam swapped on
    Ray: agents.ports lists them)."""

    def __call__(self, request: PermissionRequested, /) -> Awaitable[PermissionAnswer]: ...


@dataclass(frozen=True)
class SessionPorts:
    """The five ports: everything the loop does outside its own process goes through one."""

    model: ModelClient
    executor: ToolExecutor
    summarizer: Summarizer = field(default_factory=ExtractiveSummarizer)
    snapshots: SnapshotStore | None = None  # None for subagents: they never write snapshots
    spawner: SubagentSpawner | None = None  # what the Agent tool runs children with; None: no Agent tool


def _bypass() -> PermissionRuntime:
    return PermissionRuntime.from_texts(mode="bypass")


@dataclass(frozen=True)
class SessionKit:
    """The session's collaborators that are not ports (they run in its own process)."""

    registry: ToolRegistry
    tool_context: ToolContext
    artifacts: ArtifactStore | None = None
    counter: TokenCounter = field(default_factory=CharRatioEstimator)
    emit: EventSink = discard_events
    trace: TraceWriter | None = None
    permissions: PermissionRuntime = field(default_factory=_bypass)
    approver: Approver | None = None  # answers asks inline; None at the root means "park"
    judge: ModelClient | None = None  # the goal judge; None: the main model judges
    budget: Budget | None = None
    is_child: bool = False
    hooks: HookRunner | None = None
    path: tuple[str, ...] = ()  # a subagent's place in its tree; its events carry it

    def __post_init__(self) -> None:
        if self.path:
            object.__setattr__(self, "emit", on_path(self.emit, self.path))
        if self.artifacts is not None and self.tool_context.artifacts is None:
            # Recall reads the same record that clipping and clearing write.
            object.__setattr__(self, "tool_context", dataclasses.replace(self.tool_context, artifacts=self.artifacts))


async def notify_hooks(
    kit: SessionKit, session_id: str, event: HookEvent, payload: dict[str, Any], *, tool_name: str | None = None
) -> HookResult | None:
    """Run the hooks for `event`; their warnings and messages become notices."""
    hooks = kit.hooks
    if hooks is None or not hooks.matching(event, tool_name):
        return None
    result = await hooks.run(event, payload)
    for text in [*result.warnings, *result.messages]:
        kit.emit(Notice(session_id=session_id, text=f"{event.value} hook: {text}"))
    return result
