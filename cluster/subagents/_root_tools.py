"""The root's MCP tools in subagent actors: calls proxied through the root's actor.

An MCP server's connection (a stdio subprocess, an HTTP session) lives in the root's
process and cannot travel. A subagent actor gets, for each such tool (execution
domain REMOTE), a `RootToolProxy` with the same name, description, input schema
and metadata — so the child's mode and permission rules shape and gate it exactly
as they would the tool itself — whose call is answered by the root's SessionActor
over the root's one connection (`SessionActor.call_root_tool`).

Proxying, not a connection per child: a stateful server (a key-value store, a
browser) stays one server for the whole tree, a child starts no server process
(that costs the server's start-up, ~0.5-1 s, per child), and the server sees the
same single client as in one process. The price is one actor round trip per call
(`python3 -m benchmarks.mcp_proxy` measures it).

The root answers only for its own REMOTE tools: a proxy cannot reach any other tool
of the root (MemoryWrite, Agent, workspace tools), whatever name it is given.
"""

from __future__ import annotations

from pydantic import BaseModel
from ray.exceptions import RayError

from tools.base import ExecutionDomain, Tool, ToolContext, ToolError, ToolOutput
from tools.executor import LocalToolExecutor
from tools.registry import ToolRegistry, validate_input

__all__ = ["RootToolProxy", "answer_root_tool", "proxied_tools"]


class RootToolProxy:
    """A root-held tool as a subagent actor sees it; its calls go to the root's actor."""

    execution_domain = ExecutionDomain.REMOTE  # runs where the session is: it is a remote call anyway
    root_only = False

    def __init__(self, tool: Tool, root_actor, root_session_id: str):
        self.name = tool.name
        self.description = tool.description
        self.input_model: type[BaseModel] = tool.input_model
        self.is_read_only = tool.is_read_only
        self.root_actor = root_actor
        self.root_session_id = root_session_id

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        try:
            return await self.root_actor.call_root_tool.remote(
                self.root_session_id, self.name, args.model_dump(mode="json")
            )
        except RayError as exc:
            raise ToolError(
                f"{self.name} cannot be called: the root session that holds its MCP server is "
                f"unreachable ({type(exc).__name__})"
            ) from exc

    def __repr__(self) -> str:
        return f"RootToolProxy({self.name!r}, read_only={self.is_read_only})"


def proxied_tools(tools: list[Tool], root_actor, root_session_id: str) -> list[Tool]:
    """`tools` as a subagent actor gets them: each root-held (REMOTE) tool as a proxy."""
    return [
        t
        if t.execution_domain is not ExecutionDomain.REMOTE or isinstance(t, RootToolProxy)
        else RootToolProxy(t, root_actor, root_session_id)
        for t in tools
    ]


async def answer_root_tool(registry: ToolRegistry, ctx: ToolContext, name: str, arguments: dict) -> ToolOutput:
    """Run one proxied call on the root's own tool; only REMOTE tools answer."""
    tool = registry.get(name) if name in registry else None
    if tool is None or tool.execution_domain is not ExecutionDomain.REMOTE or isinstance(tool, RootToolProxy):
        return ToolOutput(content=f"{name} is not a tool the root session holds for its subagents", is_error=True)
    try:
        args = validate_input(tool, arguments)
    except ToolError as exc:
        return ToolOutput(content=str(exc), is_error=True)
    return await LocalToolExecutor().execute(tool, args, ctx)
