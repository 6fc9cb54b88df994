"""Assembling a Session: the one composition root, for roots and subagents alike.

A `SessionBlueprint` is what every session of one tree shares, fixed when the root
is built from settings (`agents.opening._assembly`): how to make model clients, the executor
and summarizer ports, the tools (Agent excluded) and their context, permission
rules, hooks, the prompt builder, the event sink, and how a session at any depth
gets its SubagentSpawner (in-process or on Ray: an input, never patched in later).

`assemble(blueprint, spec)` turns it into a Session. A `RootSpec` adds what only the
root has (its id, model and mode, the snapshot store, the goal judge, the trace, the tree
budget); a `ChildSpec` derives a subagent: same executor, summarizer and rules, a
model of the call's choosing, depth + 1, root-only tools removed, the call's
tool_filter, a forked PermissionRuntime (no grants; the calls the user refused above it,
which the request carries, denied without asking), its own budget and no snapshots.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from agents.events import EventSink
from agents.modes import Mode
from agents.permissions import PermissionRuntime
from agents.ports import (
    ModelClient,
    SnapshotStore,
    SubagentRequest,
    SubagentSpawner,
    Summarizer,
    ToolExecutor,
)
from agents.session import Approver, Session, SessionKit, SessionPorts
from agents.settings import SessionSettings, SubagentSettings
from agents.sources import HookRunner, SystemPrompt
from agents.subagents import AgentTool, Budget, child_registry
from agents.tokens import TokenCounter
from agents.trace import TraceWriter
from tools.artifacts import ArtifactStore
from tools.base import Tool, ToolContext
from tools.registry import ToolRegistry

__all__ = ["ChildSpec", "RootSpec", "SessionBlueprint", "SpawnerFactory", "assemble"]


@dataclass
class SessionBlueprint:
    """What every session of a tree shares, fixed when the root session is built."""

    model_for: Callable[[str | None, str], ModelClient]  # (spec override, role) -> client
    executor: ToolExecutor
    tools: list[Tool]  # the root's tools, Agent excluded
    tool_context: ToolContext
    summarizer: Summarizer
    counter: TokenCounter
    settings: SessionSettings
    subagents: SubagentSettings
    permissions: PermissionRuntime
    prompt_for: Callable[[ToolRegistry], SystemPrompt]
    emit: EventSink
    # How a session at any depth gets its spawner: in-process (agents.subagents._spawner), actors on Ray.
    spawner_factory: SpawnerFactory
    artifacts: ArtifactStore | None = None
    child_approver: Approver | None = None  # interactive root: a child's ask reaches the user
    hooks: HookRunner | None = None
    trace: TraceWriter | None = None  # the root's; each child's goes in a directory under its parent's
    keeps_agent: bool = True  # whether the root offers the Agent tool (a bundle may leave it out)
    _ids: itertools.count = field(default_factory=itertools.count)

    def spawner(self, parent_id: str, parent_budget: Budget) -> SubagentSpawner:
        return self.spawner_factory(self, parent_id, parent_budget)

    def __getstate__(self) -> dict:
        # Counters and callbacks that belong to the parent's process stay behind.
        state = dict(self.__dict__)
        state["_ids"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._ids = itertools.count()


SpawnerFactory = Callable[[SessionBlueprint, str, Budget], SubagentSpawner]


@dataclass(frozen=True)
class RootSpec:
    """What only a root session has."""

    session_id: str
    model: ModelClient
    mode: Mode = Mode.DEFAULT
    budget: Budget = field(default_factory=Budget.tree)  # the tree's ledger: every descendant's usage counts here
    snapshots: SnapshotStore | None = None
    judge: ModelClient | None = None  # None: the main model judges the goal
    trace: TraceWriter | None = None


@dataclass(frozen=True)
class ChildSpec:
    """One subagent: the call that asks for it, its id, and its scope in the tree's ledger."""

    request: SubagentRequest
    child_id: str
    budget: Budget


def assemble(bp: SessionBlueprint, spec: RootSpec | ChildSpec) -> Session:
    """A Session from the blueprint: the root's, or a child derived for one Agent call."""
    if isinstance(spec, ChildSpec):
        request = spec.request
        permissions = bp.permissions.fork(scope=f"subagent:{spec.child_id}", refused=request.refused)
        grandchildren = bp.spawner(spec.child_id, spec.budget)
        agent = AgentTool(
            grandchildren,
            depth=request.depth,
            max_depth=bp.subagents.max_depth,
            permissions=permissions,
            path=request.path,
        )
        turns = bp.settings.agent.model_copy(update={"max_turns": bp.subagents.max_turns})
        return _session(
            bp,
            SessionPorts(
                bp.model_for(request.model, f"subagent:{request.description}"),
                bp.executor,
                bp.summarizer,
                spawner=grandchildren,
            ),
            child_registry(bp.tools, request, agent),
            session_id=spec.child_id,
            settings=bp.settings.model_copy(update={"agent": turns}),
            budget=spec.budget,
            permissions=permissions,
            is_child=True,
            approver=bp.child_approver,
            path=request.path,
            trace=(
                bp.trace.for_child(spec.child_id, request.description, request.path, request.depth)
                if bp.trace is not None
                else None
            ),
        )
    spawner = bp.spawner(spec.session_id, spec.budget) if bp.keeps_agent else None
    tools = (
        [*bp.tools, AgentTool(spawner, depth=0, max_depth=bp.subagents.max_depth, permissions=bp.permissions)]
        if spawner
        else bp.tools
    )
    return _session(
        bp,
        SessionPorts(spec.model, bp.executor, bp.summarizer, snapshots=spec.snapshots, spawner=spawner),
        ToolRegistry(tools),
        session_id=spec.session_id,
        settings=bp.settings,
        budget=spec.budget,
        permissions=bp.permissions,
        mode=spec.mode,
        judge=spec.judge,
        trace=spec.trace,
    )


def _session(
    bp: SessionBlueprint,
    ports: SessionPorts,
    registry: ToolRegistry,
    *,
    session_id: str,
    settings: SessionSettings,
    budget: Budget,
    permissions: PermissionRuntime,
    is_child: bool = False,
    approver: Approver | None = None,
    path: tuple[str, ...] = (),
    mode: Mode = Mode.DEFAULT,
    judge: ModelClient | None = None,
    trace: TraceWriter | None = None,
) -> Session:
    kit = SessionKit(
        registry=registry,
        tool_context=bp.tool_context,
        artifacts=bp.artifacts,
        counter=bp.counter,
        emit=bp.emit,
        trace=trace,
        permissions=permissions,
        approver=approver,
        judge=judge,
        budget=budget,
        is_child=is_child,
        hooks=bp.hooks,
        path=path,
    )
    return Session(
        ports, kit, system_prompt=bp.prompt_for(registry), settings=settings, session_id=session_id, mode=mode
    )
