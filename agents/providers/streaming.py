"""Timeouts and retries around one streamed model call, shared by the real providers.

Three clocks (settings `providers.*`):
  connect   opening the connection (the SDK's HTTP timeout, `connect`)
  idle      the longest silence between two events of the stream; also the SDK's
            HTTP read timeout, so a server that never sends its headers is caught too
  total     the whole call, every retry included

Who retries what: the SDK retries the *request* (408/409/429/5xx and connection
errors before the reply starts, honouring `retry-after`), because it does that job
well. What it cannot see stays here: a stream that stalls or breaks after the reply
started, or an error event inside a 200 stream (Anthropic's `overloaded_error`).
Those raise `StreamBroken` in the provider and `call_with_retries` runs the whole
call again, at most `stream_retries` times, with backoff, inside the total deadline.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from agents.config import ProviderSettings
from agents.errors import ModelTimeout, Overloaded
from agents.ports import ModelRequest, ModelResponse

__all__ = [
    "CallPolicy",
    "StallGuard",
    "StreamBroken",
    "StreamStalled",
    "StreamedClient",
    "call_with_retries",
    "transport_errors",
]

T = TypeVar("T")
_JITTER = 0.1


@functools.cache
def transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP library's errors for a connection that broke while a body was read (the
    SDKs do not all wrap those raised mid-stream): httpx2 or httpx, whichever is present."""
    found = []
    for name in ("httpx2", "httpx"):
        try:
            found.append(importlib.import_module(name).TransportError)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


class StreamBroken(Exception):
    """A transient failure after the reply started; the call may run again."""


class StreamStalled(StreamBroken):
    def __init__(self, idle_s: float):
        super().__init__(f"the stream stalled: no event for {idle_s:g} s (providers.idle_timeout_s)")


@dataclass(frozen=True)
class CallPolicy:
    connect_timeout_s: float = 10.0
    idle_timeout_s: float = 120.0
    total_timeout_s: float = 1_800.0
    max_retries: int = 4
    stream_retries: int = 2
    initial_backoff_s: float = 1.0
    max_backoff_s: float = 30.0

    @classmethod
    def from_settings(cls, settings: ProviderSettings) -> CallPolicy:
        return cls(
            connect_timeout_s=settings.connect_timeout_s,
            idle_timeout_s=settings.idle_timeout_s,
            total_timeout_s=settings.total_timeout_s,
            max_retries=settings.max_retries,
            stream_retries=settings.stream_retries,
        )

    def http_timeout(self) -> dict[str, float]:
        """Keyword arguments for the SDK's `Timeout`: connect, read = idle, and the rest."""
        return {
            "timeout": self.total_timeout_s,
            "connect": self.connect_timeout_s,
            "read": self.idle_timeout_s,
            "pool": self.connect_timeout_s,
        }

    def backoff_s(self, attempt: int) -> float:
        base = self.initial_backoff_s * (2.0 ** (attempt - 1))
        return min(base * (1.0 + _JITTER * random.random()), self.max_backoff_s)


class StallGuard:
    """Cancels the task that reads a stream when `touch()` was not called for `idle_s`,
    and turns that into StreamStalled. One timer per silence, not one per event: an
    event costs a clock read."""

    def __init__(self, idle_s: float):
        self.idle_s = idle_s
        self.stalled = False

    async def __aenter__(self) -> StallGuard:
        self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        self._last = self._loop.time()
        self._handle = self._loop.call_at(self._last + self.idle_s, self._check)
        return self

    def touch(self) -> None:
        self._last = self._loop.time()

    def _check(self) -> None:
        due = self._last + self.idle_s
        if self._loop.time() >= due:
            self.stalled = True
            self._task.cancel()
        else:
            self._handle = self._loop.call_at(due, self._check)

    async def __aexit__(self, exc_type, exc, tb) -> None:
        self._handle.cancel()
        if self.stalled and exc_type is asyncio.CancelledError and self._task.uncancel() == 0:
            raise StreamStalled(self.idle_s) from None


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    policy: CallPolicy,
    name: str,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    on_retry: Callable[[int, str, float], object] | None = None,
) -> T:
    """Run `attempt` until it returns, retrying StreamBroken; the total deadline bounds all."""
    deadline = asyncio.timeout(policy.total_timeout_s)
    try:
        async with deadline:
            made = 0
            while True:
                made += 1
                try:
                    return await attempt()
                except StreamBroken as exc:
                    if made > policy.stream_retries:
                        raise Overloaded(
                            f"{name}: {exc}; still so after {made} attempts", status_code=None, attempts=made
                        ) from exc
                    wait = policy.backoff_s(made)
                    if on_retry is not None:
                        on_retry(made, str(exc), wait)
                    await sleep(wait)
    except TimeoutError as exc:
        if not deadline.expired():
            raise
        raise ModelTimeout(
            f"{name}: no complete reply within {policy.total_timeout_s:g} s (providers.total_timeout_s)"
        ) from exc


class StreamedClient:
    """What the real providers share: one SDK client (`_client`, made with
    `_event_hooks()` so every HTTP request is counted), `create` as one streamed attempt
    (`_stream_once`, given the request `_params` built) under `call_with_retries`, and
    closing. `last_attempts` is exact when calls of one client do not overlap."""

    name: str
    policy: CallPolicy
    _client: Any

    def _start(self, policy: CallPolicy, sleep: Callable[[float], Awaitable[Any]]) -> None:
        self.policy = policy
        self._sleep = sleep
        self._sent = 0
        self.last_attempts = 0
        """HTTP requests made by the latest `create` call (1 = no retry)."""

    def _sdk_client(self, sdk: Any, client_class: Any, **kwargs: Any) -> Any:
        """The SDK's async client with our timeouts, its own retries, and counted requests."""
        timeout = sdk.Timeout(**self.policy.http_timeout())
        http = sdk.DefaultAsyncHttpxClient(timeout=timeout, event_hooks={"request": [self._count_request]})
        return client_class(max_retries=self.policy.max_retries, timeout=timeout, http_client=http, **kwargs)

    async def _count_request(self, request: Any) -> None:
        self._sent += 1

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    async def _stream_once(self, params: dict[str, Any], request: ModelRequest) -> ModelResponse:
        raise NotImplementedError

    async def create(self, request: ModelRequest) -> ModelResponse:
        params = self._params(request)
        before = self._sent
        try:
            return await call_with_retries(
                lambda: self._stream_once(params, request), policy=self.policy, name=self.name, sleep=self._sleep
            )
        except Overloaded as exc:
            exc.attempts = self._sent - before
            raise
        finally:
            self.last_attempts = self._sent - before

    async def aclose(self) -> None:
        await self._client.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
