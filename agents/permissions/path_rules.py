"""What the pattern of a file tool's rule names, in Claude Code's path forms.

    Edit(src/**)            relative to the workspace; as in gitignore, a `/` inside
    Read(*.env)             anchors it, none matches the name at any depth
    Read(./.env)            `./`: the workspace itself (`.env` at its top only)
    Read(/.env)             `/`: the project root, which for Workingset is the workspace
    Read(//srv/w/.env)      `//`: an absolute path on the host
    Read(~/w/.env)          `~/`: a path in the user's home directory

Each rule's pattern becomes workspace-relative patterns when the rules load (matched by
tools.files._path_glob, which Read, Grep and Glob's deny list uses too). Workingset's file tools
reach only the workspace, so an absolute or home pattern keeps only what it says about
the inside of the workspace (`//srv/**/.env` in the workspace /srv/w is `/**/.env`); a
pattern that names nothing inside it names nothing at all here, and the session says so
(`assembly`).

Forms whose meaning would differ from Claude Code's, or that could never match, are
refused with what to write instead: a `..` segment, character classes and escapes
(`[`, `]`, `\\`), braces, a leading `!`, `**` inside a path segment, `~user`.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import NoReturn

from agents.errors import ConfigError
from tools.files import segment_match

__all__ = ["rule_paths"]

_State = tuple[str, ...]


def rule_paths(text: str, pattern: str, workspace: Path | None, home: Path | None = None) -> tuple[str, ...]:
    """The workspace-relative patterns rule `text` (a file tool's, with `pattern`) names;
    () when it names nothing inside the workspace. ConfigError for a refused form."""
    _check_form(text, pattern)
    if pattern.startswith("//") or pattern == "~" or pattern.startswith("~/"):
        if workspace is None:
            raise ConfigError(
                f"permission rule {text!r} names an absolute path, which is read against the "
                "workspace; load the rules with it"
            )
        absolute = pattern[1:] if pattern.startswith("//") else str((home or Path.home()) / pattern[2:])
        return _inside(_parts(absolute), workspace)
    if pattern.startswith("~"):
        _refuse(
            text,
            f"names another user's home ({pattern.split('/')[0]}); write an absolute path, e.g. "
            f"//home/{pattern[1:].split('/')[0]}/...",
        )
    if pattern in (".", "./"):
        return ("/**",)
    if pattern.startswith("./"):
        return ("/" + "/".join(_parts(pattern[2:])),)
    tidy = "/".join(_parts(pattern))
    return (("/" if pattern.startswith("/") else "") + tidy + ("/" if pattern.endswith("/") else ""),)


def _parts(pattern: str) -> list[str]:
    return [p for p in pattern.split("/") if p not in ("", ".")]


def _inside(parts: list[str], workspace: Path) -> tuple[str, ...]:
    """The patterns, relative to the workspace, that the absolute pattern `parts` makes of
    what lies inside it (the workspace's path as given and resolved: both lead there)."""
    found: dict[str, None] = {}
    for root in dict.fromkeys([workspace.absolute(), workspace.resolve()]):
        states: set[_State] = {tuple(parts)}
        for name in PurePosixPath(root).parts[1:]:
            states = {after for state in states for after in _after(state, name)}
        for state in sorted(states):
            found["/" + ("/".join(state) if state else "**")] = None
    return tuple(found)


def _after(state: _State, name: str) -> set[_State]:
    """What is left of a pattern (as segments) once one directory name is matched."""
    if not state:  # it named a directory above: everything below it, the workspace too
        return {()}
    head, rest = state[0], state[1:]
    if head == "**":
        return {state} | (_after(rest, name) if rest else set())
    return {rest} if segment_match(name, head) else set()


def _check_form(text: str, pattern: str) -> None:
    body = pattern.removeprefix("~/").lstrip("/")
    if body.startswith("!"):
        _refuse(
            text,
            "starts with `!`: a permission rule cannot re-include paths; narrow the rule, or add a "
            "deny rule for what to keep out",
        )
    for chars, why in (
        ("[]", "has a character class (`[...]`), which Workingset does not read; write one rule per name"),
        ("{}", "has braces, which are not expanded; write one rule per alternative, e.g. Read(*.pem) and Read(*.key)"),
        ("\\", "has a backslash escape, which Workingset does not read; name the path plainly"),
    ):
        if any(c in body for c in chars):
            _refuse(text, why)
    segments = body.split("/")
    if ".." in segments:
        _refuse(
            text,
            "has a `..` segment, which names no path inside the workspace; write the path from the "
            "workspace root, e.g. Edit(/lib/**)",
        )
    for segment in segments:
        if "**" in segment and segment != "**":
            star = segment.replace("**", "*")
            _refuse(
                text,
                f"has `**` inside the segment {segment!r}, where it means `*`; write **/{star} to match "
                f"at any depth, or {star} for one directory",
            )


def _refuse(text: str, why: str) -> NoReturn:
    raise ConfigError(f"permission rule {text!r} {why}")
