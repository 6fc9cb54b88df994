"""What a store file's first 100 bytes and its length say, checked before SQLite opens it.

SQLite reads a database's header and pages lazily: a file cut short, torn mid-page or
overwritten at its start is only found at whichever page a query reaches first, often as
"database disk image is malformed" long after the open. `header_damage` checks up front
what costs one 100-byte read and a stat (about 15 µs of CPU, `benchmarks.snapshot_bench`):
the 16-byte magic string, a possible page size, and — when no write-ahead log holds pages
newer than the file's — whole pages, as many as the header says there are. What it cannot
see (bytes flipped inside a page) is found by the reads that need those pages.

`restore_magic` gives `sessions doctor` a copy it can read when only the magic string was
overwritten: the rest of the header says where everything is.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["WRONG_MAGIC", "header_damage", "restore_magic"]

_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file
_HEADER = 100  # bytes of SQLite's database header
WRONG_MAGIC = "its first 16 bytes are not SQLite's header"


def restore_magic(damaged_file: Path, copy: Path) -> None:
    """Copy a store file whose first 16 bytes were overwritten, with SQLite's magic string
    put back (the rest of a header says which pages hold what; the magic says nothing)."""
    shutil.copyfile(damaged_file, copy)
    with copy.open("r+b") as file:
        file.write(_MAGIC)


def _has_log(path: Path) -> bool:
    """Whether a write-ahead log beside `path` may hold pages newer than the file's."""
    try:
        return os.stat(f"{path}-wal").st_size > 0
    except OSError:
        return False


def header_damage(path: Path) -> str | None:
    """What SQLite's header and the file's length say is wrong with the database file at
    `path`, in words; None when they agree (or the file cannot be read: SQLite says why)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        head = os.pread(fd, _HEADER, 0)
        size = os.fstat(fd).st_size
    except OSError:
        return None
    finally:
        os.close(fd)
    if size == 0:
        return None  # made, never written: an empty database, which holds no snapshot
    if head[:16] != _MAGIC:
        return f"{WRONG_MAGIC} ({head[:16]!r}): the file was overwritten or is not a database"
    if len(head) < _HEADER:
        return f"it is {size} bytes long, shorter than SQLite's {_HEADER}-byte header: it was cut short"
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65_536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        return f"its header gives an impossible page size ({page_size}): the header was overwritten"
    if _has_log(path):
        return None  # the log may hold pages the file does not yet: SQLite reconciles the two
    if size % page_size:
        return f"it ends {size % page_size} bytes into a page of {page_size} bytes: it was cut short or torn"
    pages = int.from_bytes(head[28:32], "big")
    if head[24:28] == head[92:96] and pages * page_size > size:  # the count is valid when these agree
        return f"it holds {size // page_size} pages where its header says {pages}: it was cut short"
    return None
