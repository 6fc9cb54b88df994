"""One glob language for workspace paths, shared by permission rules and the file tools.

`**` crosses directories, `*` and `?` stay within one path segment, everything else is
literal. Permission rules (`Edit(src/**)`) and the file tools' per-file deny list match
with this same function, so a path a rule denies is exactly the path a tool hides.
"""

from __future__ import annotations

import functools
import re

__all__ = ["path_glob_match"]


@functools.lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    regex = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            regex += ".*"
            i += 2
        elif pattern[i] == "*":
            regex += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            regex += "[^/]"
            i += 1
        else:
            regex += re.escape(pattern[i])
            i += 1
    # DOTALL: a file name may hold a newline, and `**` must still cover it (`[^/]` does).
    return re.compile(regex, re.DOTALL)


def path_glob_match(subject: str, pattern: str) -> bool:
    """True if the whole of `subject` matches `pattern`."""
    return _compile(pattern).fullmatch(subject) is not None
