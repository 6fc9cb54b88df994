"""One session's store file (`<root>/<session_id>/cache.db`): read-only reads, diskcache writes.

Reading never creates or changes anything. A missing `cache.db` is "no snapshot"; an
existing one is opened read-only by SQLite (which may add its `-wal`/`-shm` working
files beside it) and its rows are decoded the way diskcache wrote them. Opening through
diskcache would not do: its constructor writes its settings (and its tables, into any
SQLite file it is pointed at) on every open, so a read would need a writable disk and
could change a file that is not a store at all.

Opening checks the file's header and length first (`agents.snapshots._header`), so a
truncated, torn or overwritten file is reported when it is opened, naming what is wrong,
instead of at whichever page a read reaches first. Damage inside a page is SQLite's to
find when it reads it (or ours: every value is checksummed); a load that finds a version
corrupt asks SQLite to check the whole file (`quick_check`) before blaming that version
alone (`agents.snapshots._store`).

Writing goes through diskcache with every value kept inside SQLite: values in separate
files are outside the transaction (diskcache deletes a replaced file before the
enclosing transaction commits), which is how a killed save used to lose every version.
Nothing is evicted (a cache may drop entries; a store must not) and nothing is mapped
into memory (a file truncated under a mapping faults the process instead of failing).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import pickle
import shutil
import sqlite3
import tempfile
import threading
import time
from pathlib import Path, PurePosixPath
from typing import Any

import diskcache
from pydantic import BaseModel, ValidationError

from agents.snapshots._codec import CodecError, unpack
from agents.snapshots._errors import (
    SnapshotError,
    SnapshotNotFound,
    SnapshotTooNew,
    StoreDamaged,
    StoreDiskFull,
)
from agents.snapshots._header import header_damage

__all__ = [
    "STORE_FORMAT",
    "QUARANTINE",
    "SalvagedRows",
    "SessionRecord",
    "StoreReader",
    "decode_record",
    "disk_full_message",
    "open_for_write",
    "quarantine",
    "store_error",
]

# 2: the session record is msgpack and every value lives in SQLite. 1: a pickled
# record, values over 32 KiB in files beside the database (still read).
STORE_FORMAT = 2
QUARANTINE = ".quarantine"

_WRITE_SETTINGS = {
    "disk_min_file_size": 2**62,
    "eviction_policy": "none",
    "cull_limit": 0,
    "size_limit": 2**62,
    "sqlite_mmap_size": 0,
}
_RAW, _BINARY, _TEXT, _PICKLE = 1, 2, 3, 4  # diskcache's value modes
_BATCH = 500  # keys per SELECT (SQLite allows 999 parameters by default)
_SALVAGE_MISSES = 10_000  # unreadable rowids in a row after which salvage stops
_NEARLY_FULL = 1 << 20  # bytes free below which an I/O error is taken for a full disk


class SessionRecord(BaseModel):
    """The `session` key: which versions exist and what `sessions list` shows."""

    format: int = STORE_FORMAT
    current: str | None = None
    history: list[str] = []  # oldest first
    retired: list[str] = []  # out of the history, data not yet collected
    cwd: str = ""
    model: str = ""
    saved_at: float = 0.0
    messages: int = 0
    last_text: str = ""
    moved_aside: str = ""  # where a damaged earlier store of this session was moved

    def holds(self, version: str) -> bool:
        """True while every message and chunk `version` refers to is still stored."""
        return version == self.current or version in self.history or version in self.retired


class _NoObjects(pickle.Unpickler):
    """Format-1 records are pickled plain dicts; nothing else is ever unpickled."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a store record may not refer to {module}.{name}")


def decode_record(raw: Any, session_id: str, where: Path) -> SessionRecord | None:
    if raw is None:
        return None
    try:
        if isinstance(raw, bytes):
            fields = unpack(raw)
            found = fields.get("format") if isinstance(fields, dict) else None
            if isinstance(found, int) and found > STORE_FORMAT:
                raise SnapshotTooNew(
                    f"the store of session {session_id} ({where}) has format {found}; this Workingset reads "
                    f"formats 1 to {STORE_FORMAT}; resume it with the newer Workingset that wrote it",
                    found=found,
                )
        else:
            fields = {**raw, "format": 1}
        return SessionRecord.model_validate(fields)
    except (CodecError, ValidationError, TypeError) as exc:
        raise damaged(session_id, where, f"its session record is not a Workingset record ({_first_line(exc)})") from exc


