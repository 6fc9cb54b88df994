"""What the fake API servers share: a real starlette app served by uvicorn on 127.0.0.1
(ephemeral port, background thread), a record of every request, a queue of scripted
answers, and server-sent events with the failures real streams have (a stall, an
error event, a dropped connection).

    class MyServer(FakeApiServer):
        def routes(self): return [Route("/v1/x", self._x, methods=["POST"])]

A subclass checks what it receives the way the real API does and answers a protocol
mistake with that API's real 400, so a test sees the request a real server would
refuse (`problems` keeps every one found).

A scripted error body may hold `PRESENTED_KEY` in its text: the server puts there the
key the request carried, as some providers and proxies echo it ("invalid x-api-key:
sk-ant-…"), so a test can check that the key never leaves the client's error.

Run by hand (`python3 -m agents.providers.testing.openai_server --port 8011`, the
Messages server likewise), a server serves a fixed port until Ctrl-C (`serve_by_hand`);
a port another process holds is one line on stderr and exit 2 (`PortTaken`), not a
traceback.
"""

from __future__ import annotations

import asyncio
import errno
import itertools
import json
import socket
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Self

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

__all__ = [
    "PRESENTED_KEY",
    "FakeApiServer",
    "PortTaken",
    "RecordedRequest",
    "StreamFault",
    "json_error",
    "pieces",
    "presented_key",
    "retry_after",
    "serve_by_hand",
    "sse_response",
    "with_presented_key",
]

PRESENTED_KEY = "{presented_key}"


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # decoded JSON, or the raw text when it is not JSON


@dataclass(frozen=True)
class StreamFault:
    """How a streamed answer goes wrong after `after` events: it stalls for `stall_s`,
    sends `error` (a JSON body) as the next event, drops the connection, or sends
    `malformed` (text that is not JSON) as the data of the next event, under its name."""

    after: int
    stall_s: float | None = None
    error: dict[str, Any] | None = None
    drop: bool = False
    malformed: str | None = None


def _frame(event: str | None, data: Any) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


class PortTaken(OSError):
    """The port asked for is held by another process."""


class _Dropped(Exception):
    """Raised inside the body generator to cut the connection mid-stream."""


def sse_response(
    events: Sequence[tuple[str | None, Any]],
    *,
    fault: StreamFault | None = None,
    headers: dict[str, str] | None = None,
    error_event: str | None = "error",
) -> StreamingResponse:
    """A text/event-stream of (event name, data) pairs, with an optional fault."""

    async def body() -> AsyncIterator[bytes]:
        for n, (event, data) in enumerate(events):
            if fault is not None and n == fault.after:
                if fault.stall_s is not None:
                    await asyncio.sleep(fault.stall_s)
                    return
                if fault.error is not None:
                    yield _frame(error_event, fault.error)
                    return
                if fault.drop:
                    raise _Dropped("connection dropped by the fake server")
                if fault.malformed is not None:
                    yield _frame(event, fault.malformed)
                    continue
            yield _frame(event, data)

    return StreamingResponse(body(), media_type="text/event-stream", headers=headers or {})


class FakeApiServer:
    """Base of the fake Messages and Chat Completions servers."""

    name = "fake-api-server"

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self._bind_port = port  # 0: an ephemeral port
        self.requests: list[RecordedRequest] = []
        self.problems: list[str] = []
        self._queue: deque[Any] = deque()
        self._lock = threading.Lock()
        self.ids = itertools.count(1)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self.port: int | None = None
        self.app = Starlette(routes=self.routes())

    def routes(self) -> list[Route]:
        raise NotImplementedError

    # ---------------------------------------------------------------- lifecycle

    @property
    def url(self) -> str:
        if self.port is None:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return f"http://{self.host}:{self.port}"

    def start(self, timeout_s: float = 10.0) -> Self:
        if self._thread is not None:
            return self
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self._bind_port))
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRINUSE:
                raise PortTaken(errno.EADDRINUSE, f"port {self._bind_port} on {self.host} is in use") from exc
            raise
        self._socket = sock
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            loop="asyncio",
            lifespan="off",
            log_config=None,
            log_level="critical",
            access_log=False,
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name=f"{self.name}:{self.port}", daemon=True
        )
        self._thread.start()
        waited, step = 0.0, 0.005
        while not self._server.started:
            if not self._thread.is_alive() or waited > timeout_s:
                self.stop()
                raise RuntimeError(f"{type(self).__name__} failed to start")
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
        self._server = self._thread = self._socket = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Forget recorded requests, problems and pending scripted answers."""
        with self._lock:
            self.requests.clear()
            self.problems.clear()
            self._queue.clear()

    def fresh(self) -> Iterator[Self]:
        """The server reset, then reset again when the caller is done (a fixture that
        shares one running server between tests yields from this)."""
        self.reset()
        yield self
        self.reset()

    # ---------------------------------------------------------------- scripting

    def push(self, answer: Any) -> None:
        with self._lock:
            self._queue.append(answer)

    def next_answer(self, default: Any) -> Any:
        with self._lock:
            return self._queue.popleft() if self._queue else default

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    async def record(self, request: Request) -> RecordedRequest:
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
        return recorded

    def refuse(self, problems: list[str]) -> list[str]:
        """Keep what a request did wrong; the caller answers the first as the API would."""
        with self._lock:
            self.problems.extend(problems)
        return problems


def presented_key(headers: dict[str, str]) -> str | None:
    """The API key a request carries (x-api-key, or a bearer token)."""
    return headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ") or None


def with_presented_key(body: Any, headers: dict[str, str]) -> Any:
    """`body` with PRESENTED_KEY in its strings replaced by the key the request carried."""
    if isinstance(body, str):
        return body.replace(PRESENTED_KEY, presented_key(headers) or "")
    if isinstance(body, dict):
        return {k: with_presented_key(v, headers) for k, v in body.items()}
    if isinstance(body, list):
        return [with_presented_key(v, headers) for v in body]
    return body


def json_error(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body), status_code=status, media_type="application/json", headers=headers or {})


def retry_after(seconds: float, header: str) -> str:
    """A wait as `header` gives it: `retry-after-ms` in milliseconds, `retry-after` in seconds."""
    return str(max(int(seconds * 1000), 1)) if header == "retry-after-ms" else str(max(int(seconds), 1))


def pieces(text: str, size: int) -> list[str]:
    """`text` cut into chunks of `size` characters (at least one chunk)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def serve_by_hand(server: FakeApiServer, banner: str) -> int:
    """Serve until Ctrl-C, printing `banner` (its `{url}` filled in) once it listens; a
    taken port is one line and exit 2."""
    try:
        server.start()
    except PortTaken as exc:
        print(
            f"{server.name}: {exc.strerror}; give another port with --port N, or stop what holds it "
            f"(ss -ltnp 'sport = :{server._bind_port}' names it)",
            file=sys.stderr,
        )
        return 2
    print(banner.format(url=server.url), flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0
