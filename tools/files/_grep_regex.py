"""Grep's pattern: RE2 syntax, so a search takes time linear in the text whatever the pattern.

Python's `re` backtracks: `(a+)+$` against a long line of `a`s runs for ever. RE2 runs
an automaton instead, and pays for that with the features that need backtracking:
backreferences, lookaround, atomic groups, possessive quantifiers, conditionals. A
pattern using one gets one error naming the construct and what to do instead; any other
syntax error gets RE2's own message. Matching is per line: the pattern never matches a
newline (RE2's never_nl), `^` and `$` match at line ends.
"""

from __future__ import annotations

from typing import Any

import re2

from tools.base import ToolError

__all__ = ["compile_grep_pattern"]

_PERL_GROUPS = {
    "(?=": "lookahead (?=...)",
    "(?!": "negative lookahead (?!...)",
    "(?<=": "lookbehind (?<=...)",
    "(?<!": "negative lookbehind (?<!...)",
    "(?>": "atomic group (?>...)",
    "(?(": "conditional (?(...)...)",
    "(?#": "comment group (?#...)",
    "(?|": "branch reset group (?|...)",
    "(?R": "recursion (?R)",
    "(?x": "verbose flag (?x)",
}
_BACKTRACKING = ("lookahead", "lookbehind", "backreference", "atomic", "possessive", "conditional", "recursion")


def _construct(kind: str, operand: str, pattern: str) -> str | None:
    """What RE2 refused, named for the model; None when RE2's message says it already."""
    if kind == "invalid perl operator":
        if operand == "(?P":
            return "named backreference (?P=name)" if "(?P=" in pattern else "recursion (?P>name)"
        return _PERL_GROUPS.get(operand, f"the inline flag {operand}) (RE2 knows i, m, s and U)")
    if kind == "invalid escape sequence":
        if operand[1:].isdigit() or operand in ("\\g", "\\k"):
            return f"backreference {operand}"
        hints = {"\\Z": " (use $ or \\z)", "\\u": " (write \\x{00e9})", "\\e": " (write \\x1b)"}
        return f"the escape {operand}{hints.get(operand, '')}"
    if kind == "bad repetition operator" and operand.endswith("+") and len(operand) > 1:
        return f"possessive quantifier {operand}"
    return None


def _message(pattern: str, error: re2.error) -> str:
    detail = error.args[0] if error.args else str(error)
    text = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)
    kind, _, operand = text.partition(": ")
    construct = _construct(kind, operand, pattern)
    if construct is None:
        return f"Invalid regex {pattern!r}: {text}"
    fix = (
        "rewrite the pattern without it (search for a broader pattern, then read the lines), "
        "or run grep -P through Bash"
        if any(word in construct for word in _BACKTRACKING)
        else "rewrite the pattern without it"
    )
    return (
        f"Invalid regex {pattern!r}: Grep uses RE2 syntax, which has no {construct} "
        f"(RE2 matches in linear time, without backtracking); {fix}."
    )


def compile_grep_pattern(pattern: str, *, case_insensitive: bool) -> Any:
    """The compiled pattern (an re2 regex), searched over a file's bytes; ToolError naming
    what is wrong. The pattern is checked as written, then compiled after a (?m) flag
    (a prefix, not a group, so no text in the pattern can close it)."""
    options = re2.Options()
    options.never_nl = True
    options.case_sensitive = not case_insensitive
    options.log_errors = False
    try:
        re2.compile(pattern, options)
    except re2.error as exc:
        raise ToolError(_message(pattern, exc)) from None
    return re2.compile("(?m)" + pattern, options)