def damaged(session_id: str, where: Path, why: str) -> StoreDamaged:
    return StoreDamaged(
        f"the snapshot store of session {session_id} ({where / 'cache.db'}) is damaged: {why}; "
        "`workingset sessions doctor` moves it aside and keeps what can still be read",
        session_id=session_id,
        why=why,
    )


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


class StoreReader:
    """A read-only view of one session's store file; use as a context manager."""

    def __init__(self, session_id: str, directory: Path, *, check_header: bool = True):
        self.session_id, self.directory = session_id, directory
        self._path = directory / "cache.db"
        if not self._path.is_file():
            raise SnapshotNotFound(f"no snapshot of session {session_id} in {directory.parent}")
        why = header_damage(self._path) if check_header else None  # the doctor reads past it
        if why is not None:
            raise damaged(session_id, directory, why)
        self._con = self._connect("?mode=ro")
        self._immutable = False

    def _connect(self, options: str) -> sqlite3.Connection:
        try:
            return sqlite3.connect(
                self._path.resolve().as_uri() + options, uri=True, timeout=30, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise store_error(exc, self.session_id, self.directory, "read") from exc

    def _without_working_files(self, exc: sqlite3.Error) -> bool:
        """A read-only connection still needs SQLite's shared-memory file, which cannot be
        made on a full disk or a read-only directory. When no write-ahead log holds changes
        not yet in the database file, the file alone is the whole store: read it as is."""
        if self._immutable or not getattr(exc, "sqlite_errorname", "").startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN")):
            return False
        wal = self._path.with_name("cache.db-wal")
        if wal.exists() and wal.stat().st_size > 0:
            return False
        self._con.close()
        self._con = self._connect("?mode=ro&immutable=1")
        self._immutable = True
        return True

    def __enter__(self) -> StoreReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._con.close()

    def check(self, *, full: bool = False) -> str:
        """SQLite's own check of the whole file: "ok" or what is wrong. `quick_check` reads
        every page and checks its structure; `full` (integrity_check) also checks that each
        index agrees with its table, which costs more (see benchmarks.snapshot_bench)."""
        rows = self._query("PRAGMA integrity_check(5)" if full else "PRAGMA quick_check(5)", ())
        return "; ".join(str(r[0]) for r in rows)

    def record(self) -> SessionRecord | None:
        tables = {r[0] for r in self._query("SELECT name FROM sqlite_master WHERE type = 'table'", ())}
        if "Cache" not in tables:
            if tables <= {"Settings"}:
                return None  # created, but the first save never finished
            listed = ", ".join(sorted(tables))
            raise damaged(self.session_id, self.directory, f"it is another program's database (tables {listed})")
        return decode_record(self.value("session"), self.session_id, self.directory)

    def value(self, key: str) -> Any:
        return self.values([key]).get(key)

    def salvage(self) -> SalvagedRows:
        """Every row that can still be read, found by walking the table in rowid order
        (not through its key index, which damage may have broken) and stepping over rows
        that cannot be read."""
        rows: dict[str, Any] = {}
        # SQLite refuses a whole file shorter than its header says; with this flag it reads
        # the pages that are there (a read-only connection still writes nothing).
        with contextlib.suppress(sqlite3.Error):
            self._con.execute("PRAGMA writable_schema = ON")
        last, misses, size = 0, 0, 256
        query = "SELECT rowid, key, mode, filename, value FROM Cache NOT INDEXED WHERE rowid > ? AND raw = 1 ORDER BY rowid LIMIT ?"
        while misses < _SALVAGE_MISSES:
            try:
                batch = self._con.execute(query, (last, size)).fetchall()
            except sqlite3.DatabaseError:
                if size > 1:  # some row of the batch is unreadable: take the rows before it one by one
                    size = 1
                else:
                    last, misses = last + 1, misses + 1
                continue
            if not batch:
                break
            misses, size = 0, 256
            for rowid, key, mode, filename, value in batch:
                decoded = self._decode(mode, filename, value)
                if isinstance(key, str) and decoded is not None:
                    rows[key] = decoded
                last = rowid
        return SalvagedRows(self.session_id, self.directory, rows)

    def values(self, keys: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for i in range(0, len(keys), _BATCH):
            batch = keys[i : i + _BATCH]
            marks = ",".join("?" * len(batch))
            query = f"SELECT key, mode, filename, value FROM Cache WHERE raw = 1 AND key IN ({marks})"  # noqa: S608
            for key, mode, filename, value in self._query(query, batch):
                decoded = self._decode(mode, filename, value)
                if decoded is not None:
                    found[key] = decoded
        return found

    def _query(self, sql: str, params) -> list:
        try:
            return self._con.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            if self._without_working_files(exc):
                return self._query(sql, params)
            raise store_error(exc, self.session_id, self.directory, "read") from exc

    def _decode(self, mode: int, filename: str | None, value: Any) -> Any:
        if mode == _RAW:
            return value
        if filename is not None:  # a format-1 value kept in a file beside the database
            value = self._file(filename)
            if value is None:
                return None
        if mode == _BINARY:
            return value
        if mode == _PICKLE and isinstance(value, bytes):
            try:
                return _NoObjects(io.BytesIO(value)).load()
            except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError):
                return None
        return None  # text values, or anything this store never writes

    def _file(self, filename: str) -> bytes | None:
        relative = PurePosixPath(filename)
        if relative.is_absolute() or ".." in relative.parts:
            return None
        try:
            return (self.directory / relative).read_bytes()
        except OSError:
            return None  # a lost value file: the version that needs it is reported corrupt


class SalvagedRows:
    """What `StoreReader.salvage` found, read like a store (`value`, `values`, `record`)."""

    def __init__(self, session_id: str, directory: Path, rows: dict[str, Any]):
        self.session_id, self.directory, self.rows = session_id, directory, rows

    def value(self, key: str) -> Any:
        return self.rows.get(key)

    def values(self, keys: list[str]) -> dict[str, Any]:
        return {k: self.rows[k] for k in keys if k in self.rows}

    def record(self) -> SessionRecord | None:
        return decode_record(self.rows.get("session"), self.session_id, self.directory)


def open_for_write(session_id: str, directory: Path) -> diskcache.Cache:
    try:
        if not (directory / "cache.db").exists() and _place_empty_store(directory):
            placed = _PlacedStore(str(directory), timeout=60)
            if placed.holds_write_settings():
                return placed
            placed.close()
        return diskcache.Cache(str(directory), timeout=60, **_WRITE_SETTINGS)
    except (OSError, sqlite3.Error) as exc:
        raise store_error(exc, session_id, directory, "write") from exc


class _PlacedStore(diskcache.Cache):
    """diskcache's Cache over a store file `_place_empty_store` just put in place.

    diskcache's own constructor writes every setting, table, index and trigger again on
    each open — some eighty statements, thirty of them commits of their own, most of a
    new session's first save. The placed file already holds exactly what they would
    write (it is `_empty_store_bytes`, made by that constructor with `_WRITE_SETTINGS`
    in this process), so this one only reads the settings back into the attributes
    the constructor would have set; the connection's pragmas are set by diskcache
    itself when it connects (`Cache._con` reads them from the file). Should the file
    not hold our settings after all, `open_for_write` uses diskcache's constructor."""

    def __init__(self, directory: str, timeout: float):  # diskcache's __init__ is what this skips
        self._directory = directory
        self._timeout = timeout
        self._local = threading.local()
        self._txn_id = None
        self._disk = diskcache.Disk(directory)
        self._placed_settings = dict(self._sql("SELECT key, value FROM Settings").fetchall())
        for key, value in self._placed_settings.items():
            if key.startswith("disk_"):
                setattr(self._disk, key[5:], value)
            setattr(self, key, value)
        ((self._page_size,),) = self._sql("PRAGMA page_size").fetchall()

    def holds_write_settings(self) -> bool:
        expected = {**diskcache.DEFAULT_SETTINGS, **_WRITE_SETTINGS}
        return all(self._placed_settings.get(k) == v for k, v in expected.items()) and all(
            k in self._placed_settings for k in diskcache.core.METADATA
        )


_empty_store: bytes | None = None
_empty_store_lock = threading.Lock()


def _empty_store_bytes() -> bytes:
    """A new store file with no entries, made by diskcache once per process: having
    SQLite create every table, index and trigger again costs about half of a new
    session's first save. Made here, never read from disk someone else can write."""
    global _empty_store
    with _empty_store_lock:
        if _empty_store is None:
            with tempfile.TemporaryDirectory(prefix="workingset-store-") as made:
                diskcache.Cache(made, **_WRITE_SETTINGS).close()  # closing folds its log into the file
                _empty_store = (Path(made) / "cache.db").read_bytes()
        return _empty_store


def _place_empty_store(directory: Path) -> bool:
    """Put an empty store file at `directory/cache.db` unless one is there; True when
    this call placed it. Linked into place, which never replaces a file: another process
    that created the session's store first keeps it, with whatever it has saved. On a
    filesystem without hard links nothing is placed, and diskcache creates the file as
    it always could."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, staged = tempfile.mkstemp(prefix=".cache.db-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(_empty_store_bytes())
        os.link(staged, directory / "cache.db")
        return True
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        return False
    finally:
        os.unlink(staged)


def _out_of_space(exc: BaseException, directory: Path) -> bool:
    name = getattr(exc, "sqlite_errorname", "")
    if name == "SQLITE_FULL" or (isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)):
        return True
    # SQLite reports a working file it could not grow as an I/O error: look at the disk.
    if name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN")) or isinstance(exc, OSError):
        try:
            return shutil.disk_usage(_existing(directory)).free < _NEARLY_FULL
        except OSError:
            return False
    return False


def store_error(exc: BaseException, session_id: str, directory: Path, doing: str) -> SnapshotError:
    """The one SnapshotError a foreign failure under `directory` becomes."""
    name = getattr(exc, "sqlite_errorname", "")
    if _out_of_space(exc, directory):
        return StoreDiskFull(f"could not {doing} snapshot of session {session_id}: {disk_full_message(directory)}")
    if name in ("SQLITE_CORRUPT", "SQLITE_NOTADB"):
        return damaged(session_id, directory, _first_line(exc))
    if isinstance(exc, diskcache.Timeout) or name == "SQLITE_BUSY":
        return SnapshotError(
            f"could not {doing} snapshot of session {session_id} in {directory}: "
            "another process held the store for 60 s; try again when it has finished"
        )
    return SnapshotError(f"could not {doing} snapshot of session {session_id} in {directory}: {_first_line(exc)}")


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _mount_point(path: Path) -> Path:
    path = _existing(path).resolve()
    device = path.stat().st_dev
    while path != path.parent and path.parent.stat().st_dev == device:
        path = path.parent
    return path


def _filesystem(mount: Path) -> str:
    """E.g. "ext4 /dev/sda1" or "tmpfs", from the last mount at `mount`."""
    found = "filesystem"
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        fields = line.split()
        if len(fields) >= 3 and fields[1] == str(mount):
            source, kind = fields[0], fields[2]
            found = kind if source == kind else f"{kind} {source}"
    return found


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def disk_full_message(directory: Path) -> str:
    """Names the disk: its mount point, filesystem and free space."""
    try:
        mount = _mount_point(directory)
        usage = shutil.disk_usage(mount)
        where = f"{_filesystem(mount)} mounted at {mount}, {_size(usage.free)} free of {_size(usage.total)}"
    except OSError:
        where = "its filesystem could not be inspected"
    return (
        f"no space left on the disk holding {directory} ({where}); the previous snapshot is intact; "
        "free space there, or set `home` (WORKINGSET_HOME) to a directory on another disk"
    )


def quarantine(root: Path, session_id: str, why: str) -> Path:
    """Move a session's store aside, whole, to `<root>/.quarantine/<id>-<time>/`."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    target = root / QUARANTINE / f"{session_id}-{stamp}"
    n = 1
    while target.exists():
        n += 1
        target = root / QUARANTINE / f"{session_id}-{stamp}-{n}"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(root / session_id, target)
    except OSError as exc:
        raise SnapshotError(
            f"could not move the damaged store of session {session_id} aside to {target}: {exc}"
        ) from exc
    with contextlib.suppress(OSError):  # the move is what matters; the note is a courtesy
        (target / "WHY.txt").write_text(why + "\n")
    return target
