"""The SnapshotStore on diskcache: versioned, content-addressed, checksummed, delta-saved.

One store file per session (`<root>/<session_id>/cache.db`, see `agents.snapshots._file`):

    m:<digest>   one message, msgpack; its key is the sha256 of its bytes
    c:<digest>   a chunk of up to 64 message digests (the version's index, in pieces)
    v:<id>       a version: envelope {schema, sum, body}; body = header + chunk digests
    j:<id>:<n>   journal entry n on version <id>: a save made inside a turn (agents.snapshots._journal)
    session      the record: current, history (oldest first), retired, and what lists show

A save is one SQLite transaction that adds what the version needs and moves `current`;
it never rewrites a stored key, so a save killed at any moment, or failing on a full
disk, leaves the previous state exactly as it was. Only the new messages are encoded
and written (`agents.snapshots._index`), so a save costs the same at any history length.
A save made inside a turn (reason `tool_batch`) that only appends to what this process
last stored is one added journal row instead (`agents.snapshots._journal`): no record is
rewritten and no history rotates, so the twice-per-call saves of a turn cost one small
insert each; the current version is read with its journal.
Versions leave the history at once; their data is collected later, in a transaction of
its own, and only what no remaining version refers to. Two processes writing one
session serialize on SQLite's write lock. A version whose checksum, chunk or message
digest does not verify is corrupt: loading falls back to the newest intact one and
overwrites nothing; one written by a newer Workingset is refused. A damaged store file
affects its own session only.

Sync methods serve the CLI and tests; `asave`/`aload`/... run the same work on the
store's one writer thread, so an event loop never waits on the disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import resource
import shutil
import sqlite3
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import diskcache
from pydantic import BaseModel

from agents.session import SessionState
from agents.snapshots._codec import CodecError, pack
from agents.snapshots._errors import (
    SnapshotCorrupt,
    SnapshotError,
    SnapshotNotFound,
    SnapshotTooNew,
    StoreDamaged,
    StoreDiskFull,
)
from agents.snapshots._file import (
    SessionRecord,
    StoreReader,
    damaged,
    decode_record,
    open_for_write,
    quarantine,
    store_error,
)
from agents.snapshots._gc import collect
from agents.snapshots._index import Delta, StoredIndex, plan
from agents.snapshots._journal import (
    JOURNAL_LIMIT,
    JOURNALED_REASON,
    JournalTip,
    entry_name,
    journal_key,
    make_entry,
    read_journal,
    split_name,
)
from agents.snapshots._version import make_envelope, open_envelope, read_version

__all__ = [
    "DiskSnapshotStore",
    "LoadedSnapshot",
    "SessionInfo",
    "SnapshotCorrupt",
    "SnapshotError",
    "SnapshotNotFound",
    "SnapshotTooNew",
    "StoreDamaged",
    "StoreDiskFull",
    "StoreProblem",
    "StoreScan",
    "VersionInfo",
]


def _open_limit() -> int:
    """Store files kept open for writing: each holds about three descriptors, and
    reopening one costs more than a save, so as many as the process's descriptor limit
    comfortably allows; past it the least recently used closes. A session releases its
    own when it closes."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 4096 if soft == resource.RLIM_INFINITY else max(64, min(4096, soft // 6))


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
    moved_aside: str = ""  # where a damaged earlier store of this session was moved


class StoreProblem(BaseModel):
    session_id: str
    problem: str


class StoreScan(BaseModel):
    sessions: list[SessionInfo]  # newest first
    problems: list[StoreProblem]  # sessions whose store cannot be read


class LoadedSnapshot(BaseModel):
    state: SessionState
    version: str
    problem: str | None = None  # set when the requested version was corrupt and an older one was used


def _blame_the_file(reader: StoreReader, exc: SnapshotCorrupt) -> None:
    """A version that fails its checks may be the sign of a damaged file: SQLite's check of
    the whole file (run only now, not on every open) tells which. Raises StoreDamaged when
    the file is damaged; returns when only the version is."""
    verdict = reader.check()
    if verdict != "ok":
        raise damaged(
            reader.session_id, reader.directory, f"{exc}, and SQLite's check of the file reports: {verdict}"
        ) from exc


