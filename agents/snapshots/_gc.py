"""Garbage collection of a session's store: what only retired versions refer to.

A retired version goes with its journal entries (`agents.snapshots._journal`); the messages
those entries hold are inside them, so nothing else is referred to by them alone.

Runs inside one write transaction of its own (never inside a save's), after the save
that retired the versions committed; a collection killed part way deletes nothing.
"""

from __future__ import annotations

import diskcache

from agents.snapshots._errors import SnapshotCorrupt, SnapshotTooNew
from agents.snapshots._file import SessionRecord
from agents.snapshots._index import chunk_digests
from agents.snapshots._journal import JOURNAL_LIMIT, journal_key
from agents.snapshots._version import open_envelope

__all__ = ["collect"]


def _newest_first(chunk_lists: list[list[str]]):
    """Chunk keys by position from the end: every list's last, then every second-to-last, ..."""
    longest = max((len(keys) for keys in chunk_lists), default=0)
    for offset in range(1, longest + 1):
        for keys in chunk_lists:
            if offset <= len(keys):
                yield keys[-offset]


def collect(cache: diskcache.Cache, record: SessionRecord) -> bool:
    """Delete what only retired versions refer to; False (nothing deleted) while a live
    version was written by a newer Workingset, whose references this one cannot read."""

    def chunks_of(version: str) -> list[str]:
        try:
            return list(open_envelope(cache.get("v:" + version), version)["chunks"])
        except (SnapshotCorrupt, KeyError, TypeError):
            return []  # unreadable already; it keeps nothing alive

    try:
        live = [chunks_of(v) for v in [record.current, *record.history] if v is not None]
    except SnapshotTooNew:
        return False
    live_chunks = {key for keys in live for key in keys}
    dead_chunks = {key for v in record.retired for key in chunks_of(v)} - live_chunks
    # A message in a dead chunk is dead unless a live chunk holds it too. Live chunks are
    # searched from the end of each version (what a retired version had that changed
    # since is near its end) and the search stops once every candidate is found, so a
    # collection after appends reads a few chunks, not the whole history.
    candidates = {d for key in dead_chunks for d in chunk_digests(cache.get("c:" + key) or b"")}
    seen: set[str] = set()
    for key in _newest_first(live):
        if not candidates:
            break
        if key not in seen:
            seen.add(key)
            candidates.difference_update(chunk_digests(cache.get("c:" + key) or b""))
    for v in record.retired:
        cache.delete("v:" + v)
        for n in range(JOURNAL_LIMIT):  # a version's entries are numbered from 0 with no gap
            if not cache.delete(journal_key(v, n)):
                break
    for key in dead_chunks:
        cache.delete("c:" + key)
    for digest in candidates:
        cache.delete("m:" + digest)
    return True
