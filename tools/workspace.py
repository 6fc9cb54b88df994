"""Keeping file tools inside the workspace, and small helpers they share.

Every path a model hands us goes through `resolve_in_workspace`. Resolving
symlinks *before* the containment check is the point: a link inside the
workspace that points at /etc must be refused just like "../../etc".
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

from tools.base import ToolError

__all__ = [
    "BINARY_SNIFF_BYTES",
    "SKIP_DIRS",
    "looks_binary",
    "relative_display",
    "resolve_in_workspace",
    "walk_files",
]

# Same heuristic as git and grep: a NUL byte early in the file means "not text".
BINARY_SNIFF_BYTES = 8192

# Git internals are never what the model is looking for, and can be huge.
SKIP_DIRS = frozenset({".git"})


def resolve_in_workspace(workspace: Path, path: str) -> Path:
    """Resolve `path` (relative to `workspace`, or absolute) and refuse escapes.

    The returned path is fully resolved (symlinks followed) and need not exist,
    so Write can use it for files it is about to create.
    """
    # Resolve the root too: a workspace reached through a symlink (e.g. /tmp on
    # macOS) must still contain absolute paths the model copies from output.
    root = workspace.resolve()
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    resolved = candidate.resolve()
    if resolved != root and not resolved.is_relative_to(root):
        raise ToolError(
            f"Path {path!r} resolves to {resolved}, which is outside the workspace; "
            f"paths must stay inside the workspace {root}"
        )
    return resolved


def relative_display(workspace: Path, path: Path) -> str:
    """Show `path` relative to the workspace (what the model should type back)."""
    root = workspace.resolve()
    # Try the path as given first so a symlink shows under its own name, not its target's.
    for candidate in (path, path.resolve()):
        if candidate.is_relative_to(root):
            rel = candidate.relative_to(root)
            return "." if rel == Path(".") else rel.as_posix()
    return str(path)


def path_subject(workspace: Path, path: str | None) -> str:
    """What permission rules match a path against: workspace-relative, symlinks resolved.
    A path outside the workspace stays absolute, so no relative pattern can match it."""
    root = workspace.resolve()
    candidate = Path(path or ".")
    resolved = (candidate if candidate.is_absolute() else root / candidate).resolve()
    if resolved == root:
        return "."
    return resolved.relative_to(root).as_posix() if resolved.is_relative_to(root) else str(resolved)


def path_permission_subject(tool: object, args: BaseModel, workspace: Path) -> str:
    """A tool's permission_subject when rules match its `path` argument, e.g.
    Edit(src/**). Assign it in the class body: `permission_subject = path_permission_subject`."""
    return path_subject(workspace, getattr(args, "path", None))


def looks_binary(path: Path) -> bool:
    """True if the file's first bytes contain a NUL byte."""
    with path.open("rb") as f:
        return b"\0" in f.read(BINARY_SNIFF_BYTES)


def walk_files(root: Path, top: Path, max_depth: int | None = None) -> Iterator[Path]:
    """Yield regular files under `top` in sorted order, skipping .git and escapes.

    `root` must be resolved. Directory symlinks are not followed (os.walk's
    default); file symlinks resolving outside `root` are skipped, so a search
    cannot read past the workspace. `max_depth` counts directories below `top`
    (0 = only files directly in `top`) and prunes the walk.
    """
    for dirpath, dirnames, filenames in os.walk(top):
        depth = len(Path(dirpath).relative_to(top).parts)
        if max_depth is not None and depth >= max_depth:
            dirnames[:] = []
        else:
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            path = Path(dirpath, name)
            resolved = path.resolve()
            if resolved.is_relative_to(root) and resolved.is_file():
                yield path
