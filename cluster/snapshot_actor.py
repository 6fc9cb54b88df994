"""The SnapshotStore when sessions span nodes: one actor owns the diskcache.

Pinned to the node where the runtime started (the head), so a session resumed on
any node reads the same store. On a single node each process opens the diskcache
directly instead (it is safe across processes), which avoids a hop per turn.

The actor is asynchronous: its event loop hands every call to the store's writer
thread, so one session's save never holds up another session's call.

The actor restarts when killed. A call whose actor died under it (cluster.faults) is
made again on the restarted actor, up to LOST_TRIES times: loads, scans and releases
change nothing, and a save made twice stores the same state twice (the second becomes
`current`, the first one history). Only then is the store "unavailable".
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path

import ray
from ray.exceptions import RayError, RayTaskError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from agents.session import SessionState
from agents.snapshots import (
    DiskSnapshotStore,
    LoadedSnapshot,
    SessionInfo,
    SnapshotError,
    StoreScan,
    VersionInfo,
)
from cluster.faults import is_lost_infrastructure
from cluster.named_actor import NamedActor, start_named

__all__ = ["LOST_TRIES", "RaySnapshotStore", "SnapshotStoreActor", "start_snapshot_actor"]

LOST_TRIES = 4
_RESTART_PAUSE_S = 1.0


@ray.remote(num_cpus=0, max_restarts=-1)
class SnapshotStoreActor:
    def __init__(self, root: str, max_history: int, max_age_days: float):
        self.store = DiskSnapshotStore(Path(root), max_history=max_history, max_age_days=max_age_days)

    async def save(self, state: SessionState) -> str:
        return await self.store.asave(state)

    async def load(self, session_id: str, version: str | None) -> LoadedSnapshot:
        return await self.store.aload(session_id, version)

    async def history(self, session_id: str) -> list[VersionInfo]:
        return await self.store.ahistory(session_id)

    async def scan(self, cwd: str | None) -> StoreScan:
        return await self.store.ascan(Path(cwd) if cwd else None)

    async def release(self, session_id: str) -> None:
        await self.store.arelease(session_id)


@contextlib.contextmanager
def _store_errors() -> Iterator[None]:
    """The store's own errors come back as themselves (one line, not the actor's
    traceback); a store actor that is gone is a SnapshotError like a full disk."""
    try:
        yield
    except RayTaskError as exc:
        if isinstance(exc.cause, SnapshotError):
            raise exc.cause from None
        raise SnapshotError(f"the snapshot store actor failed: {exc.cause!r}") from exc
    except RayError as exc:
        raise SnapshotError(f"the snapshot store actor is unavailable ({type(exc).__name__})") from exc


class RaySnapshotStore:
    """The SnapshotStore port through the actor: the `a…` methods await the actor, so a
    session awaits its snapshot while the other sessions of its SessionActor go on (no
    blocking `ray.get` in a turn); the plain ones block on `ray.get`, for sync callers."""

    def __init__(self, named: NamedActor):
        self.named = named  # pickled as its name (named_actor.py)

    @property
    def actor(self):
        return self.named.handle

    async def _call(self, method: str, *args):
        """`method` on the actor, made again (up to LOST_TRIES) while its actor dies under it."""
        with _store_errors():
            for tried in range(1, LOST_TRIES + 1):
                try:
                    return await getattr(self.actor, method).remote(*args)
                except RayError as exc:
                    if tried == LOST_TRIES or not is_lost_infrastructure(exc):
                        raise
                    await asyncio.sleep(_RESTART_PAUSE_S * tried)  # a killed actor takes a moment to restart
        raise AssertionError("unreachable")

    async def asave(self, state: SessionState) -> str:
        return await self._call("save", state)

    async def aload(self, session_id: str, version: str | None = None) -> LoadedSnapshot:
        return await self._call("load", session_id, version)

    async def arelease(self, session_id: str) -> None:
        await self._call("release", session_id)

    async def ahistory(self, session_id: str) -> list[VersionInfo]:
        return await self._call("history", session_id)

    async def ascan(self, cwd: Path | None = None) -> StoreScan:
        return await self._call("scan", str(cwd) if cwd else None)

    def save(self, state: SessionState) -> str:
        return ray.get(self.actor.save.remote(state))

    def load(self, session_id: str, version: str | None = None) -> LoadedSnapshot:
        return ray.get(self.actor.load.remote(session_id, version))

    def history(self, session_id: str) -> list[VersionInfo]:
        return ray.get(self.actor.history.remote(session_id))

    def scan(self, cwd: Path | None = None) -> StoreScan:
        return ray.get(self.actor.scan.remote(str(cwd) if cwd else None))

    def sessions(self, cwd: Path | None = None) -> list[SessionInfo]:
        return self.scan(cwd).sessions


def start_snapshot_actor(root: Path, *, max_history: int, max_age_days: float, node_id: str) -> RaySnapshotStore:
    strategy = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
    return RaySnapshotStore(
        start_named(SnapshotStoreActor, "snapshots", str(root), max_history, max_age_days, scheduling_strategy=strategy)
    )
