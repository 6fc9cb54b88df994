"""One event stream per SessionActor for all the sessions it hosts.

A turn streamed on its own costs the caller a Ray item (an RPC, an object, an asyncio
wake-up) per burst of events, per session: hundreds of sessions on a few actors send
thousands of small items. Here every turn of an actor feeds one outbox; its pump
gathers what all of them emitted in a short window into one item, and the caller
(`ActorEvents`) hands each session's batches to the reader of that session's turn.

Each turn is started by a quick call (`SessionActor.begin`) carrying a token the
caller chose, and every batch carries it back: a reader takes only its own turn's
batches, so leftovers of a cancelled turn never reach the next. A turn's failure
travels as a `CallFailed` batch and is raised by its reader as Ray would raise it
from the turn's own stream (a RayTaskError that is also the cause's type). The pump
dying (the actor lost) is raised by every reader waiting on it, as the turn's own
stream would have; the next turn starts a new pump on the restarted actor.
"""

from __future__ import annotations

import asyncio
import itertools
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ray.exceptions import RayTaskError

__all__ = ["ActorEvents", "CallFailed", "Outbox", "TurnStreamEnd"]

_STOP = object()


@dataclass(frozen=True)
class CallFailed:
    """A turn (or a call of a batch: cluster.actor_link) that raised, as a value: the error
    Ray would have raised from the turn's own stream or the call of its own."""

    error: RayTaskError

    @classmethod
    def of(cls, exc: BaseException, where: str) -> CallFailed:
        tb = "".join(traceback.format_exception(exc))
        return cls(RayTaskError(where, tb, exc))

    def raise_it(self) -> None:
        try:
            dual = self.error.as_instanceof_cause()
        except TypeError:  # a cause class that cannot be subclassed
            dual = self.error
        raise dual from None


@dataclass(frozen=True)
class TurnStreamEnd:
    """A turn's stream ended (after its TurnEnd, or without one when it was cancelled)."""


class Outbox:
    """Actor side: the batches of every turn running on this actor, for its one pump."""

    def __init__(self, window_s: float):
        self.window_s = window_s
        self._queue: asyncio.Queue = asyncio.Queue()

    def forward(self, session_id: str, token: int, batches: AsyncIterator[list], where: str) -> asyncio.Task:
        """Send each batch of `batches` (a turn's stream) out through the pump."""

        async def run() -> None:
            try:
                async for batch in batches:
                    self._queue.put_nowait((session_id, token, batch))
            except Exception as exc:
                self._queue.put_nowait((session_id, token, CallFailed.of(exc, where)))
                return
            self._queue.put_nowait((session_id, token, TurnStreamEnd()))

        return asyncio.ensure_future(run())

    async def pump(self) -> AsyncIterator[list[tuple[str, int, Any]]]:
        """What every turn emitted, one list per window. A newer pump (the caller
        reconnected) takes over the queue, and this one ends."""
        old, self._queue = self._queue, asyncio.Queue()
        while not old.empty():
            item = old.get_nowait()
            if item is not _STOP:
                self._queue.put_nowait(item)
        old.put_nowait(_STOP)  # ends the pump that was reading it, if any
        queue = self._queue
        while True:
            first = await queue.get()
            if first is _STOP:
                return
            await asyncio.sleep(self.window_s)  # gather the burst: other sessions' events come in the same runs
            items = [first]
            while not queue.empty():
                items.append(queue.get_nowait())
            stop = _STOP in items
            sent = [item for item in items if item is not _STOP]
            if sent:
                yield sent
            if stop:
                return


class _Lost:
    def __init__(self, exc: BaseException):
        self.exc = exc


class ActorEvents:
    """Caller side: reads one SessionActor's pump and hands each turn its batches."""

    def __init__(self, actor: Any):
        self.actor = actor
        self._readers: dict[tuple[str, int], asyncio.Queue] = {}
        self._tokens = itertools.count(1)
        self._pumping: asyncio.Task | None = None

    async def stream(self, session_id: str, begin: Callable[[int], Awaitable[Any]]) -> AsyncIterator[list]:
        """The batches of one turn of `session_id`, which `begin(token)` starts on the actor."""
        token = next(self._tokens)
        queue: asyncio.Queue = asyncio.Queue()
        self._readers[(session_id, token)] = queue
        try:
            if self._pumping is None or self._pumping.done():
                self._pumping = asyncio.ensure_future(self._pump())
            await begin(token)
            while True:
                batch = await queue.get()
                if isinstance(batch, _Lost):
                    raise batch.exc
                if isinstance(batch, CallFailed):
                    batch.raise_it()
                if isinstance(batch, TurnStreamEnd):
                    return
                yield batch
        finally:
            del self._readers[(session_id, token)]

    async def _pump(self) -> None:
        try:
            async for ref in self.actor.pump.remote():
                for session_id, token, batch in await ref:
                    reader = self._readers.get((session_id, token))
                    if reader is not None:  # a reader that gave up (cancelled) reads no more
                        reader.put_nowait(batch)
        except Exception as exc:  # the actor lost (or the pump broken): every waiting turn learns it
            for reader in list(self._readers.values()):
                reader.put_nowait(_Lost(exc))
            return
        ended = RuntimeError("the session actor's event pump ended")  # superseded by another caller's
        for reader in list(self._readers.values()):
            reader.put_nowait(_Lost(ended))
