"""`workingset sessions doctor`: check every session's store, and repair what can be repaired.

Each session's store file gets its header checked and SQLite's full check
(`integrity_check`: every page, and every index against its table), its record is
decoded and every kept version is read and verified. A file that is damaged (not SQLite, truncated, another
program's database, pages that fail the check) is moved aside whole (its versions read
from a copy with SQLite's magic string put back when only that was overwritten) to
`<root>/.quarantine/<id>-<time>/`, and the versions that still read intact are written
into a fresh store for the session, oldest first, under their own ids — nothing is
deleted. So is a sound file in which no version reads any more (a value's bytes flipped
in a message every version holds). Corrupt versions in a sound file that still has an
intact one are reported (loading already falls back past them); a store written by a
newer Workingset is reported and left alone.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from agents.messages import Message
from agents.session import SessionState
from agents.snapshots._errors import (
    SnapshotCorrupt,
    SnapshotError,
    SnapshotNotFound,
    SnapshotTooNew,
    StoreDamaged,
)
from agents.snapshots._file import QUARANTINE, SalvagedRows, SessionRecord, StoreReader, quarantine
from agents.snapshots._header import WRONG_MAGIC, header_damage, restore_magic
from agents.snapshots._store import DiskSnapshotStore
from agents.snapshots._version import read_version

__all__ = ["SessionCheck", "StoreCheck", "check_store"]

Status = Literal["ok", "empty", "corrupt versions", "newer", "damaged", "repaired"]


class SessionCheck(BaseModel):
    session_id: str
    status: Status
    detail: str = ""

    @property
    def needs_attention(self) -> bool:
        return self.status in ("corrupt versions", "newer", "damaged")


class StoreCheck(BaseModel):
    root: str
    sessions: list[SessionCheck]
    quarantined: int  # stores kept under <root>/.quarantine/

    @property
    def healthy(self) -> bool:
        return not any(s.needs_attention for s in self.sessions)


@dataclass
class _Reading:
    """What could be read of one store file."""

    damage: str = ""
    newer: str = ""
    versions: list[str] = field(default_factory=list)
    intact: list[tuple[str, SessionState]] = field(default_factory=list)  # oldest first
    corrupt: list[str] = field(default_factory=list)
    first_problem: str = ""
    current: str | None = None


def _read_versions(source: StoreReader | SalvagedRows, reading: _Reading) -> None:
    try:
        record = source.record()
    except StoreDamaged:
        if not isinstance(source, SalvagedRows):
            raise
        record = None
    if (record is None or not record.current) and isinstance(source, SalvagedRows):
        # The record itself was lost: the versions that survived still name themselves.
        found = sorted(key[2:] for key in source.rows if key.startswith("v:"))
        record = SessionRecord(current=found[-1], history=found[:-1]) if found else None
    if record is None or not record.current:
        return
    reading.current = record.current
    reading.versions = [*record.history, record.current]
    memo: dict[str, Message] = {}
    for version in reading.versions:
        try:
            state, _ = read_version(source, version, memo)
            reading.intact.append((version, state))
        except (SnapshotCorrupt, StoreDamaged) as exc:
            reading.corrupt.append(version)
            reading.first_problem = reading.first_problem or str(exc)
            if isinstance(exc, StoreDamaged):
                reading.damage = reading.damage or exc.why


def _read(session_id: str, directory: Path) -> _Reading:
    damage = header_damage(directory / "cache.db") or ""
    if damage.startswith(WRONG_MAGIC):
        # Only SQLite's 16-byte magic string is wrong: read a copy with it put back.
        with tempfile.TemporaryDirectory(prefix=f".header-{session_id}-", dir=directory.parent) as copy:
            restore_magic(directory / "cache.db", Path(copy) / "cache.db")
            reading = _read_file(session_id, Path(copy), damage)
        reading.damage = damage
        return reading
    return _read_file(session_id, directory, damage)


def _read_file(session_id: str, directory: Path, damage: str) -> _Reading:
    with StoreReader(session_id, directory, check_header=False) as reader:
        if not damage:
            try:
                verdict = reader.check(full=True)
                damage = "" if verdict == "ok" else f"SQLite's check of the file reports: {verdict}"
            except StoreDamaged as exc:
                damage = exc.why
        if not damage:
            reading = _Reading()
            try:
                _read_versions(reader, reading)
                if reading.current is not None and not reading.intact:
                    # A sound file in which no version reads is as stuck as a damaged one.
                    reading.damage = f"no version of the session can be read ({reading.first_problem})"
                return reading
            except SnapshotTooNew as exc:
                return _Reading(newer=str(exc))
            except StoreDamaged as exc:
                damage = exc.why
        # Damaged: read what can still be read, row by row.
        reading = _Reading(damage=damage)
        try:
            _read_versions(reader.salvage(), reading)
        except SnapshotTooNew as exc:
            reading.newer = str(exc)
        return reading


def _repair(store: DiskSnapshotStore, session_id: str, reading: _Reading) -> str:
    """Write what was read into a fresh store beside the root, then swap the two: a repair
    that fails part way leaves the damaged store where it was."""
    rebuild = store.root / f".rebuild-{session_id}"
    shutil.rmtree(rebuild, ignore_errors=True)
    fresh = DiskSnapshotStore(rebuild, max_history=store.max_history, max_age_days=store.max_age_s / 86_400)
    try:
        for version, state in sorted(reading.intact, key=lambda pair: pair[0]):
            fresh.save(state, version=version)
    finally:
        fresh.close()
    target = quarantine(store.root, session_id, reading.damage)
    if reading.intact:
        os.rename(rebuild / session_id, store.root / session_id)
    shutil.rmtree(rebuild, ignore_errors=True)
    kept = (
        f"kept {len(reading.intact)} of {len(reading.versions)} versions in a fresh store"
        if reading.intact
        else "no version could be read from it"
    )
    return f"moved aside to {target}; {kept}"


def _verdict(session_id: str, reading: _Reading) -> SessionCheck:
    if reading.newer:
        return SessionCheck(session_id=session_id, status="newer", detail=f"{reading.newer}; left as it is")
    if reading.damage:
        return SessionCheck(session_id=session_id, status="damaged", detail=reading.damage)
    if reading.current is None:
        return SessionCheck(session_id=session_id, status="empty", detail="no version was ever saved")
    if not reading.corrupt:
        return SessionCheck(session_id=session_id, status="ok", detail=f"{len(reading.versions)} versions")
    names = ", ".join(reading.corrupt)
    detail = f"versions {names} fail their checks ({reading.first_problem})"
    if reading.current in reading.corrupt and reading.intact:
        newest = reading.intact[-1][0]
        detail += (
            f"; loading uses the newest intact version {newest}; "
            f"`workingset sessions restore {session_id} {newest}` makes it current"
        )
    elif reading.current in reading.corrupt:
        detail += "; no version of this session can be loaded"
    return SessionCheck(session_id=session_id, status="corrupt versions", detail=detail)


def check_store(store: DiskSnapshotStore, *, repair: bool = True) -> StoreCheck:
    checks = []
    for directory in store.session_dirs():
        sid = directory.name
        try:
            reading = _read(sid, directory)
        except SnapshotNotFound:
            continue  # a directory without a store file holds nothing to check
        except StoreDamaged as exc:  # the file would not even open
            reading = _Reading(damage=exc.why)
        except SnapshotError as exc:
            reading = _Reading(damage=str(exc))
        check = _verdict(sid, reading)
        if check.status == "damaged" and repair:
            check = SessionCheck(
                session_id=sid, status="repaired", detail=f"{reading.damage}; {_repair(store, sid, reading)}"
            )
        checks.append(check)
    aside = store.root / QUARANTINE
    quarantined = sum(1 for _ in aside.iterdir()) if aside.is_dir() else 0
    return StoreCheck(root=str(store.root), sessions=checks, quarantined=quarantined)
