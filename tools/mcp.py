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
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import IO, Any, ClassVar, Literal

import mcp_types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel, ConfigDict, Field, model_validator

from tools.base import ExecutionDomain, ToolContext, ToolError, ToolOutput

__all__ = [
    "McpConnection",
    "McpInput",
    "McpManager",
    "McpServerConfig",
    "McpTool",
    "mcp_tool_name",
    "render_content",
]

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_MAX_NAME = 64
_MAX_PAGES = 100  # tools/list pages per server; a paginator that never ends cannot hang start
_STDERR_TAIL_CHARS = 600
_STOP_TIMEOUT_S = 10.0  # the SDK's own stdio shutdown is bounded at about 6 s


class McpServerConfig(BaseModel):
    """One MCP server the session connects to (settings: `mcp_servers`)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        min_length=1,
        description="Short name of the server; its tools are named mcp__<name>__<tool>.",
    )
    transport: Literal["stdio", "http"] = Field(
        "stdio",
        description="stdio: run `command` as a subprocess; http: connect to `url` (streamable HTTP).",
    )
    command: str | None = Field(
        None, description="stdio: the executable that starts the server (looked up on PATH)."
    )
    args: list[str] = Field(default_factory=list, description="stdio: arguments to `command`.")
    env: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "stdio: environment variables for the server, added to a minimal inherited set "
            "(HOME, PATH, USER, ...); the harness's other variables, such as API keys, are not passed."
        ),
    )
    cwd: Path | None = Field(
        None, description="stdio: working directory of the server (default: the harness's)."
    )
    url: str | None = Field(
        None, description="http: the server's MCP endpoint, e.g. http://127.0.0.1:8000/mcp."
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="http: headers sent with every request, e.g. Authorization.",
    )
    trusted: bool = Field(
        False,
        description=(
            "Believe the server's tool annotations: a tool with readOnlyHint is then read-only "
            "(usable in Plan mode). Untrusted servers' tools are all treated as mutating."
        ),
    )
    timeout_s: float = Field(
        30.0, gt=0, description="Seconds the server may take to start, connect and list its tools."
    )
    call_timeout_s: float | None = Field(
        300.0,
        gt=0,
        description="Seconds one tool call may take before it fails; null for no limit.",
    )
    enabled: bool = Field(
        True, description="False keeps the entry in the config without starting it."
    )

    @model_validator(mode="after")
    def _transport_fields(self) -> McpServerConfig:
        if self.transport == "stdio" and not self.command:
            raise ValueError(f"MCP server {self.name!r}: transport 'stdio' needs a command")
        if self.transport == "http" and not self.url:
            raise ValueError(f"MCP server {self.name!r}: transport 'http' needs a url")
        return self


def mcp_tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, made to fit the registry's name rule.

    Characters outside [a-zA-Z0-9_-] become '_'. A name over 64 characters keeps
    its head and ends in a short hash of the full name, so it stays unique.
    """
    raw = f"mcp__{server}__{tool}"
    name = _UNSAFE.sub("_", raw)
    if len(name) > _MAX_NAME:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
        name = f"{name[: _MAX_NAME - 9]}_{digest}"
    return name


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

    def __init__(
        self, connection: McpConnection, definition: mcp_types.Tool, *, name: str | None = None
    ) -> None:
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


