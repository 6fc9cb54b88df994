"""This process's link to one SessionActor: its event pump, and the calls every session
of it makes once (open, the start of each turn, close), coalesced.

A Ray actor call costs 1–2 ms of CPU on a small machine, the caller's side and the
actor's together (`python -m benchmarks.call_parts --parts bare-call`: 0.9 ms with 50
calls in flight, 2 ms one at a time), about what a scripted model call costs the loop.
A batch opens, starts and closes its sessions in bursts, so the calls of one kind that
sessions make in the same tick of the event loop go to the actor as one call of its
`…_many` twin: nothing waits for a batch to fill (a call alone goes at once, in that
same tick), and each session still gets its own result or its own error, raised as Ray
would have raised it from a call of its own (`CallFailed`). Should the actor be lost,
every call of the batch gets that error, and each session's own recovery
(RemoteSession) takes it from there.

The link also keeps the actor's heartbeat (cluster.heartbeat), from the first call on:
an actor that stops answering is killed and replaced, so no call of its sessions
waits on it for ever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from cluster.event_pump import ActorEvents, CallFailed
from cluster.heartbeat import Heartbeat

__all__ = ["ActorLink", "Coalesced", "call_each"]


class Coalesced:
    """One actor method for many items: `send(items)` makes the Ray call (an ObjectRef
    of one result per item, a `CallFailed` for an item that raised)."""

    def __init__(self, send: Callable[[list], Any]):
        self._send = send
        self._pending: list[tuple[Any, asyncio.Future]] = []
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop whose tick sends them

    async def __call__(self, item: Any) -> Any:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a loop that ended with calls pending took their callers with it
            self._pending, self._loop = [], loop
        future = loop.create_future()
        if not self._pending:
            loop.call_soon(self._flush)
        self._pending.append((item, future))
        result = await future
        if isinstance(result, CallFailed):
            result.raise_it()
        return result

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        asyncio.ensure_future(self._deliver(batch))

    async def _deliver(self, batch: list[tuple[Any, asyncio.Future]]) -> None:
        try:
            results = await self._send([item for item, _ in batch])
        except Exception as exc:  # the call as a whole failed (the actor lost): each caller learns it
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():  # a caller that was cancelled meanwhile reads nothing
                future.set_result(result)


async def call_each(method: Callable[[Any], Any], items: list, where: str) -> list:
    """Actor side of a coalesced call: `method` for each item, concurrently; an item that
    raised gives its CallFailed instead of a result."""
    done = await asyncio.gather(*(method(item) for item in items), return_exceptions=True)
    return [CallFailed.of(r, where) if isinstance(r, BaseException) else r for r in done]


class ActorLink:
    """The calls this process makes to one SessionActor for its sessions (RemoteSession)."""

    def __init__(self, actor: Any, *, heartbeat: Heartbeat | None = None):
        self.actor = actor
        self.events = ActorEvents(actor)
        self.heartbeat = heartbeat or Heartbeat(actor, what="session's actor")
        self._open = Coalesced(lambda specs: actor.open_many.remote(specs))
        self._close = Coalesced(lambda session_ids: actor.close_many.remote(session_ids))
        self._begin = Coalesced(lambda starts: actor.begin_many.remote(starts))

    async def open(self, spec: Any) -> Any:
        """Open a session on the actor (SessionActor.open)."""
        self.heartbeat.ensure_running()
        return await self._open(spec)

    async def close(self, session_id: str) -> None:
        self.heartbeat.ensure_running()
        await self._close(session_id)

    async def begin(self, token: int, method: str, session_id: str, *args: Any) -> None:
        """Start a turn whose batches come through `events` (SessionActor.begin)."""
        self.heartbeat.ensure_running()
        await self._begin((token, method, session_id, args))
