"""The artifact store: full bodies of tool results that compaction clipped or cleared.

Backed by diskcache, one directory per session, so the record survives the
process and can be opened from any worker that sees the directory. A body is
written once (the first, fullest version wins) and never edited.
"""

from __future__ import annotations

from pathlib import Path

import diskcache

__all__ = ["ArtifactStore"]


class ArtifactStore:
    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._opened: diskcache.Cache | None = None

    @property
    def _cache(self) -> diskcache.Cache:
        # Opened on first use: most sessions never clip or clear a result.
        if self._opened is None:
            self._opened = diskcache.Cache(str(self.directory))
        return self._opened

    def put(self, artifact_id: str, body: str) -> bool:
        """Keep `body` under `artifact_id` unless something is already kept there."""
        return bool(self._cache.add(artifact_id, body))

    def get(self, artifact_id: str) -> str | None:
        value = self._cache.get(artifact_id)
        return value if isinstance(value, str) else None

    def __contains__(self, artifact_id: object) -> bool:
        return artifact_id in self._cache

    def __len__(self) -> int:
        return len(self._cache)

    def close(self) -> None:
        if self._opened is not None:
            self._opened.close()

    def __getstate__(self) -> dict:
        return {"directory": self.directory}

    def __setstate__(self, state: dict) -> None:
        self.directory = Path(state["directory"])
        self._opened = None
