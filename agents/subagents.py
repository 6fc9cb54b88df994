"""Subagents: the Agent tool and the in-process SubagentSpawner.

A child is derived from its parent: same model (unless the call names one), cwd,
executor, summarizer and authorization rules; depth + 1; a NEW conversation holding
only the prompt; root-only tools removed; the call's tool_filter applied; its own
Tool Catalog; a forked PermissionRuntime (rules and denials, no grants, nothing
pending); no snapshots. Only its final text returns, as one tool result. The same
derivation runs inside a Ray actor in cluster/, behind the same port.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from agents.budgets import Budget
from agents.compaction.ledger import usage_cost_usd
from agents.config import SessionSettings, SubagentSettings
from agents.errors import ModelError
from agents.events import EventSink, SubagentFinished, SubagentStarted
from agents.hooks import HookEvent, HookRunner
from agents.permissions import PermissionRuntime
from agents.ports import (
    ModelClient,
    SubagentRequest,
    SubagentResult,
    SubagentSpawner,
    Summarizer,
    ToolExecutor,
)
from agents.session_kit import Approver, SessionKit, SessionPorts
from agents.system_prompt import SystemPrompt
from agents.tokens import TokenCounter
from tools.artifacts import ArtifactStore
from tools.base import ExecutionDomain, Tool, ToolContext, ToolError, ToolOutput
from tools.registry import ToolRegistry

__all__ = [
    "AgentInput",
    "AgentTool",
    "InProcessSpawner",
    "SessionBlueprint",
    "build_child_session",
    "child_registry",
    "run_child",
]


class AgentInput(BaseModel):
    """Input for Agent."""

    model_config = ConfigDict(extra="forbid")

    description: str = Field(min_length=1, description="A short name for the task (3-7 words).")
    prompt: str = Field(
        min_length=1,
        description="The complete task. The subagent sees nothing of this conversation, so include "
        "every path, constraint and question it needs, and say what its final answer should contain.",
    )
    tool_filter: list[str] | None = Field(
        None, description="Only these tools (by name) are given to the subagent; omit for all it may have."
    )
    model: str | None = Field(None, description="A model spec for the subagent; omit to use this session's model.")


class AgentTool:
    name = "Agent"
    description = (
        "Start a subagent on a separate, fresh conversation to research or carry out a "
        "self-contained task; only its final answer comes back. Several Agent calls in one "
        "reply run in parallel. Use it for broad searches and independent pieces of work."
    )
    input_model = AgentInput
    is_read_only = False
    execution_domain = ExecutionDomain.DELEGATED_RUNTIME
    root_only = False

    def __init__(self, spawner: SubagentSpawner, *, depth: int, max_depth: int):
        self.spawner = spawner
        self.depth = depth
        self.max_depth = max_depth

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        assert isinstance(args, AgentInput)
        if self.depth + 1 > self.max_depth:
            raise ToolError(
                f"Subagent depth limit reached (max depth {self.max_depth}); do this work directly "
                "with your own tools instead of starting another subagent."
            )
        request = SubagentRequest(
            description=args.description,
            prompt=args.prompt,
            depth=self.depth + 1,
            tool_filter=tuple(args.tool_filter) if args.tool_filter is not None else None,
            model=args.model,
        )
        result = await self.spawner.spawn(request)
        return ToolOutput(content=result.text, is_error=result.is_error)


@dataclass
class SessionBlueprint:
    """What a child inherits from the root, fixed when the root session is built."""

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
    artifacts: ArtifactStore | None = None
    child_approver: Approver | None = None  # interactive root: a child's ask reaches the user
    hooks: HookRunner | None = None
    # How a session at any depth gets its spawner: in-process here, actors on Ray.
    spawner_factory: Callable[[SessionBlueprint, str, Budget], SubagentSpawner] | None = None
    _ids: itertools.count = field(default_factory=itertools.count)

    def spawner(self, parent_id: str, parent_budget: Budget) -> SubagentSpawner:
        factory = self.spawner_factory or (lambda bp, pid, budget: InProcessSpawner(bp, parent_id=pid, parent_budget=budget))
        return factory(self, parent_id, parent_budget)

    def __getstate__(self) -> dict:
        # Counters and callbacks that belong to the parent's process stay behind.
        state = dict(self.__dict__)
        state["_ids"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._ids = itertools.count()


def child_registry(tools: list[Tool], request: SubagentRequest, agent_tool: Tool | None) -> ToolRegistry:
    """Root-only tools removed, tool_filter applied, an Agent tool for the next level."""
    offered = [t for t in tools if not t.root_only]
    if agent_tool is not None:
        offered.append(agent_tool)
    if request.tool_filter is None:
        return ToolRegistry(offered)
    names = {t.name for t in offered}
    unknown = sorted(set(request.tool_filter) - names)
    if unknown:
        raise ToolError(f"tool_filter names tools a subagent cannot have: {', '.join(unknown)}; available: {', '.join(sorted(names))}")
    return ToolRegistry(t for t in offered if t.name in request.tool_filter)


class InProcessSpawner:
    """The SubagentSpawner port in one process: the child loop runs as a coroutine."""

    def __init__(self, blueprint: SessionBlueprint, *, parent_id: str, parent_budget: Budget):
        self.blueprint = blueprint
        self.parent_id = parent_id
        self.parent_budget = parent_budget

    async def spawn(self, request: SubagentRequest) -> SubagentResult:
        child_id = f"{self.parent_id}.{next(self.blueprint._ids)}"
        return await run_child(self.blueprint, request, parent_id=self.parent_id, child_id=child_id, parent_budget=self.parent_budget)


def build_child_session(bp: SessionBlueprint, request: SubagentRequest, *, child_id: str, budget: Budget):
    """The child Session, derived from the blueprint (see the module docstring)."""
    from agents.loop import Session  # the loop imports this module's tool

    limits = bp.subagents
    grandchildren = bp.spawner(child_id, budget)
    registry = child_registry(bp.tools, request, AgentTool(grandchildren, depth=request.depth, max_depth=limits.max_depth))
    ports = SessionPorts(
        model=bp.model_for(request.model, f"subagent:{request.description}"),
        executor=bp.executor,
        summarizer=bp.summarizer,
        spawner=grandchildren,
    )
    kit = SessionKit(
        registry=registry,
        tool_context=bp.tool_context,
        artifacts=bp.artifacts,
        counter=bp.counter,
        emit=bp.emit,
        permissions=bp.permissions.fork(scope=f"subagent:{child_id}"),
        approver=bp.child_approver,
        budget=budget,
        is_child=True,
        hooks=bp.hooks,
    )
    settings = bp.settings.model_copy(update={"agent": bp.settings.agent.model_copy(update={"max_turns": limits.max_turns})})
    return Session(ports, kit, system_prompt=bp.prompt_for(registry), settings=settings, session_id=child_id)


async def run_child(
    bp: SessionBlueprint, request: SubagentRequest, *, parent_id: str, child_id: str, parent_budget: Budget
) -> SubagentResult:
    """Build, run and report one child; only its final text (or why it failed) returns."""
    limits = bp.subagents
    budget = parent_budget.child(f"subagent '{request.description}'", max_tokens=limits.max_tokens, max_cost_usd=limits.max_cost_usd)
    try:
        child = build_child_session(bp, request, child_id=child_id, budget=budget)
    except ToolError as exc:
        return SubagentResult(text=str(exc), is_error=True, reason="error", session_id=child_id)
    bp.emit(SubagentStarted(session_id=parent_id, child_session_id=child_id, description=request.description, depth=request.depth))
    result = await _run_child(child, request)
    if bp.hooks is not None:
        stop = {"session_id": parent_id, "child_session_id": child_id, "description": request.description, "reason": result.reason}
        await child.notify_hooks(HookEvent.SUBAGENT_STOP, stop)
    bp.emit(
        SubagentFinished(
            session_id=parent_id,
            child_session_id=child_id,
            description=request.description,
            reason=result.reason,
            is_error=result.is_error,
            usage=result.usage,
            cost_usd=result.cost_usd,
            model_calls=result.model_calls,
        )
    )
    return result


async def _run_child(child, request: SubagentRequest) -> SubagentResult:
    def result(text: str, reason: str, is_error: bool) -> SubagentResult:
        return SubagentResult(
            text=text,
            is_error=is_error,
            reason=reason,
            usage=child.usage,
            cost_usd=usage_cost_usd(child.usage, child.ports.model.name),
            model_calls=child.model_calls,
            session_id=child.session_id,
        )

    try:
        outcome = await child.run_turn(request.prompt)
    except ModelError as exc:
        return result(f"Subagent '{request.description}' failed: {type(exc).__name__}: {exc}", "error", True)
    if outcome.reason == "end_turn":
        return result(outcome.final_text or "(the subagent finished without a final answer)", "end_turn", False)
    last = f" Its last words: {outcome.final_text}" if outcome.final_text else ""
    why = {
        "turn_limit": f"stopped at its turn limit ({outcome.model_calls} model calls) before finishing.",
        "budget": f"was stopped by a budget: {outcome.detail}.",
    }.get(outcome.reason, f"stopped early ({outcome.reason}: {outcome.detail}).")
    return result(f"Subagent '{request.description}' {why}{last}", outcome.reason, True)