class McpConnection:
    """One server's live connection, owned by a task of its own.

    `start()` returns a problem message or None; it never raises for a server
    failure. `call_tool` raises ToolError when the server is unavailable.
    """

    def __init__(self, config: McpServerConfig, *, log_dir: Path | None = None) -> None:
        self.config = config
        self.definitions: list[mcp_types.Tool] = []
        self._log_dir = log_dir
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._failure: str | None = None  # why the server is unavailable
        self._started = False
        self._closing = False
        self._stderr: IO[str] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def available(self) -> bool:
        return self._client is not None and self._failure is None and not self._stop.is_set()

    @property
    def failure(self) -> str | None:
        """Why the server is unavailable, once it is (None while it works)."""
        return self._failure

    async def start(self) -> str | None:
        """Connect and list tools within the config's timeout; a problem message, or None."""
        if self._task is not None:
            raise RuntimeError(f"MCP server {self.name!r} was already started")
        self._task = asyncio.create_task(self._own(), name=f"mcp-server:{self.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), self.config.timeout_s)
        except TimeoutError:
            self._failure = f"it did not start within {self.config.timeout_s:g}s"
            await self._halt(cancel=True)
        if self._client is None or self._failure is not None:
            return (
                f"MCP server '{self.name}' did not start: {self._failure or 'unknown reason'}"
                f"{self._stderr_note()}; continuing without its tools"
            )
        self._started = True
        return None

    async def aclose(self) -> None:
        """Stop the server (stdio: close its stdin, then terminate) and release its resources."""
        self._closing = True
        if self._failure is None:
            self._failure = "the session closed its MCP connections"
        await self._halt()
        if self._stderr is not None:
            with contextlib.suppress(OSError):
                self._stderr.close()

    def runtime_problem(self) -> str | None:
        """A message for a server that started and then stopped working, else None."""
        if self._started and self._failure is not None and not self._closing:
            return (
                f"MCP server '{self.name}' stopped: {self._failure}{self._stderr_note()}; "
                "its tools are unavailable"
            )
        return None

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        client, owner = self._client, self._task
        if client is None or owner is None or not self.available:
            raise ToolError(self._unavailable_message())
        call = asyncio.ensure_future(
            client.call_tool(name, arguments, read_timeout_seconds=self.config.call_timeout_s)
        )
        try:
            # The owner task ends when the transport fails; a call must not outlive it.
            await asyncio.wait({call, owner}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            call.cancel()
            raise
        if not call.done():
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)
            self._mark_dead(self._failure or "the connection ended during the call")
            raise ToolError(self._unavailable_message())
        try:
            return call.result()
        except MCPError as err:
            if err.code == mcp_types.CONNECTION_CLOSED:
                self._mark_dead("the server closed the connection (it exited or crashed)")
                raise ToolError(self._unavailable_message()) from None
            if err.code == mcp_types.REQUEST_TIMEOUT:
                raise ToolError(
                    f"MCP server '{self.name}' did not answer {name} within "
                    f"{self.config.call_timeout_s:g}s; the call was abandoned"
                ) from None
            raise ToolError(
                f"MCP server '{self.name}' rejected the call to {name}: {err.message}"
            ) from None
        except Exception as err:  # a misbehaving remote server is not a harness bug
            if not self.available or owner.done():
                self._mark_dead(_reason(err, self.config))
                raise ToolError(self._unavailable_message()) from None
            raise ToolError(
                f"MCP server '{self.name}' failed on {name}: {_reason(err, self.config)}"
            ) from None

    # --- the owner task ---

    async def _own(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                transport = await self._transport(stack)
                client = await stack.enter_async_context(
                    Client(transport, client_info=_client_info(), cache=None)
                )
                self.definitions = await _list_tools(client)
                self._client = client
                self._ready.set()
                await self._stop.wait()
        except asyncio.CancelledError:
            if not self._stop.is_set():
                self._failure = self._failure or "its connection was cancelled"
            raise
        except Exception as err:
            self._failure = self._failure or _reason(err, self.config)
        finally:
            self._client = None
            self._failure = self._failure or "its connection ended"
            self._ready.set()

    async def _transport(self, stack: AsyncExitStack) -> Any:
        cfg = self.config
        if cfg.transport == "http":
            assert cfg.url is not None
            http_client = None
            if cfg.headers:
                import httpx2  # the SDK's HTTP client; its docs say to pass one for custom headers

                http_client = await stack.enter_async_context(
                    httpx2.AsyncClient(
                        headers=cfg.headers, timeout=httpx2.Timeout(30.0, read=300.0)
                    )
                )
            return streamable_http_client(cfg.url, http_client=http_client)
        assert cfg.command is not None
        params = StdioServerParameters(
            command=cfg.command, args=list(cfg.args), env=dict(cfg.env) or None, cwd=cfg.cwd
        )
        self._stderr = self._open_stderr()
        return stdio_client(params, errlog=self._stderr)

    def _open_stderr(self) -> IO[str]:
        if self._log_dir is not None:
            self._log_dir.mkdir(parents=True, exist_ok=True)
            path = self._log_dir / f"mcp-{_UNSAFE.sub('_', self.name)}.stderr.log"
            return path.open("w+", encoding="utf-8", errors="replace")
        return tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")

    # --- helpers ---

    async def _halt(self, *, cancel: bool = False) -> None:
        """Stop the owner task: by its stop event (it then closes the transport), or by
        cancelling it when it is still connecting. Bounded either way."""
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        if cancel:
            task.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(task), _STOP_TIMEOUT_S)
        except TimeoutError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        except (Exception, asyncio.CancelledError):
            if task.done():
                return
            raise

    def _mark_dead(self, reason: str) -> None:
        if self._failure is None:
            self._failure = reason
        self._stop.set()  # let the owner task wind the transport down and reap the process

    def _unavailable_message(self) -> str:
        why = self._failure or "it is not connected"
        return (
            f"MCP server '{self.name}' is unavailable: {why}. "
            "Its tools cannot be used for the rest of this session; continue without them."
        )

    def _stderr_note(self) -> str:
        tail = self._stderr_tail()
        return f" (server stderr: {tail})" if tail else ""

    def _stderr_tail(self) -> str:
        f = self._stderr
        if f is None or f.closed:
            return ""
        try:
            fd = f.fileno()
            size = os.fstat(fd).st_size
            start = max(0, size - _STDERR_TAIL_CHARS * 4)
            # pread leaves the file offset alone: the server process shares it.
            text = os.pread(fd, size - start, start).decode("utf-8", errors="replace")
        except (OSError, ValueError):
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return " | ".join(lines[-6:])[-_STDERR_TAIL_CHARS:]


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


async def _list_tools(client: Client) -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _client_info() -> mcp_types.Implementation:
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("workingset")
    except PackageNotFoundError:
        v = "0"
    return mcp_types.Implementation(name="workingset", version=v)


def _reason(err: BaseException, cfg: McpServerConfig) -> str:
    """One line saying why a connection failed, without a traceback."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    if isinstance(err, MCPError):
        if err.code == mcp_types.CONNECTION_CLOSED:
            return "the server closed the connection (it exited or crashed)"
        return f"the server answered with error {err.code}: {err.message}"
    if isinstance(err, FileNotFoundError) and cfg.transport == "stdio":
        return f"command {cfg.command!r} was not found"
    if isinstance(err, PermissionError) and cfg.transport == "stdio":
        return f"command {cfg.command!r} could not be executed (permission denied)"
    text = str(err).strip()
    where = f" ({cfg.url})" if cfg.transport == "http" else ""
    return f"{type(err).__name__}{where}: {text}" if text else f"{type(err).__name__}{where}"
