"""Where the batch's sessions run.

`RayHost`: a SessionPool — many sessions on a few SessionActors, tool calls as
sandboxed Ray tasks on the workspace's node, summaries through the shared compactor
pool. A killed actor is handled by RemoteSession (reopen from the last snapshot,
re-run the interrupted turn); what it cannot recover is `retryable` here, and the
runner retries the task once.

`LocalHost`: each session in this process (`--local`): the same loop, no Ray.
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agents.config import WorkingsetSettings
from agents.events import EventSink
from agents.handle import SessionHandle
from agents.lifecycle import OpenSpec, SessionRuntime, open_or_resume

if TYPE_CHECKING:
    from cluster.session_pool import SessionPool

__all__ = ["LocalHost", "RayHost", "SessionHost", "default_actors"]


class SessionHost(Protocol):
    """Where the batch's sessions run: opens, closes and judges failures of them."""

    @property
    def name(self) -> str: ...  # "local" or "ray"

    async def start(self, settings: WorkingsetSettings) -> None: ...

    async def open(self, workspace: Path, settings: WorkingsetSettings, emit: EventSink) -> SessionHandle: ...

    async def close(self, handle: SessionHandle) -> None: ...

    def retryable(self, exc: BaseException) -> bool: ...

    async def shutdown(self) -> None: ...


def default_actors(concurrency: int) -> int:
    """A SessionActor hosts many sessions (they mostly wait on models): one per 16."""
    return max(1, min(8, math.ceil(concurrency / 16)))


class LocalHost:
    name = "local"

    async def start(self, settings: WorkingsetSettings) -> None:
        return None

    async def open(self, workspace: Path, settings: WorkingsetSettings, emit: EventSink) -> SessionHandle:
        return await open_or_resume(OpenSpec(settings, workspace), SessionRuntime(emit=emit))

    async def close(self, handle: SessionHandle) -> None:
        await handle.aclose()

    def retryable(self, exc: BaseException) -> bool:
        return False

    async def shutdown(self) -> None:
        return None


class RayHost:
    name = "ray"

    def __init__(self, *, actors: int):
        self.actors = actors
        self.pool: SessionPool | None = None

    async def start(self, settings: WorkingsetSettings) -> None:
        """Connect (or start the embedded cluster) and bring the pool up. `settings` are the
        batch's: the shared services (compactor pool, snapshot store) follow them."""
        from cluster.session_pool import SessionPool

        if self.pool is not None:
            return  # started already (a benchmark starts it before timing the batch)
        self.pool = SessionPool(settings, actors=self.actors)
        await self.pool.ready()

    async def open(self, workspace: Path, settings: WorkingsetSettings, emit: EventSink) -> SessionHandle:
        assert self.pool is not None, "start the host first"
        return await self.pool.open(workspace, settings=settings, emit=emit)

    async def close(self, handle: SessionHandle) -> None:
        from cluster.remote_session import RemoteSession

        assert self.pool is not None and isinstance(handle, RemoteSession)
        # Closing also stops a turn the caller gave up on (a wall-clock timeout).
        with contextlib.suppress(Exception):
            await self.pool.close(handle)

    def retryable(self, exc: BaseException) -> bool:
        """Lost infrastructure (an actor that did not come back, a dead worker), not a
        model or task error raised inside the actor."""
        from ray.exceptions import RayError, RayTaskError

        from cluster.runtime import ClusterError

        return isinstance(exc, ClusterError) or (isinstance(exc, RayError) and not isinstance(exc, RayTaskError))

    async def shutdown(self) -> None:
        if self.pool is not None:
            with contextlib.suppress(Exception):
                self.pool.shutdown()
            self.pool = None
