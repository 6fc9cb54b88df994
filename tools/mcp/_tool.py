"""MCP: tools from Model Context Protocol servers, through the official `mcp` SDK.

Each configured server (stdio subprocess or streamable HTTP endpoint) is connected
once per session; every tool it lists becomes an `McpTool` named
`mcp__<server>__<tool>`. A tool's metadata comes from the server's annotations
only when the user marks the server trusted: then `readOnlyHint: true` makes it
read-only (so Plan mode keeps it). An untrusted server's tools are never
read-only. Modes need no MCP special case: they read this metadata like any other.

A server that fails to start, or crashes later, never takes the session down: the
manager reports a clear problem and carries on without that server's tools, and a
call to a tool of a dead server is a `ToolError` the model can act on.

Each server's connection lives in a task of its own. The SDK's transports run
anyio task groups, which must be exited by the task that entered them and which
cancel that task when the transport fails (an HTTP server dropping the
connection does this); a dedicated task keeps both effects away from the caller,
so the manager may be opened in one task and closed in another.

The SDK (a second of CPU to import) loads with the first server that connects or the
first result rendered, not with the settings that merely name servers.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from tools.base import ExecutionDomain, ToolContext, ToolOutput
from tools.mcp._config import _MAX_NAME, McpServerConfig, mcp_tool_name

if TYPE_CHECKING:
    import mcp_types

    from tools.mcp._connection import McpConnection

__all__ = [
    "McpInput",
    "McpManager",
    "McpServerConfig",
    "McpTool",
    "mcp_tool_name",
    "render_content",
]


class McpInput(BaseModel):
    """Input of an MCP tool: anything validates here; the server validates its own input.

    Each tool gets a subclass whose `model_json_schema()` is the server's inputSchema
    as given, so the model sees exactly what the server declared.
    """

    model_config = ConfigDict(extra="allow")

    server_input_schema: ClassVar[dict[str, Any]] = {"type": "object"}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.server_input_schema)


def _input_model(tool_name: str, schema: dict[str, Any]) -> type[McpInput]:
    class_name = "".join(part.capitalize() for part in tool_name.split("_") if part) + "Input"
    return type(
        class_name,
        (McpInput,),
        {
            "server_input_schema": copy.deepcopy(schema),
            "__module__": __name__,
            "__qualname__": class_name,
        },
    )


class McpTool:
    """A tool of an MCP server, called through its live connection."""

    execution_domain = ExecutionDomain.REMOTE
    root_only = False

    def __init__(self, connection: McpConnection, definition: mcp_types.Tool, *, name: str | None = None) -> None:
        self.connection = connection
        self.definition = definition
        self.server_name = connection.config.name
        self.remote_name = definition.name
        self.name = name or mcp_tool_name(self.server_name, definition.name)
        text = (definition.description or definition.title or definition.name).strip()
        self.description = f"[MCP server '{self.server_name}'] {text}"
        self.input_model: type[BaseModel] = _input_model(self.name, definition.input_schema)
        hint = definition.annotations.read_only_hint if definition.annotations else None
        self.is_read_only = connection.config.trusted and hint is True

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        arguments = args.model_dump(mode="json")
        result = await self.connection.call_tool(self.remote_name, arguments)
        return ToolOutput(content=render_content(result), is_error=bool(result.is_error))

    def __repr__(self) -> str:
        return f"McpTool({self.name!r}, read_only={self.is_read_only})"


def render_content(result: mcp_types.CallToolResult) -> str:
    """The result's content as text: text blocks as they are, other blocks described briefly."""
    parts = [_render_block(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts) if parts else "(no output)"


def _render_block(block: mcp_types.ContentBlock) -> str:
    import mcp_types

    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent):
        return f"[image: {block.mime_type}, {len(block.data)} base64 chars, not shown]"
    if isinstance(block, mcp_types.AudioContent):
        return f"[audio: {block.mime_type}, {len(block.data)} base64 chars, not shown]"
    if isinstance(block, mcp_types.ResourceLink):
        about = f" - {block.description}" if block.description else ""
        return f"[resource link: {block.name} <{block.uri}>{about}]"
    if isinstance(block, mcp_types.EmbeddedResource):
        res = block.resource
        if isinstance(res, mcp_types.TextResourceContents):
            return f"[resource <{res.uri}>]\n{res.text}"
        return f"[binary resource <{res.uri}> ({res.mime_type or 'unknown type'}), not shown]"
    return f"[{getattr(block, 'type', type(block).__name__)} content, not shown]"


class McpManager:
    """Connects every enabled server and exposes their tools; one per session.

    Use as `async with McpManager(configs) as mcp:` or call `start()` and `aclose()`.
    A server that fails is reported in `problems` and skipped; nothing here raises
    for a server failure. Close it from any task of the same event loop.
    """

    def __init__(self, servers: Iterable[McpServerConfig], *, log_dir: Path | None = None) -> None:
        self.configs = list(servers)
        self._log_dir = log_dir
        self._connections: list[McpConnection] = []
        self._tools: list[McpTool] = []
        self._start_problems: list[str] = []
        self._stack = AsyncExitStack()
        self._started = False

    async def __aenter__(self) -> McpManager:
        try:
            await self.start()
        except BaseException:  # cancelled while starting: leave no server process behind
            await asyncio.shield(self.aclose())
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Start all enabled servers concurrently, each bounded by its own timeout."""
        if self._started:
            raise RuntimeError("McpManager.start() was already called")
        self._started = True
        from tools.mcp._connection import McpConnection

        seen: set[str] = set()
        for cfg in self.configs:
            if not cfg.enabled:
                continue
            if cfg.name in seen:
                self._start_problems.append(
                    f"MCP server name '{cfg.name}' is configured twice; only the first one is used"
                )
                continue
            seen.add(cfg.name)
            self._connections.append(McpConnection(cfg, log_dir=self._log_dir))
        self._stack.push_async_callback(self._close_all)
        results = await asyncio.gather(*(conn.start() for conn in self._connections))
        taken: set[str] = set()
        for conn, problem in zip(self._connections, results, strict=True):
            if problem is not None:
                self._start_problems.append(problem)
                continue
            for definition in conn.definitions:
                name = _unique_name(mcp_tool_name(conn.name, definition.name), taken)
                taken.add(name)
                self._tools.append(McpTool(conn, definition, name=name))

    async def aclose(self) -> None:
        """Stop every server; idempotent."""
        await self._stack.aclose()

    async def _close_all(self) -> None:
        # Concurrently: a stdio server that ignores end-of-input costs seconds to stop.
        await asyncio.gather(*(conn.aclose() for conn in self._connections))

    @property
    def tools(self) -> list[McpTool]:
        """Tools of the servers that started, in config order (including ones that died since)."""
        return list(self._tools)

    @property
    def problems(self) -> list[str]:
        """Clear messages for servers that failed to start, or stopped after starting."""
        later = [p for conn in self._connections if (p := conn.runtime_problem())]
        return [*self._start_problems, *later]

    @property
    def connections(self) -> Sequence[McpConnection]:
        return tuple(self._connections)


def _unique_name(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    for n in range(2, 1000):
        suffix = f"_{n}"
        candidate = name[: _MAX_NAME - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
    raise ValueError(f"too many MCP tools named like {name!r}")
