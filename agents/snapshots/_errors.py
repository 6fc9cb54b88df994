"""What the snapshot store raises, one tree under WorkingsetError.

    SnapshotError           a snapshot could not be written or read (the message says why)
    ├── SnapshotNotFound    no such session, or no such version of it
    ├── SnapshotCorrupt     one version fails its checks; loading falls back past it
    ├── SnapshotTooNew      written by a newer Workingset (schema or store format); refused
    ├── StoreDamaged        a session's store file is not a readable store (truncated,
    │                       garbage, another program's database); other sessions are unaffected
    └── StoreDiskFull       the disk holding the store has no room; the previous state is intact

sqlite3 and OS errors are converted where they enter (`agents.snapshots._file`).
"""

from __future__ import annotations

from agents.errors import WorkingsetError

__all__ = [
    "SnapshotCorrupt",
    "SnapshotError",
    "SnapshotNotFound",
    "SnapshotTooNew",
    "StoreDamaged",
    "StoreDiskFull",
]


class SnapshotError(WorkingsetError):
    """A snapshot could not be written or read."""

    def __reduce__(self):
        # Keep the fields when crossing a process boundary (Ray): by default an exception
        # pickles as cls(*args), which loses keyword-only fields, or fails for lack of them.
        return _rebuild, (type(self), self.args, dict(self.__dict__))


def _rebuild(cls: type[SnapshotError], args: tuple, fields: dict) -> SnapshotError:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(fields)
    return error


class SnapshotNotFound(SnapshotError):
    pass


class SnapshotCorrupt(SnapshotError):
    def __init__(self, message: str, *, version: str):
        super().__init__(message)
        self.version = version


class SnapshotTooNew(SnapshotError):
    def __init__(self, message: str, *, found: int):
        super().__init__(message)
        self.found = found


class StoreDamaged(SnapshotError):
    def __init__(self, message: str, *, session_id: str, why: str):
        super().__init__(message)
        self.session_id, self.why = session_id, why


class StoreDiskFull(SnapshotError):
    pass