def _check_id(session_id: str) -> str:
    # A name starting with a dot is never a session: `<root>/.quarantine/` holds stores moved aside.
    if not session_id or "/" in session_id or "\0" in session_id or session_id.startswith("."):
        raise SnapshotError(f"invalid session id {session_id!r}")
    return session_id


class DiskSnapshotStore:
    def __init__(self, root: Path, *, max_history: int = 50, max_age_days: float = 30.0):
        self.root = Path(root)
        self.max_history = max_history
        self.max_age_s = max_age_days * 86_400
        self._lock = threading.RLock()  # one writer at a time in this process
        self._worker_lock = threading.Lock()
        self._caches: OrderedDict[str, diskcache.Cache] = OrderedDict()
        self._indexes: dict[str, StoredIndex] = {}  # per session: a stored version, as this process knows it
        self._tips: dict[str, JournalTip] = {}  # per session: what it last stored (a version and its journal)
        self._worker: ThreadPoolExecutor | None = None
        self._open_limit = _open_limit()

    # -- writing ------------------------------------------------------------------------

    def save(self, state: SessionState, *, version: str | None = None) -> str:
        """Store `state` as the session's new current version; return its id. `version`
        names it (the doctor keeps salvaged versions' ids); it must sort after the current."""
        with self._lock:
            version, collect = self._write(state, version=version)
            if collect:
                self._collect_quietly(state.session_id)
            return version

    def restore(self, session_id: str, version: str) -> str:
        """Make an older version current again (the current one rotates into history)."""
        loaded = self.load(session_id, version, fall_back=False)
        return self.save(loaded.state.model_copy(update={"saved_at": time.time(), "reason": f"restored {version}"}))

    def _write(self, state: SessionState, *, version: str | None = None) -> tuple[str, bool]:
        """Returns (version or journal entry, whether retired versions await collection)."""
        sid = _check_id(state.session_id)
        tip = self._tips.get(sid)
        if version is None and tip is not None and state.reason == JOURNALED_REASON and tip.entries < JOURNAL_LIMIT:
            appended = tip.appended(state.conversation)
            if appended is not None:
                name = self._journal(sid, state, tip, appended)
                if name is not None:
                    return name, False
        stored = self._indexes.get(sid)
        try:
            delta = plan(state.conversation, stored)
            envelope = make_envelope(state.header(), delta)  # the same whatever `delta` was planned against
        except CodecError as exc:
            raise SnapshotError(f"session {sid} cannot be saved: {exc}; the previous snapshot is unchanged") from exc
        try:
            written = self._commit(sid, state, envelope, delta, stored, version)
        except StoreDamaged as exc:
            # Keep the damaged file aside, whole, and go on in a fresh store that starts
            # with this state (its record says where the old one went).
            self._set_aside(sid, str(exc))
            written = self._commit(sid, state, envelope, plan(state.conversation, None), None, version)
        version, collect, delta, stored = written
        if stored is None:
            self._indexes[sid] = delta.fresh_index(version)
        else:
            stored.advance(delta, version)
        self._tips[sid] = JournalTip(version, 0, list(state.conversation))
        return version, collect

    def _journal(self, sid: str, state: SessionState, tip: JournalTip, appended: list) -> str | None:
        """Store `state` as the next journal entry on the version this process last stored
        (`agents.snapshots._journal`); None when only a version can store it (another process
        saved the session since, or the store was found damaged and set aside)."""
        try:
            entry = make_entry(state.header(), appended, len(state.conversation))
        except CodecError as exc:
            raise SnapshotError(f"session {sid} cannot be saved: {exc}; the previous snapshot is unchanged") from exc
        try:
            cache = self._writable(sid)
            with cache.transact():
                if self._record(cache, sid).current != tip.version:
                    return None
                if not cache.add(journal_key(tip.version, tip.entries), entry):  # never replaces an entry
                    return None
        except StoreDamaged:
            return None
        except (OSError, sqlite3.Error, diskcache.Timeout) as exc:
            raise store_error(exc, sid, self.root / sid, "write") from exc
        name = entry_name(tip.version, tip.entries)
        tip.advance(appended)
        return name

    def _commit(
        self,
        sid: str,
        state: SessionState,
        envelope: bytes,
        delta: Delta,
        stored: StoredIndex | None,
        version: str | None,
    ) -> tuple[str, bool, Delta, StoredIndex | None]:
        """The save's one transaction."""
        try:
            cache = self._writable(sid)
            with cache.transact():
                record = self._record(cache, sid)
                if stored is not None and not record.holds(stored.version):
                    # Another process collected the version this delta builds on: add every key.
                    delta, stored = plan(state.conversation, None), None
                # `add` never replaces a stored key. Content-addressed keys always hold the
                # same bytes, and replacing one is the only write that could touch data an
                # earlier version needs.
                for digest, data in delta.new_messages.items():
                    cache.add("m:" + digest, data)
                for key, chunk in delta.new_chunks.items():
                    cache.add("c:" + key, chunk)
                if version is not None and record.current and version <= record.current:
                    raise SnapshotError(f"version {version} of session {sid} would not be newer than {record.current}")
                version = version or self._next_version(record)
                cache.set("v:" + version, envelope)
                collect = self._rotate(cache, record, state, delta, version)
        except (OSError, sqlite3.Error, diskcache.Timeout) as exc:
            raise store_error(exc, sid, self.root / sid, "write") from exc
        return version, collect, delta, stored

    @staticmethod
    def _next_version(record: SessionRecord) -> str:
        """Named by the clock, and always after the current one (clocks step back)."""
        after = int(record.current) + 1 if record.current else 0
        return f"{max(time.time_ns(), after):020d}"

    def _rotate(
        self, cache: diskcache.Cache, record: SessionRecord, state: SessionState, delta: Delta, version: str
    ) -> bool:
        history = list(record.history)
        if record.current:
            history.append(record.current)
        cutoff_ns = (time.time() - self.max_age_s) * 1e9
        kept = [v for v in history if int(v) >= cutoff_ns][-self.max_history :] if self.max_history else []
        # Versions leave the history at once; their data is collected once per `slack`
        # retirements, since collecting reads every kept version's index.
        staying = set(kept)
        retired = [*record.retired, *(v for v in history if v not in staying)]
        updated = record.model_copy(
            update={
                "current": version,
                "history": kept,
                "retired": retired,
                "cwd": state.cwd,
                "model": state.model,
                "saved_at": state.saved_at,
                "messages": delta.count,
                "last_text": delta.last_text,
            }
        )
        cache.set("session", pack(updated.model_dump()))
        return len(retired) >= max(self.max_history // 4, 1)

    def _record(self, cache: diskcache.Cache, sid: str) -> SessionRecord:
        return decode_record(cache.get("session"), sid, self.root / sid) or SessionRecord()

    def collect_garbage(self, session_id: str) -> None:
        """Delete the retired versions and whatever only they referred to, in one transaction."""
        sid = _check_id(session_id)
        with self._lock:
            cache = self._writable(sid)
            try:
                with cache.transact():
                    record = self._record(cache, sid)
                    if record.retired and collect(cache, record):
                        cache.set("session", pack(record.model_copy(update={"retired": []}).model_dump()))
            except (OSError, sqlite3.Error, diskcache.Timeout) as exc:
                raise store_error(exc, sid, self.root / sid, "collect garbage in") from exc

    def _collect_quietly(self, session_id: str) -> None:
        with contextlib.suppress(SnapshotError):  # nothing is lost: the retired versions wait for the next one
            self.collect_garbage(session_id)

    def _writable(self, sid: str) -> diskcache.Cache:
        cache = self._caches.get(sid)
        if cache is not None:
            self._caches.move_to_end(sid)
            return cache
        directory = self.root / sid
        if (directory / "cache.db").is_file():
            try:
                with StoreReader(sid, directory) as reader:
                    reader.record()  # refuses a newer store format before anything is written
            except StoreDamaged as exc:
                self._set_aside(sid, str(exc))
                return self._caches[sid]
        cache = open_for_write(sid, directory)
        self._caches[sid] = cache
        while len(self._caches) > self._open_limit:
            self._caches.popitem(last=False)[1].close()
        return cache

    def _set_aside(self, sid: str, why: str) -> None:
        """Move a damaged store aside; the fresh one records where it went."""
        cache = self._caches.pop(sid, None)
        if cache is not None:
            cache.close()
        self._indexes.pop(sid, None)
        self._tips.pop(sid, None)
        target = quarantine(self.root, sid, why)
        fresh = open_for_write(sid, self.root / sid)
        try:
            fresh.set("session", pack(SessionRecord(moved_aside=str(target)).model_dump()))
        except (OSError, sqlite3.Error) as exc:
            raise store_error(exc, sid, self.root / sid, "write") from exc
        self._caches[sid] = fresh

    # -- reading ------------------------------------------------------------------------

    def load(self, session_id: str, version: str | None = None, *, fall_back: bool = True) -> LoadedSnapshot:
        """The current version with its journal (or `version`: a version alone, or
        `<version>.<n>`, one with its journal entries up to n)."""
        sid = _check_id(session_id)
        with StoreReader(sid, self.root / sid) as reader:
            record = reader.record()
            if record is None or not record.current:
                raise SnapshotNotFound(f"no snapshot of session {sid} in {self.root}")
            wanted, upto = split_name(version or record.current)
            if wanted != record.current and wanted not in record.history:
                raise SnapshotNotFound(
                    f"version {wanted} of session {sid} is not kept; `workingset sessions history "
                    f"{sid}` lists the versions there are"
                )
            try:
                state, index = read_version(reader, wanted)
                loaded = self._with_journal(reader, wanted, state, upto, whole=version is None)
            except SnapshotCorrupt as exc:
                _blame_the_file(reader, exc)
                if not fall_back:
                    raise
                state, index = self._fall_back(reader, record, wanted, exc)
                problem = f"{exc}; using the newest intact version {index.version} instead"
                loaded = LoadedSnapshot(state=state, version=index.version, problem=problem)
        with self._lock:
            self._indexes[sid] = index  # the next save is a delta against what was read
            if loaded.problem is None and version is None:  # and the next save inside a turn an entry after it
                last = split_name(loaded.version)[1]
                self._tips[sid] = JournalTip(
                    index.version, 0 if last is None else last + 1, list(loaded.state.conversation)
                )
            else:
                self._tips.pop(sid, None)
        return loaded

    @staticmethod
    def _with_journal(
        reader: StoreReader, version: str, state: SessionState, upto: int | None, *, whole: bool
    ) -> LoadedSnapshot:
        """`state` with the journal entries on it: all of them (`whole`), up to `upto`, or none."""
        if upto is None and not whole:
            return LoadedSnapshot(state=state, version=version)
        state, applied, problem = read_journal(reader, version, state, upto=upto)
        if upto is not None and applied <= upto and problem is None:
            raise SnapshotNotFound(
                f"journal entry {entry_name(version, upto)} of session {reader.session_id} is not stored"
            )
        name = entry_name(version, applied - 1) if applied else version
        return LoadedSnapshot(state=state, version=name, problem=problem)

    def _fall_back(self, reader: StoreReader, record: SessionRecord, wanted: str, exc: SnapshotCorrupt):
        for older in reversed([v for v in record.history if v < wanted]):
            try:
                return read_version(reader, older)
            except SnapshotCorrupt:
                continue
        raise SnapshotCorrupt(
            f"{exc}; no intact older version exists in {reader.directory / 'cache.db'}; "
            "`workingset sessions doctor` moves the store aside",
            version=wanted,
        ) from exc

    def history(self, session_id: str) -> list[VersionInfo]:
        """Newest first; the current version is marked."""
        sid = _check_id(session_id)
        with StoreReader(sid, self.root / sid) as reader:
            record = reader.record()
            if record is None or not record.current:
                raise SnapshotNotFound(f"no snapshot of session {sid} in {self.root}")
            infos = []
            for version in [record.current, *reversed(record.history)]:
                current = version == record.current
                try:
                    body = open_envelope(reader.value("v:" + version), version)
                    header = body["header"]
                    infos.append(
                        VersionInfo(
                            version=version,
                            saved_at=header["saved_at"],
                            reason=header.get("reason", ""),
                            messages=body["count"],
                            current=current,
                        )
                    )
                except (SnapshotCorrupt, KeyError, TypeError):
                    infos.append(
                        VersionInfo(
                            version=version,
                            saved_at=int(version) / 1e9,
                            reason="(corrupt)",
                            messages=0,
                            current=current,
                        )
                    )
                except SnapshotTooNew as exc:
                    infos.append(
                        VersionInfo(
                            version=version,
                            saved_at=int(version) / 1e9,
                            reason=f"(schema {exc.found}, newer)",
                            messages=0,
                            current=current,
                        )
                    )
            return infos

    def scan(self, cwd: Path | None = None) -> StoreScan:
        """Every stored session (optionally only one workspace's), and every store that
        cannot be read — a damaged file names its session and leaves the others listed."""
        found, problems = [], []
        for directory in self.session_dirs():
            try:
                with StoreReader(directory.name, directory) as reader:
                    record = reader.record()
            except SnapshotNotFound:
                continue
            except SnapshotError as exc:
                problems.append(StoreProblem(session_id=directory.name, problem=str(exc)))
                continue
            if record is None or not record.current or (cwd is not None and record.cwd != str(cwd)):
                continue
            found.append(
                SessionInfo(
                    session_id=directory.name,
                    cwd=record.cwd,
                    model=record.model,
                    saved_at=record.saved_at,
                    messages=record.messages,
                    last_text=record.last_text,
                    moved_aside=record.moved_aside,
                )
            )
        found.sort(key=lambda s: s.saved_at, reverse=True)
        return StoreScan(sessions=found, problems=problems)

    def sessions(self, cwd: Path | None = None) -> list[SessionInfo]:
        """Every readable stored session (optionally only one workspace's), newest first."""
        return self.scan(cwd).sessions

    def session_dirs(self) -> list[Path]:
        """The directories that may hold a session's store (not `.quarantine/` and the like)."""
        if not self.root.is_dir():
            return []
        return sorted(d for d in self.root.iterdir() if d.is_dir() and not d.name.startswith("."))

    # -- asynchronous use: the same work on the store's writer thread ---------------------

    def _executor(self) -> ThreadPoolExecutor:
        # Not the store's lock: the writer holds that through a save, and the event
        # loops that hand it work must never wait on the disk.
        with self._worker_lock:
            if self._worker is None:
                # One thread: saves of a session are written in the order they were asked for,
                # and a load sees every save asked for before it.
                self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="snapshot-writer")
            return self._worker

    async def _off_loop(self, fn, *args, **kwargs):
        return await asyncio.get_running_loop().run_in_executor(
            self._executor(), functools.partial(fn, *args, **kwargs)
        )

    async def asave(self, state: SessionState) -> str:
        """`save` without blocking the event loop; garbage collection follows in the background."""

        def write() -> tuple[str, bool]:
            with self._lock:
                return self._write(state)

        version, collect = await self._off_loop(write)
        if collect:
            self._executor().submit(self._collect_quietly, state.session_id)
        return version

    async def aload(self, session_id: str, version: str | None = None, *, fall_back: bool = True) -> LoadedSnapshot:
        return await self._off_loop(self.load, session_id, version, fall_back=fall_back)

    async def ahistory(self, session_id: str) -> list[VersionInfo]:
        return await self._off_loop(self.history, session_id)

    async def ascan(self, cwd: Path | None = None) -> StoreScan:
        return await self._off_loop(self.scan, cwd)

    def release(self, session_id: str) -> None:
        """Close `session_id`'s store file (its session has closed); a later save or load
        opens it again."""
        sid = _check_id(session_id)
        with self._lock:
            cache = self._caches.pop(sid, None)
            self._indexes.pop(sid, None)
            self._tips.pop(sid, None)
            if cache is not None:
                cache.close()

    async def arelease(self, session_id: str) -> None:
        """`release` on the writer thread, after the saves queued before it (the store
        file's connection belongs to that thread)."""
        await self._off_loop(self.release, session_id)

    async def aclose(self) -> None:
        """Wait for queued saves, then close (off the loop)."""
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    # -- housekeeping -------------------------------------------------------------------

    def delete(self, session_id: str) -> None:
        sid = _check_id(session_id)
        with self._lock:
            cache = self._caches.pop(sid, None)
            if cache is not None:
                cache.close()
            self._indexes.pop(sid, None)
            self._tips.pop(sid, None)
            shutil.rmtree(self.root / sid, ignore_errors=True)

    def close(self) -> None:
        """Finish queued work, then close every store file this store opened."""
        with self._worker_lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.submit(self._close_caches).result()  # connections are per thread
            worker.shutdown(wait=True)
        self._close_caches()
        with self._lock:
            self._caches.clear()

    def _close_caches(self) -> None:
        with self._lock:
            for cache in self._caches.values():
                cache.close()
