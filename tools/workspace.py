"""What a file tool's path names, where it really leads, and what may be done there.

A model's path is read lexically first (relative, or absolute inside the workspace).
The workspace is then opened as a directory handle (`Beneath`) and the path resolved
through it: symlinks that stay inside are followed, anything that leaves is refused, and
the result (`Target.real`) holds no symlink. Permission rules match that real path
(`path_subject`), the check pins the call to it (`PathInput`), and the tool opens exactly
it with symlinks forbidden: a link swapped in or re-pointed after the decision makes the
open fail, or leaves it on the file the rules saw, never somewhere else.

A write through an in-workspace symlink changes the link's target, as editors do (the
link stays a link); the target is found by the same race-free resolution and is what
the permission rules saw. What such a write may not reach is a protected directory
(`.git`, `.workingset`) that the call did not name itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, PrivateAttr

from tools.base import ToolContext, ToolError
from tools.files import Beneath, BeneathError, path_glob_match, relative_path
from tools.protected import protected_part

__all__ = [
    "BINARY_SNIFF_BYTES",
    "SKIP_DIRS",
    "PathInput",
    "Target",
    "Unresolved",
    "call_target",
    "decision_target",
    "is_hidden",
    "named_path",
    "open_workspace",
    "path_permission_subject",
    "path_subject",
    "refuse_protected_write",
    "relative_display",
    "resolve_target",
]

# Same heuristic as git and grep: a NUL byte early in the file means "not text".
BINARY_SNIFF_BYTES = 8192

# Git internals are never what the model is looking for, and can be huge.
SKIP_DIRS = frozenset({".git"})


@dataclass(frozen=True)
class Target:
    """One path of a tool call, both ways round (workspace-relative, "." for the root)."""

    named: str  # as the call named it, lexically tidied: what messages show
    real: str  # where it leads, symlinks resolved: what is opened and what rules match


def open_workspace(workspace: Path) -> Beneath:
    """A handle on the workspace directory; use it as a context manager."""
    return Beneath(workspace)


def _tidy(rel: str) -> str:
    return "/".join(p for p in rel.split("/") if p not in ("", ".")) or "."


def named_path(workspace: Path, path: str) -> str:
    """`path` relative to the workspace, without looking at the disk. Raises ToolError
    for a NUL byte, an over-long path or an absolute path outside the workspace."""
    root = workspace
    # Output may show the workspace resolved (/tmp -> /private/tmp); accept paths copied from it.
    if path.startswith("/") and not PurePosixPath(path).is_relative_to(workspace):
        root = workspace.resolve()
    return _tidy(relative_path(root, path))


def resolve_target(root: Beneath, workspace: Path, path: str, *, missing_ok: bool = False) -> Target:
    """Where `path` leads inside the workspace. With `missing_ok`, a path that does not
    exist yet (a file Write will create) leads to its deepest existing directory's real
    path plus the missing names."""
    named = named_path(workspace, path)
    try:
        return Target(named, root.real_path(named, missing_ok=missing_ok))
    except OSError as exc:
        raise root.error(named, exc) from exc


class PathInput(BaseModel):
    """Base of the inputs whose `path` permission rules match. The permission check pins
    the call to the Target it matched, and the tool then opens exactly that real path
    (with symlinks forbidden), so a link re-pointed after the decision cannot redirect
    the call to a file the rules never saw; a path that could not be resolved then is
    pinned as refused. Private: not in the schema, nor in dumps; it survives pickling."""

    _pinned: Target | str | None = PrivateAttr(default=None)  # str: why the call is refused

    def pinned_target(self) -> Target | str | None:
        return self._pinned

    def pin_target(self, target: Target | str) -> None:
        if self._pinned is None:  # the first decision is the one the call runs under
            self._pinned = target


def call_target(root: Beneath, ctx: ToolContext, args: PathInput) -> Target:
    """The Target a call acts on: the one its permission check pinned, else resolved now."""
    pinned = args.pinned_target()
    if isinstance(pinned, str):
        raise ToolError(pinned)
    if pinned is not None:
        return pinned
    return resolve_target(root, ctx.workspace, getattr(args, "path", None) or ".", missing_ok=True)


@dataclass(frozen=True)
class Unresolved:
    """A path no Target was found for when a permission decision was made."""

    subject: str  # what rules match instead
    error: str | None  # why it leads nowhere inside; None: the workspace is not on this node


def _lexical_subject(workspace: Path, path: str, *, inside_ok: bool) -> str:
    full = os.path.normpath(os.path.join(workspace, path))
    rel = os.path.relpath(full, workspace)
    return rel if inside_ok and rel != ".." and not rel.startswith("../") else full


def decision_target(workspace: Path, path: str | None) -> Target | Unresolved:
    """For a permission decision: the Target of `path`, or what to match where there is
    none. A path that cannot lead inside (an escape, a NUL byte) is matched absolute, so
    no relative pattern matches it, and the call is refused when it runs."""
    path = path or "."
    try:
        named = named_path(workspace, path)
    except ToolError as exc:
        return Unresolved(_lexical_subject(workspace, path, inside_ok=False), str(exc))
    try:
        root = open_workspace(workspace)
    except ToolError:
        # No workspace on this node (a subagent placed elsewhere): match the path as named;
        # the tool resolves it where it runs, and re-checks deny rules and protected dirs.
        return Unresolved(_lexical_subject(workspace, named, inside_ok=True), None)
    with root:
        try:
            return Target(named, root.real_path(named, missing_ok=True))
        except OSError as exc:
            return Unresolved(_lexical_subject(workspace, named, inside_ok=False), str(root.error(named, exc)))


def path_subject(workspace: Path, path: str | None) -> str:
    """What permission rules match a path against: the workspace-relative path the call
    will open, through in-workspace symlinks (see `decision_target`)."""
    found = decision_target(workspace, path)
    return found.real if isinstance(found, Target) else found.subject


def path_permission_subject(tool: object, args: BaseModel, workspace: Path) -> str:
    """A tool's permission_subject when rules match its `path` argument, e.g.
    Edit(src/**); it pins the call to that path (see PathInput). Assign it in the class
    body: `permission_subject = path_permission_subject`."""
    pinned = args.pinned_target() if isinstance(args, PathInput) else None
    if isinstance(pinned, Target):
        return pinned.real
    found = decision_target(workspace, getattr(args, "path", None))
    if isinstance(args, PathInput):
        if isinstance(found, Target):
            args.pin_target(found)
        elif found.error is not None:
            args.pin_target(found.error)
    return found.real if isinstance(found, Target) else found.subject


def relative_display(workspace: Path, path: Path | str) -> str:
    """Show `path` relative to the workspace (what the model should type back); lexical."""
    try:
        return named_path(workspace, str(path))
    except BeneathError:
        return str(path)


def is_hidden(ctx: ToolContext, *paths: str) -> bool:
    """True if a per-file deny rule covers any of `paths` (a file's named and real path):
    Read, Grep and Glob then treat the file as not there."""
    return any(path_glob_match(p, glob) for glob in ctx.denied_path_globs for p in paths)


def refuse_protected_write(ctx: ToolContext, target: Target) -> None:
    """A write may land in a protected directory (`.git/`, `.workingset/`, at any depth)
    only when the call names one plainly (no `..`), where the permission layer asks for
    it by name; one that reaches it through a symlink is refused."""
    part = protected_part(target.real, ctx.protected_dirs)
    if part is None:
        return
    if ".." in target.named.split("/") or protected_part(target.named, ctx.protected_dirs) is None:
        directory = "/".join(target.real.split("/")[: part + 1])
        raise ToolError(
            f"{target.named} leads into the protected directory {directory}/ (to {target.real}); "
            f"a write there must name the path inside {directory}/ directly"
        )
