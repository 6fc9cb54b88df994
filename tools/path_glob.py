"""One glob language for workspace paths, shared by permission rules and the file tools.

Patterns read as gitignore(5) reads a line, relative to the workspace:

- a `/` at the start or in the middle anchors the pattern at the workspace root
  (`src/*.py`, `/.env`); a pattern with no `/` other than a trailing one matches a name
  at any depth (`.env`, `*.pem`, `build/`);
- `*` and `?` stay within one path segment; `**` as a whole segment crosses directories
  (`**/x` at any depth, `x/**` everything inside x, `a/**/b` any depth between); a `**`
  inside a segment is a `*`; everything else is literal;
- a pattern that matches a directory matches everything beneath it (`secrets` covers
  `secrets/key.pem`), as an ignored directory hides its files.

Permission rules (`Edit(src/**)`) and the file tools' per-file deny list match with this
same function, so a path a rule denies is exactly the path a tool hides. A subject that
is absolute lies outside the workspace (a path that escapes it) and matches no pattern.
"""

from __future__ import annotations

import functools
import re

__all__ = ["path_glob_match", "segment_match"]


def _segment(segment: str) -> str:
    out = []
    for ch in segment:
        out.append("[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch))
    return "".join(out)


@functools.lru_cache(maxsize=512)
def _compile(pattern: str) -> re.Pattern[str]:
    body = pattern.rstrip("/") or pattern
    anchored = "/" in body
    parts = body.removeprefix("/").split("/")
    regex = "" if anchored else "(?:.*/)?"
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            regex += ".*" if last else "(?:.*/)?"
        else:
            regex += _segment(part) + ("" if last else "/")
    # Whatever lies beneath a matching directory matches too. DOTALL: a file name may
    # hold a newline, and `**` must still cover it (`[^/]` does).
    return re.compile(regex + "(?:/.*)?", re.DOTALL)


def path_glob_match(subject: str, pattern: str) -> bool:
    """True if `subject` (workspace-relative, `/`-separated) or a directory above it
    matches `pattern`."""
    if subject.startswith("/"):
        return False
    return _compile(pattern).fullmatch(subject) is not None


@functools.lru_cache(maxsize=512)
def _segment_regex(segment: str) -> re.Pattern[str]:
    return re.compile(_segment(segment), re.DOTALL)


def segment_match(name: str, segment: str) -> bool:
    """True if one path component `name` matches one pattern segment (`*`, `?`, literal)."""
    return _segment_regex(segment).fullmatch(name) is not None
