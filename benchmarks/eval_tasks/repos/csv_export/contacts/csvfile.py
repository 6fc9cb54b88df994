"""Write CSV by hand (RFC 4180), so the export streams rows without the csv module's
dialect settings leaking in from callers."""

from __future__ import annotations

from collections.abc import Iterable

SEPARATOR = ","
LINE_END = "\r\n"
_NEEDS_QUOTES = (SEPARATOR, '"', "\r", "\n")


def escape_field(value: object) -> str:
    """One field: None is empty; a field holding a separator, a double quote or a line
    break is enclosed in double quotes, and each double quote inside is doubled."""
    text = "" if value is None else str(value)
    if any(mark in text for mark in _NEEDS_QUOTES):
        return f'"{text}"'
    return text


def format_row(fields: Iterable[object]) -> str:
    return SEPARATOR.join(escape_field(f) for f in fields) + LINE_END
