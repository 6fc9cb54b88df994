"""The SnapshotStore port over the synchronous DiskSnapshotStore.

The port is async so that a process hosting many sessions (a SessionActor) never
blocks its event loop on a snapshot: each call runs in a worker thread. The copy a
session saves is taken before the call leaves the loop, so the thread never sees
the live state. A store with an async API of its own implements the port directly
and this adapter goes away.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from agents.session_state import LoadedSnapshot, SessionState
from agents.snapshot_store import DiskSnapshotStore, SessionInfo

__all__ = ["ThreadedSnapshotStore"]


class ThreadedSnapshotStore:
    """The async SnapshotStore port for a DiskSnapshotStore (its calls in a thread)."""

    def __init__(self, store: DiskSnapshotStore):
        self.store = store

    async def save(self, state: SessionState) -> str:
        return await asyncio.to_thread(self.store.save, state)

    async def load(self, session_id: str, version: str | None = None) -> LoadedSnapshot:
        return await asyncio.to_thread(self.store.load, session_id, version)

    def sessions(self, cwd: Path | None = None) -> list[SessionInfo]:
        return self.store.sessions(cwd)

    def close(self) -> None:
        self.store.close()
