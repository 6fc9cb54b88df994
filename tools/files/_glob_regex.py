"""Globs as RE2 regular expressions: matched in time linear in the path, whatever the pattern.

A backtracking matcher (fnmatch's `re`, a recursive `**`) takes exponential time on
patterns like `*a*a*a*a*a*a*b` or `**/**/**/**/x` against a long name or a deep path, and
the patterns here come from the model, from permission rules and from the workspace's own
ignore files. RE2 runs an automaton instead: each glob becomes one RE2 regex, matched
against the whole path in one call, in time linear in the path.

Three dialects, one translator:

- `rule_regex` (permission rules and the file tools' deny list): `**` is any text, `/`
  included; `*` and `?` stay within one segment; everything else is literal (`[x]` too).
- `files_regex` (the Glob tool, Grep's `glob`): fnmatch within a segment (`*`, `?`,
  `[seq]`, `[!seq]`); a `**` segment is zero or more directories.
- `ignore_regex` (.gitignore and .ignore lines): git's wildmatch: as files_regex plus `\\`
  escapes, `[^seq]` and `[[:alpha:]]`-style classes; `**` crosses directories only as a
  whole segment (`**/x`, `x/**`, `a/**/b`), elsewhere it is `*`.

`*`, `?` and a bracket never match `/`. Paths are matched as UTF-8; a name that is not
valid UTF-8 (a byte the file system allows) is matched with U+FFFD in place of each
undecodable byte, so `*` still covers it.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Callable

import re2

__all__ = ["GlobError", "compile_regex", "files_regex", "ignore_regex", "matches", "rule_regex", "subject"]

_SLASH = ord("/")
NEVER = r"\b\B"  # a regex no text matches: an ignore line git would never match

# POSIX bracket classes, ASCII only as in git's wildmatch.
_POSIX: dict[str, str] = {
    "alnum": string.ascii_letters + string.digits,
    "alpha": string.ascii_letters,
    "blank": " \t",
    "cntrl": "".join(map(chr, [*range(32), 127])),
    "digit": string.digits,
    "graph": "".join(map(chr, range(33, 127))),
    "lower": string.ascii_lowercase,
    "print": "".join(map(chr, range(32, 127))),
    "punct": string.punctuation,
    "space": " \t\n\r\v\f",
    "upper": string.ascii_uppercase,
    "xdigit": string.hexdigits,
}


class GlobError(ValueError):
    """A glob whose regex RE2 cannot compile (in practice: one too large for its memory budget)."""


def _char(code: int) -> str:
    if chr(code).isascii() and chr(code).isalnum():
        return chr(code)
    return f"\\x{{{0xFFFD if 0xD800 <= code <= 0xDFFF else code:X}}}"


def _literal(text: str) -> str:
    return "".join(_char(ord(c)) for c in text)


def _emit_class(ranges: list[tuple[int, int]], negate: bool) -> str:
    """A bracket as an RE2 class that never matches `/`."""
    kept: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if lo <= _SLASH <= hi:
            kept += [r for r in ((lo, _SLASH - 1), (_SLASH + 1, hi)) if r[0] <= r[1]]
        elif lo <= hi:
            kept.append((lo, hi))
    body = "".join(_char(lo) if lo == hi else f"{_char(lo)}-{_char(hi)}" for lo, hi in kept)
    if negate:
        return f"[^{body}\\x{{2F}}]"
    return f"[{body}]" if body else NEVER


def _bracket(pattern: str, start: int, *, git: bool) -> tuple[str, int] | None:
    """The class of the bracket opening at `start`, and the index after it; None when the
    bracket is not closed (or, for git, names an unknown class)."""
    n, j = len(pattern), start + 1
    negate = j < n and (pattern[j] == "!" or (git and pattern[j] == "^"))
    j += negate
    ranges: list[tuple[int, int]] = []
    first = True
    while j < n:
        c = pattern[j]
        if c == "]" and not first:
            return _emit_class(ranges, negate), j + 1
        first = False
        if git and pattern.startswith("[:", j):
            end = pattern.find(":]", j + 2)
            members = _POSIX.get(pattern[j + 2 : end]) if end > 0 else None
            if members is None:
                return None
            ranges += [(ord(m), ord(m)) for m in members]
            j = end + 2
            continue
        if git and c == "\\" and j + 1 < n:
            j += 1
            c = pattern[j]
        j += 1
        hi = c
        if j + 1 < n and pattern[j] == "-" and pattern[j + 1] != "]":
            hi, j = pattern[j + 1], j + 2
            if git and hi == "\\" and j < n:
                hi, j = pattern[j], j + 1
        ranges.append((ord(c), ord(hi)))  # a reversed range matches nothing, as in fnmatch
    return None


def rule_regex(pattern: str) -> str:
    """Permission-rule glob: `**` any text, `*` and `?` within a segment, the rest literal."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(pattern[i]) or _char(ord(pattern[i])))
        i += 1
    return "".join(out)


