"""The SnapshotStore on diskcache: versioned, content-addressed, checksummed.

One diskcache directory per session (`<root>/<session_id>/`):

    m:<digest>   one message, msgpack; its key is the sha256 of its bytes
    c:<digest>   a chunk of up to 64 message digests (the version's index, in pieces)
    v:<id>       a version: envelope {schema, sum, body}; body = header + chunk digests
    session      {current, history (oldest first), cwd, model, saved_at, messages, last_text}

A new version stores only messages and index chunks it has not stored before, so a
history of many versions of a growing conversation stays near one version's size.
Every write is one SQLite transaction (diskcache `transact`), so two processes
writing the same session serialize instead of interleaving. A version whose
checksum, chunk or message digest does not verify is corrupt; loading falls back to
the newest intact history version and overwrites nothing.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import time
from pathlib import Path

import diskcache
from pydantic import BaseModel

from agents.codec import CodecError, decode_message, encode_message, pack, unpack
from agents.errors import WorkingsetError
from agents.session_state import READABLE_SCHEMAS, SCHEMA_VERSION, LoadedSnapshot, SessionState

__all__ = [
    "DiskSnapshotStore",
    "LoadedSnapshot",
    "SessionInfo",
    "SnapshotCorrupt",
    "SnapshotError",
    "SnapshotNotFound",
    "VersionInfo",
]

_CHUNK = 64
_DIGEST_BYTES = 32


class SnapshotError(WorkingsetError):
    """A snapshot could not be written or read."""


class SnapshotNotFound(SnapshotError):
    pass


class SnapshotCorrupt(SnapshotError):
    def __init__(self, message: str, *, version: str):
        super().__init__(message)
        self.version = version


class VersionInfo(BaseModel):
    version: str
    saved_at: float
    reason: str
    messages: int
    current: bool


class SessionInfo(BaseModel):
    session_id: str
    cwd: str
    model: str
    saved_at: float
    messages: int
    last_text: str = ""


class DiskSnapshotStore:
    def __init__(self, root: Path, *, max_history: int = 50, max_age_days: float = 30.0):
        self.root = Path(root)
        self.max_history = max_history
        self.max_age_s = max_age_days * 86_400
        self._caches: dict[str, diskcache.Cache] = {}
        self._known: dict[str, set[str]] = {}  # keys this process knows are stored
        self._gc_seen: dict[str, int] = {}  # the session's garbage-collection count `_known` is valid for

    # -- writing ------------------------------------------------------------------------

    def save(self, state: SessionState) -> str:
        """Store `state` as the session's new current version; return its id."""
        sid = state.session_id
        known = self._known.setdefault(sid, set())
        encoded = [encode_message(m) for m in state.conversation]
        chunks = [b"".join(bytes.fromhex(d) for d, _ in encoded[i : i + _CHUNK]) for i in range(0, len(encoded), _CHUNK)]
        chunk_keys = [hashlib.sha256(c).hexdigest() for c in chunks]
        body = pack({"header": state.header(), "chunks": chunk_keys, "count": len(encoded)})
        envelope = pack({"schema": SCHEMA_VERSION, "sum": hashlib.sha256(body).hexdigest(), "body": body})
        version = f"{time.time_ns():020d}"
        try:
            cache = self._cache(sid)
            with cache.transact():
                if cache.get("gc", 0) != self._gc_seen.get(sid):
                    # Another writer collected garbage since: what this process stored may be gone.
                    known.clear()
                    self._gc_seen[sid] = cache.get("gc", 0)
                # Content-addressed: a key always holds the same bytes, so a plain set is
                # safe and costs one statement where add would check first.
                for digest, data in encoded:
                    if "m:" + digest not in known:
                        cache.set("m:" + digest, data)
                for key, chunk in zip(chunk_keys, chunks, strict=True):
                    if "c:" + key not in known:
                        cache.set("c:" + key, chunk)
                cache.set("v:" + version, envelope)
                self._rotate(cache, state, version)
        except (OSError, sqlite3.Error, diskcache.Timeout) as exc:
            raise SnapshotError(f"could not write snapshot of session {sid} to {self.root / sid}: {exc}") from exc
        known.update("m:" + d for d, _ in encoded)
        known.update("c:" + k for k in chunk_keys)
        return version

    def _rotate(self, cache: diskcache.Cache, state: SessionState, version: str) -> None:
        record = cache.get("session") or {"history": []}
        history: list[str] = list(record["history"])
        if record.get("current"):
            history.append(record["current"])
        cutoff_ns = (time.time() - self.max_age_s) * 1e9
        kept = [v for v in history if int(v) >= cutoff_ns][-self.max_history :] if self.max_history else []
        # Versions leave the history at once, but their data is deleted in batches:
        # collecting garbage reads every kept version's index, so it runs once per
        # `slack` retirements instead of on every save once the history is full.
        retired = [*record.get("retired", []), *(v for v in history if v not in set(kept))]
        slack = max(self.max_history // 4, 1)
        dropped = retired if len(retired) >= slack else []
        last_text = next((m.text for m in reversed(state.conversation) if m.role == "assistant" and m.text), "")
        cache.set(
            "session",
            {
                "current": version,
                "history": kept,
                "retired": [] if dropped else retired,
                "cwd": state.cwd,
                "model": state.model,
                "saved_at": state.saved_at,
                "messages": len(state.conversation),
                "last_text": last_text[:200],
            },
        )
        if dropped:
            for v in dropped:
                cache.delete("v:" + v)
            self._collect_garbage(cache, [version, *kept])

    def _collect_garbage(self, cache: diskcache.Cache, live_versions: list[str]) -> None:
        """Delete chunks and messages no remaining version refers to."""
        live: set[str] = set()
        for v in live_versions:
            try:
                body = self._open_envelope(cache, v)
            except SnapshotCorrupt:
                continue
            for key in body["chunks"]:
                live.add("c:" + key)
                chunk = cache.get("c:" + key) or b""
                live.update("m:" + chunk[i : i + _DIGEST_BYTES].hex() for i in range(0, len(chunk), _DIGEST_BYTES))
        deleted = set()
        for key in list(cache.iterkeys()):
            if isinstance(key, str) and key[:2] in ("m:", "c:") and key not in live:
                cache.delete(key)
                deleted.add(key)
        counter = cache.get("gc", 0) + 1
        cache.set("gc", counter)
        # This process did the collection, so what it knows minus what it deleted stays true.
        sid = Path(cache.directory).name
        self._known.setdefault(sid, set()).difference_update(deleted)
        self._gc_seen[sid] = counter

    def restore(self, session_id: str, version: str) -> str:
        """Make an older version current again (the current one rotates into history)."""
        loaded = self.load(session_id, version, fall_back=False)
        return self.save(loaded.state.model_copy(update={"saved_at": time.time(), "reason": f"restored {version}"}))

    # -- reading ------------------------------------------------------------------------

    def load(self, session_id: str, version: str | None = None, *, fall_back: bool = True) -> LoadedSnapshot:
        cache = self._cache(session_id, create=False)
        record = cache.get("session")
        if not record or not record.get("current"):
            raise SnapshotNotFound(f"no snapshot of session {session_id} in {self.root}")
        wanted = version or record["current"]
        if wanted != record["current"] and wanted not in record["history"]:
            raise SnapshotNotFound(
                f"version {wanted} of session {session_id} is not kept; `workingset sessions history "
                f"{session_id}` lists the versions there are"
            )
        try:
            return LoadedSnapshot(state=self._read_version(cache, wanted), version=wanted)
        except SnapshotCorrupt as exc:
            if not fall_back:
                raise
            for older in reversed([v for v in record["history"] if v < wanted]):
                try:
                    state = self._read_version(cache, older)
                except SnapshotCorrupt:
                    continue
                problem = f"{exc}; using the newest intact version {older} instead"
                return LoadedSnapshot(state=state, version=older, problem=problem)
            raise SnapshotCorrupt(f"{exc}; no intact older version exists", version=wanted) from exc

    def _open_envelope(self, cache: diskcache.Cache, version: str) -> dict:
        raw = cache.get("v:" + version)
        if raw is None:
            raise SnapshotCorrupt(f"snapshot version {version} is missing", version=version)
        try:
            envelope = unpack(raw)
            if envelope.get("schema") not in READABLE_SCHEMAS:
                raise SnapshotCorrupt(
                    f"snapshot version {version} has schema {envelope.get('schema')!r}; this Workingset reads schemas "
                    f"{READABLE_SCHEMAS[0]} to {SCHEMA_VERSION}",
                    version=version,
                )
            body = envelope["body"]
            if hashlib.sha256(body).hexdigest() != envelope["sum"]:
                raise SnapshotCorrupt(f"snapshot version {version} fails its checksum", version=version)
            return unpack(body)
        except (CodecError, KeyError, TypeError, AttributeError) as exc:
            raise SnapshotCorrupt(f"snapshot version {version} cannot be decoded ({exc})", version=version) from exc

    def _read_version(self, cache: diskcache.Cache, version: str) -> SessionState:
        body = self._open_envelope(cache, version)
        messages = []
        try:
            for key in body["chunks"]:
                chunk = cache.get("c:" + key)
                if chunk is None or hashlib.sha256(chunk).hexdigest() != key:
                    raise SnapshotCorrupt(f"snapshot version {version}: index chunk {key[:12]} is missing or damaged", version=version)
                for i in range(0, len(chunk), _DIGEST_BYTES):
                    digest = chunk[i : i + _DIGEST_BYTES].hex()
                    data = cache.get("m:" + digest)
                    if data is None or hashlib.sha256(data).hexdigest() != digest:
                        raise SnapshotCorrupt(f"snapshot version {version}: message {digest[:12]} is missing or damaged", version=version)
                    messages.append(decode_message(data))
            return SessionState.model_validate({**body["header"], "conversation": messages})
        except (CodecError, ValueError, KeyError) as exc:
            if isinstance(exc, SnapshotCorrupt):
                raise
            raise SnapshotCorrupt(f"snapshot version {version} does not hold a valid session ({exc})", version=version) from exc

    def history(self, session_id: str) -> list[VersionInfo]:
        """Newest first; the current version is marked."""
        cache = self._cache(session_id, create=False)
        record = cache.get("session")
        if not record:
            raise SnapshotNotFound(f"no snapshot of session {session_id} in {self.root}")
        infos = []
        for version in [record["current"], *reversed(record["history"])]:
            try:
                body = self._open_envelope(cache, version)
                header = body["header"]
                infos.append(VersionInfo(version=version, saved_at=header["saved_at"], reason=header.get("reason", ""),
                                         messages=body["count"], current=version == record["current"]))
            except SnapshotCorrupt:
                infos.append(VersionInfo(version=version, saved_at=int(version) / 1e9, reason="(corrupt)", messages=0,
                                         current=version == record["current"]))
        return infos

    def sessions(self, cwd: Path | None = None) -> list[SessionInfo]:
        """Every stored session (optionally only those of one workspace), newest first."""
        found = []
        if not self.root.is_dir():
            return found
        for directory in self.root.iterdir():
            if not (directory / "cache.db").is_file():
                continue
            record = self._cache(directory.name).get("session")
            if not record or (cwd is not None and record["cwd"] != str(cwd)):
                continue
            found.append(SessionInfo(session_id=directory.name, cwd=record["cwd"], model=record["model"],
                                     saved_at=record["saved_at"], messages=record["messages"], last_text=record["last_text"]))
        return sorted(found, key=lambda s: s.saved_at, reverse=True)

    def delete(self, session_id: str) -> None:
        cache = self._caches.pop(session_id, None)
        if cache is not None:
            cache.close()
        self._known.pop(session_id, None)
        shutil.rmtree(self.root / session_id, ignore_errors=True)

    def close(self) -> None:
        for cache in self._caches.values():
            cache.close()
        self._caches.clear()

    def _cache(self, session_id: str, *, create: bool = True) -> diskcache.Cache:
        if "/" in session_id or session_id in ("", ".", ".."):
            raise SnapshotError(f"invalid session id {session_id!r}")
        cache = self._caches.get(session_id)
        if cache is None:
            directory = self.root / session_id
            if not create and not directory.is_dir():
                raise SnapshotNotFound(f"no snapshot of session {session_id} in {self.root}")
            cache = diskcache.Cache(str(directory))
            self._caches[session_id] = cache
        return cache
