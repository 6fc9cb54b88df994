"""Workspace entries whose contents the host acts on: git's, Workingset's and Claude Code's.

`.git/` holds config, hooks and filters that host-side git runs; `.workingset/` holds
settings, skills and plugins the harness loads; `.claude/` (settings.json, its
permission rules) and `.mcp.json` (MCP servers, commands the host starts) are read as
the settings of a trusted workspace (agents.settings._claude). A file tool may read them
like any file, but changing them needs its own explicit permission (agents.permissions),
and the Bash sandbox mounts them read-only. This is the one list both use.
"""

from __future__ import annotations

from pathlib import PurePosixPath

__all__ = ["PROTECTED_DIRS", "protected_part"]

PROTECTED_DIRS: frozenset[str] = frozenset({".git", ".workingset", ".claude", ".mcp.json"})


def protected_part(relative: str, names: frozenset[str] = PROTECTED_DIRS) -> int | None:
    """The index of the first path component of `relative` (workspace-relative, as
    permission subjects are) that is a protected directory, or None if there is none.
    Any depth counts: `sub/.git/config` is a nested repository's config."""
    for i, part in enumerate(PurePosixPath(relative).parts):
        if part in names:
            return i
    return None
