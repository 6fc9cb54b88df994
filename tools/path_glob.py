"""One glob language for workspace paths, shared by permission rules and the file tools.

`**` crosses directories, `*` and `?` stay within one path segment, everything else is
literal. Permission rules (`Edit(src/**)`) and the file tools' per-file deny list match
with this same function, so a path a rule denies is exactly the path a tool hides. The
glob is matched as an RE2 regex (`tools.glob_regex`): linear in the path, so a rule
like `*a*a*a*a*a*b` costs no more than `*.py`.
"""

from __future__ import annotations

from tools.glob_regex import matches, rule_regex

__all__ = ["path_glob_match"]


def path_glob_match(subject: str, pattern: str) -> bool:
    """True if the whole of `subject` matches `pattern`."""
    return matches(rule_regex(pattern), subject)
