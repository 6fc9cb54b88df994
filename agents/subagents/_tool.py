"""The Agent tool: a model's way to start a subagent, and what the child may use.

The tool only validates the call, checks the depth limit and hands a
SubagentRequest to its SubagentSpawner port, with the calls the user refused in this
session and above it (the child denies them without asking, agents.permissions.refusals);
how and where the child runs is the spawner's business (in-process: `agents.subagents._spawner`;
on Ray: a SubagentActor). The child's answer comes back with a short list of the
evidence it gathered, whose bodies this session keeps for its Recall (agents.subagents._evidence).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agents.permissions import PermissionRuntime
from agents.ports import SubagentRequest, SubagentSpawner
from agents.subagents._evidence import render_evidence
from tools.artifacts import ArtifactStore
from tools.base import ExecutionDomain, Tool, ToolContext, ToolError, ToolOutput
from tools.registry import ToolRegistry

__all__ = ["AgentInput", "AgentTool", "child_registry"]


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

    def __init__(
        self,
        spawner: SubagentSpawner,
        *,
        depth: int,
        max_depth: int,
        permissions: PermissionRuntime,
        path: tuple[str, ...] = (),
    ):
        self.spawner = spawner
        self.depth = depth
        self.max_depth = max_depth
        self.permissions = permissions  # the owning session's: what its user refused goes to each child
        self.path = path  # the owning session's place in the tree

    async def run(self, args: AgentInput, ctx: ToolContext) -> ToolOutput:
        if self.depth + 1 > self.max_depth:
            raise ToolError(
                f"Subagent depth limit reached (max depth {self.max_depth}); do this work directly "
                "with your own tools instead of starting another subagent."
            )
        request = SubagentRequest(
            description=args.description,
            prompt=args.prompt,
            depth=self.depth + 1,
            path=(*self.path, args.description),
            tool_filter=tuple(args.tool_filter) if args.tool_filter is not None else None,
            model=args.model,
            refused=self.permissions.refused_calls(),
        )
        result = await self.spawner.spawn(request)
        evidence = result.evidence
        store = ctx.artifacts
        if isinstance(store, ArtifactStore):  # so that this session's Recall finds the bodies named below
            kept = {
                r.tool_use_id
                for r in result.records
                if store.put(r.tool_use_id, r.body) or store.get(r.tool_use_id) == r.body
            }
            # An id already holding another body (a scripted model reuses ids) would recall the wrong one.
            evidence = tuple(ref for ref in evidence if ref.tool_use_id in kept)
        listed = render_evidence(evidence)
        return ToolOutput(content=f"{result.text}\n\n{listed}" if listed else result.text, is_error=result.is_error)


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
        raise ToolError(
            f"tool_filter names tools a subagent cannot have: {', '.join(unknown)}; available: {', '.join(sorted(names))}"
        )
    return ToolRegistry(t for t in offered if t.name in request.tool_filter)
