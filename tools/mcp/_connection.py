"""One MCP server connection, owned by a task of its own (see tools.mcp._tool for why)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TextIO

import mcp_types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from tools.base import ToolError
from tools.mcp._config import _UNSAFE, McpServerConfig

__all__ = ["McpConnection"]

_MAX_PAGES = 100  # tools/list pages per server; a paginator that never ends cannot hang start
_STDERR_TAIL_CHARS = 600
_STOP_TIMEOUT_S = 10.0  # the SDK's own stdio shutdown is bounded at about 6 s


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
        self._stderr: TextIO | None = None

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
            return f"MCP server '{self.name}' stopped: {self._failure}{self._stderr_note()}; its tools are unavailable"
        return None

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        client, owner = self._client, self._task
        if client is None or owner is None or not self.available:
            raise ToolError(self._unavailable_message())
        call = asyncio.ensure_future(client.call_tool(name, arguments, read_timeout_seconds=self.config.call_timeout_s))
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
            raise ToolError(f"MCP server '{self.name}' rejected the call to {name}: {err.message}") from None
        except Exception as err:  # a misbehaving remote server is not a harness bug
            if not self.available or owner.done():
                self._mark_dead(_reason(err, self.config))
                raise ToolError(self._unavailable_message()) from None
            raise ToolError(f"MCP server '{self.name}' failed on {name}: {_reason(err, self.config)}") from None

    # --- the owner task ---

    async def _own(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                transport = await self._transport(stack)
                client = await stack.enter_async_context(Client(transport, client_info=_client_info(), cache=None))
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
                    httpx2.AsyncClient(headers=cfg.headers, timeout=httpx2.Timeout(30.0, read=300.0))
                )
            return streamable_http_client(cfg.url, http_client=http_client)
        assert cfg.command is not None
        params = StdioServerParameters(command=cfg.command, args=list(cfg.args), env=dict(cfg.env) or None, cwd=cfg.cwd)
        self._stderr = self._open_stderr()
        return stdio_client(params, errlog=self._stderr)

    def _open_stderr(self) -> TextIO:
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
