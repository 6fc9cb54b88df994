"""A real local HTTP server speaking the Anthropic Messages API, for tests.

It serves `POST /v1/messages` from a starlette app run by uvicorn in a background
thread on 127.0.0.1 (ephemeral port). Every request is recorded; answers come from a
queue the test fills (`push_text`, `push_tool_use`, `push_error`, ...). With the queue
empty it answers a default text reply.

    with FakeMessagesServer() as server:
        server.push_error(429, "rate_limit_error", "slow down", headers={"retry-after": "3"})
        server.push_text("hello")
        client = AnthropicModelClient("claude-x", api_key="k", base_url=server.url)
        ...
        assert len(server.requests) == 2
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["FakeMessagesServer", "RecordedRequest", "ScriptedResponse", "error_body"]

DEFAULT_TEXT = "ok"


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # decoded JSON, or the raw text when it is not JSON


@dataclass(frozen=True)
class ScriptedResponse:
    """One queued answer. `body` of None means "a message built from `content`"."""

    status: int = 200
    body: dict[str, Any] | None = None
    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = "end_turn"
    usage: dict[str, int] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)


def error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


class FakeMessagesServer:
    def __init__(self, *, host: str = "127.0.0.1") -> None:
        self.host = host
        self.requests: list[RecordedRequest] = []
        self._queue: deque[ScriptedResponse] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self.port: int | None = None
        self.app = Starlette(routes=[Route("/v1/messages", self._messages, methods=["POST"])])

    # ---------------------------------------------------------------- lifecycle

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError("FakeMessagesServer is not started")
        return f"http://{self.host}:{self.port}"

    def start(self, timeout_s: float = 10.0) -> FakeMessagesServer:
        if self._thread is not None:
            return self
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        self._socket = sock
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            loop="asyncio",
            lifespan="off",
            log_config=None,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [sock]},
            name=f"fake-messages-server:{self.port}",
            daemon=True,
        )
        self._thread.start()
        step = 0.005
        waited = 0.0
        while not self._server.started:
            if not self._thread.is_alive() or waited > timeout_s:
                self.stop()
                raise RuntimeError("FakeMessagesServer failed to start")
            threading.Event().wait(step)
            waited += step
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                if self._server is not None:
                    self._server.force_exit = True
                self._thread.join(timeout_s)
        if self._socket is not None:
            self._socket.close()
        self._server = None
        self._thread = None
        self._socket = None

    def __enter__(self) -> FakeMessagesServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Forget recorded requests and pending scripted answers."""
        with self._lock:
            self.requests.clear()
            self._queue.clear()

    # ---------------------------------------------------------------- scripting

    def push(self, response: ScriptedResponse) -> None:
        with self._lock:
            self._queue.append(response)

    def push_text(
        self,
        text: str = DEFAULT_TEXT,
        *,
        stop_reason: str = "end_turn",
        usage: dict[str, int] | None = None,
    ) -> None:
        self.push(
            ScriptedResponse(
                content=[{"type": "text", "text": text}],
                stop_reason=stop_reason,
                usage=dict(usage or {}),
            )
        )

    def push_tool_use(
        self,
        name: str,
        input: dict[str, Any],
        *,
        id: str | None = None,
        text: str | None = None,
        usage: dict[str, int] | None = None,
    ) -> None:
        content: list[dict[str, Any]] = []
        if text is not None:
            content.append({"type": "text", "text": text})
        content.append(
            {"type": "tool_use", "id": id or f"toolu_{next(self._ids):04d}", "name": name, "input": input}
        )
        self.push(ScriptedResponse(content=content, stop_reason="tool_use", usage=dict(usage or {})))

    def push_content(
        self,
        content: list[dict[str, Any]],
        *,
        stop_reason: str = "end_turn",
        usage: dict[str, int] | None = None,
    ) -> None:
        """A success reply with arbitrary content blocks (e.g. thinking blocks)."""
        self.push(ScriptedResponse(content=list(content), stop_reason=stop_reason, usage=dict(usage or {})))

    def push_error(
        self,
        status: int,
        error_type: str,
        message: str,
        *,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.push(
            ScriptedResponse(
                status=status, body=error_body(error_type, message), headers=dict(headers or {})
            )
        )

    def push_rate_limit(self, retry_after_s: float | None = None, message: str = "Rate limited") -> None:
        headers = {} if retry_after_s is None else {"retry-after": _number(retry_after_s)}
        self.push_error(429, "rate_limit_error", message, headers=headers)

    def push_overloaded(self, message: str = "Overloaded") -> None:
        self.push_error(529, "overloaded_error", message)

    def push_server_error(self, message: str = "Internal server error") -> None:
        self.push_error(500, "api_error", message)

    def push_auth_error(self, message: str = "invalid x-api-key") -> None:
        self.push_error(401, "authentication_error", message)

    def push_prompt_too_long(self, actual_tokens: int, limit_tokens: int) -> None:
        self.push_error(
            400,
            "invalid_request_error",
            f"prompt is too long: {actual_tokens} tokens > {limit_tokens} maximum",
        )

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    # ------------------------------------------------------------------ serving

    def _next(self) -> ScriptedResponse:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return ScriptedResponse(content=[{"type": "text", "text": DEFAULT_TEXT}])

    async def _messages(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        recorded = RecordedRequest(
            method=request.method,
            path=request.url.path,
            headers={k.lower(): v for k, v in request.headers.items()},
            body=body,
        )
        with self._lock:
            self.requests.append(recorded)
        scripted = self._next()
        headers = {"request-id": f"req_fake_{next(self._ids):06d}", **scripted.headers}
        if scripted.body is not None:
            return JSONResponse(scripted.body, status_code=scripted.status, headers=headers)
        model = body.get("model", "claude-fake") if isinstance(body, dict) else "claude-fake"
        usage = {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            **scripted.usage,
        }
        message = {
            "id": f"msg_fake_{next(self._ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": scripted.content,
            "stop_reason": scripted.stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }
        return JSONResponse(message, status_code=scripted.status, headers=headers)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
