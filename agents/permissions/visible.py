"""Characters a terminal does not show as themselves, and how to make them visible.

Controls, format characters (zero-width, bidirectional overrides and isolates, the BOM),
separators other than the plain space, private-use, surrogates and unassigned code
points can make text read differently from what it is (a right-to-left override makes
`evil\\u202etxt.sh` look like `evilhs.txt`). The shell reader treats a line holding one
as unknowable; an approval prompt shows each as a `\\u202e`-style escape.
"""

from __future__ import annotations

import unicodedata

__all__ = ["hidden_characters", "is_hidden", "reveal"]

_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})


def is_hidden(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category in _HIDDEN_CATEGORIES or (category == "Zs" and ch != " ")


def hidden_characters(text: str, *, allow: str = "\t\n") -> list[str]:
    """The characters of `text` (other than those in `allow`) that do not show as themselves."""
    return [ch for ch in text if ch not in allow and is_hidden(ch)]


def reveal(text: str, *, keep: str = "\t\n") -> tuple[str, int]:
    """`text` with every hidden character (except those in `keep`) written as an escape,
    and how many there were."""
    out: list[str] = []
    count = 0
    for ch in text:
        if ch in keep or not is_hidden(ch):
            out.append(ch)
            continue
        count += 1
        code = ord(ch)
        out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
    return "".join(out), count
