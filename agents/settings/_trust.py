"""The user's list of trusted workspaces: `~/.workingset/trusted.toml`.

A workspace is untrusted unless its resolved path is in this list (or `--trust-workspace`
trusts it for one run): its own `.workingset/` can then set only inert settings (see
agents.settings._workspace). The file is written by the host alone, atomically (a temporary
file renamed over it) under a lock, so concurrent `workingset trust` calls lose nothing:

    # Workspaces whose own .workingset/ settings, plugins, hooks and MCP servers apply.
    version = 1

    [[workspace]]
    path = "/home/me/src/project"
    trusted_at = "2025-06-01T12:00:00+00:00"

Entries match the resolved path exactly: trusting a directory does not trust the
directories below it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from agents.errors import ConfigError
from tools.files import Beneath, BeneathError

__all__ = ["TRUST_FILE", "TrustList", "TrustedWorkspace"]

TRUST_FILE = "trusted.toml"
_HEADER = (
    "# Workspaces whose own .workingset/ settings, plugins, hooks and MCP servers apply.\n"
    "# Managed by `workingset trust PATH` / `workingset untrust PATH`.\nversion = 1\n"
)


@dataclass(frozen=True)
class TrustedWorkspace:
    path: Path
    trusted_at: str


def _toml_string(text: str) -> str:
    # JSON string escapes are TOML basic-string escapes; TOML also wants DEL escaped.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


class TrustList:
    """The trust list in `<home>/.workingset/trusted.toml` (home: the user's home directory)."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def for_user(cls, home: Path | None = None) -> TrustList:
        return cls((home if home is not None else Path.home()) / ".workingset" / TRUST_FILE)

    def entries(self) -> list[TrustedWorkspace]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as exc:
            raise self._broken(exc) from exc
        try:
            rows = tomllib.loads(text).get("workspace", [])
            return [TrustedWorkspace(Path(r["path"]), str(r.get("trusted_at", ""))) for r in rows]
        except (tomllib.TOMLDecodeError, TypeError, KeyError, AttributeError) as exc:
            raise self._broken(exc) from exc

    def is_trusted(self, workspace: Path) -> bool:
        resolved = workspace.resolve()
        return any(e.path == resolved for e in self.entries())

    def trust(self, workspace: Path) -> bool:
        """Add the workspace; False if it was already trusted."""
        resolved = workspace.resolve()
        with self._locked():
            entries = self.entries()
            if any(e.path == resolved for e in entries):
                return False
            self._write([*entries, TrustedWorkspace(resolved, datetime.now(UTC).isoformat(timespec="seconds"))])
        return True

    def untrust(self, workspace: Path) -> bool:
        """Remove the workspace; False if it was not trusted."""
        resolved = workspace.resolve()
        with self._locked():
            entries = self.entries()
            kept = [e for e in entries if e.path != resolved]
            if len(kept) == len(entries):
                return False
            self._write(kept)
        return True

    def _write(self, entries: list[TrustedWorkspace]) -> None:
        rows = "".join(
            f"\n[[workspace]]\npath = {_toml_string(str(e.path))}\ntrusted_at = {_toml_string(e.trusted_at)}\n"
            for e in entries
        )
        try:
            with Beneath(self.path.parent) as directory:
                directory.write_atomic(self.path.name, (_HEADER + rows).encode("utf-8"))
        except BeneathError as exc:
            raise ConfigError(f"cannot write the trust list {self.path}: {exc}") from exc

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive lock on the list's directory, held across read-modify-write."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise ConfigError(f"cannot write the trust list {self.path}: {exc.strerror or exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _broken(self, exc: Exception) -> ConfigError:
        return ConfigError(
            f"the trust list {self.path} cannot be read ({exc}); fix it, or delete it and trust "
            "your workspaces again with `workingset trust PATH`"
        )
