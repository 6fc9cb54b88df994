"""The small strict grammar an allow rule's command must fit, and shell word unquoting.

An allow rule (or a user's "always" grant) may only cover a line that is ONE simple
command of literal words:

    line    := blank* word (blank+ word)* blank*
    word    := (safe | '\\' printable-ascii | "'" [^']* "'" | '"' [^"$`\\!]* '"')+
    safe    := [A-Za-z0-9_./:=+,@%-]
    blank   := ' ' | TAB

Everything the grammar leaves out is what makes a line mean more than its words:
expansions (`$`, globs, `~`, braces), substitutions, redirections, control operators
(`; & | ( )` and line breaks), comments, and any invisible or control character. The
first word may not hold `=` (that is a variable assignment, which changes what runs).
The grammar is deliberately narrower than bash; a line outside it is never allowed by a
rule, only asked about.

Rule patterns are stricter still: bare `safe` words, no quoting at all.
"""

from __future__ import annotations

import re
import string

from agents.visible import hidden_characters

__all__ = ["SAFE_CHARS", "has_brace_expansion", "simple_words", "unescape_double_quoted", "unescape_word"]

SAFE_CHARS = frozenset(string.ascii_letters + string.digits + "_./:=+,@%-")
_BLANKS = " \t"
_BRACE_EXPANSION = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
_PRINTABLE_ASCII = frozenset(chr(c) for c in range(0x21, 0x7F))
_DOUBLE_QUOTED_SPECIAL = frozenset('$`\\!"')


def simple_words(command: str) -> tuple[str, ...] | None:
    """The unquoted words of `command` if it fits the strict grammar above, else None."""
    if hidden_characters(command, allow="\t"):
        return None
    words: list[str] = []
    i, n = 0, len(command)
    while i < n:
        if command[i] in _BLANKS:
            i += 1
            continue
        word, i = _word(command, i)
        if word is None:
            return None
        words.append(word)
    if not words or "=" in words[0]:
        return None
    return tuple(words)


def _word(text: str, i: int) -> tuple[str | None, int]:
    """One word starting at `i`: its value and the index after it (None if outside the grammar)."""
    out: list[str] = []
    n = len(text)
    while i < n and text[i] not in _BLANKS:
        ch = text[i]
        if ch in SAFE_CHARS:
            out.append(ch)
            i += 1
        elif ch == "\\":
            if i + 1 >= n or text[i + 1] not in _PRINTABLE_ASCII:
                return None, i
            out.append(text[i + 1])
            i += 2
        elif ch in "'\"":
            end = text.find(ch, i + 1)
            inner = text[i + 1 : end]
            if end < 0 or (ch == '"' and _DOUBLE_QUOTED_SPECIAL & set(inner)):
                return None, i
            out.append(inner)
            i = end + 1
        else:
            return None, i
    return "".join(out), i


def unescape_word(text: str) -> str | None:
    """The value of an unquoted shell word, or None when bash would expand it (a glob,
    braces, a leading tilde, a `$`): such a word is not known until the command runs."""
    if text.startswith("~"):
        return None
    out: list[str] = []
    plain: list[str] = []  # the unescaped characters, with escaped ones blanked out
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            if i + 1 < n and text[i + 1] != "\n":
                out.append(text[i + 1])
                plain.append(" ")
            i += 2
            continue
        if ch in "*?[]$`":
            return None
        out.append(ch)
        plain.append(ch)
        i += 1
    return None if has_brace_expansion("".join(plain)) else "".join(out)


def has_brace_expansion(unquoted: str) -> bool:
    """Whether unquoted, unescaped text holds `{a,b}` or `{1..3}` (which bash expands)."""
    return _BRACE_EXPANSION.search(unquoted) is not None


def unescape_double_quoted(inner: str) -> str | None:
    """The value of the text between double quotes, or None if it holds an expansion."""
    out: list[str] = []
    i, n = 0, len(inner)
    while i < n:
        ch = inner[i]
        if ch == "\\" and i + 1 < n and inner[i + 1] in '$`"\\\n':
            if inner[i + 1] != "\n":  # backslash-newline is a line continuation: removed
                out.append(inner[i + 1])
            i += 2
            continue
        if ch in "$`":
            return None
        out.append(ch)
        i += 1
    return "".join(out)
