"""Directories a user names for output (`--out`, `--trace-dir`): made at once, before any
work, so a path that cannot be a directory is one clear line, not a traceback later."""

from __future__ import annotations

import errno
from pathlib import Path

from agents.errors import ConfigError

__all__ = ["output_directory"]


def output_directory(path: Path | str, what: str) -> Path:
    """`path` as an existing directory (made, with its parents, when missing); `what`
    names it in the error (a flag or a setting)."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ConfigError(f"{what} {path} is a file, not a directory; name a directory (it is made when missing)") from None
    except OSError as exc:
        why = "a part of the path is a file" if exc.errno == errno.ENOTDIR else (exc.strerror or str(exc)).lower()
        raise ConfigError(f"{what} {path} cannot be made a directory: {why}") from None
    return path
