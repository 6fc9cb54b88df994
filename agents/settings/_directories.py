"""Directories a user names for output (`--out`, `--trace-dir`, `home`): made at once,
before any work, so a path that cannot be a directory — or, for the home, cannot be
written (a read-only mount) — is one clear line, not a traceback at the first write."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from agents.errors import ConfigError

__all__ = ["home_directory", "output_directory"]


def _made(path: Path) -> str | None:
    """Make `path` a directory (with its parents); why it cannot be, or None."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        return "is a file, not a directory"
    except OSError as exc:
        why = "a part of the path is a file" if exc.errno == errno.ENOTDIR else (exc.strerror or str(exc)).lower()
        return f"cannot be made a directory: {why}"
    return None


def output_directory(path: Path | str, what: str) -> Path:
    """`path` as an existing directory (made, with its parents, when missing); `what`
    names it in the error (a flag or a setting)."""
    path = Path(path)
    why = _made(path)
    if why is not None:
        raise ConfigError(f"{what} {path} {why}; name a directory (it is made when missing)")
    return path


def home_directory(path: Path) -> Path:
    """The Workingset home (snapshots, sessions' audit logs, artifacts) as a directory this
    process can write: made when missing, and tried with a file made and removed at once."""
    why = _made(path)
    if why is None:
        try:
            fd, probe = tempfile.mkstemp(prefix=".write-test-", dir=path)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            why = f"cannot be written: {(exc.strerror or str(exc)).lower()}"
    if why is not None:
        raise ConfigError(
            f"home (WORKINGSET_HOME) {path} {why}; set WORKINGSET_HOME (or `home` in config.toml) "
            "to a directory you can write"
        )
    return path
