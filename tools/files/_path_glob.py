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
The pattern is matched as one RE2 regex (`tools.files._glob_regex`): linear in the path, so a
rule like `*a*a*a*a*a*b` costs no more than `*.py`.
"""

from __future__ import annotations

import functools

from tools.files._glob_regex import matches, rule_regex

__all__ = ["path_glob_match", "segment_match"]


@functools.lru_cache(maxsize=512)
def _regex(pattern: str) -> str:
    body = pattern.rstrip("/") or pattern
    anchored = "/" in body
    parts = body.removeprefix("/").split("/")
    regex = "" if anchored else "(?:.*/)?"
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            regex += ".*" if last else "(?:.*/)?"
        else:
            regex += rule_regex(part.replace("**", "*")) + ("" if last else "/")
    return regex + "(?:/.*)?"  # whatever lies beneath a matching directory matches too


def path_glob_match(subject: str, pattern: str) -> bool:
    """True if `subject` (workspace-relative, `/`-separated) or a directory above it
    matches `pattern`."""
    if subject.startswith("/"):
        return False
    return matches(_regex(pattern), subject)


def segment_match(name: str, segment: str) -> bool:
    """True if one path component `name` matches one pattern segment (`*`, `?`, literal)."""
    return matches(rule_regex(segment.replace("**", "*")), name)