def _segment_regex(segment: str) -> str:
    """fnmatch within one segment; an unclosed `[` is a literal `[`, as in fnmatch."""
    out: list[str] = []
    i = 0
    while i < len(segment):
        c = segment[i]
        if c == "[" and (found := _bracket(segment, i, git=False)) is not None:
            out.append(found[0])
            i = found[1]
            continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(c) or _char(ord(c)))
        i += 1
    return "".join(out)


def files_regex(segments: list[str]) -> str:
    """Glob-tool pattern, already split into segments: a `**` segment is zero or more
    directories. Matched against "/" + the path, so every segment starts with a slash."""
    return "".join("(?:/[^/]+)*" if seg == "**" else "/" + _segment_regex(seg) for seg in segments)


def ignore_regex(pattern: str) -> str:
    """An ignore-file glob (the line's text after `!`, anchoring `/` and trailing `/` are
    taken off) as git's wildmatch reads it with WM_PATHNAME."""
    out: list[str] = []
    n, i = len(pattern), 0
    while i < n:
        c = pattern[i]
        if c == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            whole_segment = j - i > 1 and (i == 0 or pattern[i - 1] == "/") and (j == n or pattern[j] == "/")
            if not whole_segment:
                out.append("[^/]*")
            elif j == n:
                out.append(".*")  # trailing "/**": everything inside
            else:
                out.append("(?:.*/)?")  # "**/": zero or more directories
                j += 1
            i = j
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            found = _bracket(pattern, i, git=True)
            if found is None:
                return NEVER  # wildmatch gives up on the whole pattern
            out.append(found[0])
            i = found[1]
        elif c == "\\":
            if i + 1 == n:
                return NEVER  # a trailing backslash: git matches nothing
            out.append(_char(ord(pattern[i + 1])))
            i += 2
        else:
            out.append(_char(ord(c)))
            i += 1
    return "".join(out)


def _options() -> re2.Options:
    options = re2.Options()
    options.dot_nl = True  # a file name may hold a newline; `**` still covers it
    options.log_errors = False
    return options


_OPTIONS = _options()


@functools.lru_cache(maxsize=1024)
def compile_regex(regex: str) -> Callable[[bytes], object]:
    """The fullmatch function of `regex`; GlobError if RE2 cannot compile it."""
    try:
        return re2.compile(regex, _OPTIONS).fullmatch
    except re2.error as exc:
        raise GlobError(f"the pattern is too complex to match ({_reason(exc)})") from None


def _reason(exc: re2.error) -> str:
    detail = exc.args[0] if exc.args else exc
    return detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)


def subject(text: str) -> bytes:
    """`text` as valid UTF-8: undecodable bytes (surrogate escapes) become U+FFFD."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        pass
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that escapes no byte
        raw = text.encode("utf-8", "replace")
    return raw.decode("utf-8", "replace").encode()


def matches(regex: str, text: str) -> bool:
    """True if the whole of `text` matches `regex` (one of the dialects above)."""
    return compile_regex(regex)(subject(text)) is not None
