"""Writes of the out directory that a kill -9 at any moment leaves whole.

append_line    one complete line, one write, flushed and fsynced: a reader sees the
               line whole or not at all (a crash inside the write can only tear the
               last line, which `repair_jsonl` takes out on the next start)
write_atomic   a temporary file beside the target, fsynced, then renamed over it:
               the old content or the new one, never half of either
repair_jsonl   the lines that are not whole records moved to `<name>.torn-<time>`
               and cut from the file, so the file is valid JSON Lines again
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["append_line", "repair_jsonl", "write_atomic"]


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def append_line(path: Path, line: str) -> None:
    """`line` (no newline) appended as one complete line (after a newline of its own
    when the file ends in a torn line, so the torn line never swallows this one)."""
    data = (line + "\n").encode()
    new = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        written = os.write(fd, data)
        while written < len(data):  # a short write (a full disk): the rest, or an OSError
            written += os.write(fd, data[written:])
        os.fsync(fd)
    finally:
        os.close(fd)
    if new:
        _fsync_dir(path.parent)


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text`, whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(path.parent)


def repair_jsonl(path: Path, is_record: Callable[[bytes], bool]) -> tuple[int, Path | None]:
    """Take out every line that `is_record` refuses (in practice: the torn last line of
    a write a crash cut short). Returns (lines moved, where they went)."""
    if not path.is_file():
        return 0, None
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline, else the torn last line
    good = [line for line in lines if line.strip() and is_record(line)]
    bad = [line for line in lines if line.strip() and not is_record(line)]
    if tail.strip():
        bad.append(tail)
    if not bad and not tail:
        return 0, None
    aside = None
    if bad:
        aside = path.with_name(f"{path.name}.torn-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
        write_atomic(aside, "".join(b.decode("utf-8", "replace") + "\n" for b in bad))
    write_atomic(path, "".join(g.decode("utf-8") + "\n" for g in good))
    return len(bad), aside
