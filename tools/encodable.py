"""Text every wire and store can carry, and file names shown without loss.

A Python `str` can hold what UTF-8 cannot encode: a surrogate. Two sources put them
there: a file name the file system gave as bytes that are not UTF-8 (Python decodes it
with `surrogateescape`, each such byte becoming U+DC80-U+DCFF), and a lone surrogate a
model or a server wrote as a JSON escape (`"\\ud800"`). Either one makes msgpack (the
snapshot store), the SDKs' JSON request bodies and the `--json` stream fail, and since
the text stays in the conversation, every later save and request with it. So text is
made encodable where it enters (a model's reply, a tool's output, the user's input):

    encodable(text)     each surrogate written as visible text: an escaped byte (U+DCxx
                        from `surrogateescape`) as `\\xNN`, any other as `\\uXXXX`; text
                        UTF-8 can already encode is returned as it is (checked by
                        one UTF-8 encode of text that is not ASCII; ASCII costs nothing)
    shown_name(name)    a path for the model to read, exactly: each byte that is not
                        UTF-8 as `\\xNN` (what bash's `$'...'` reads too), and a backslash
                        that would read as the start of an escape doubled
    name_from_shown(t)  the inverse: the path a model copied from a listing, as the file
                        system's bytes (in `surrogateescape` form); text without a
                        backslash is returned as it is

`shown_name` and `name_from_shown` round-trip every name: in a shown name a backslash is
either doubled (`\\\\`), starts a byte escape (`\\xNN`, NN from 80 to ff), or stands for
itself and is followed by neither. So a path the model writes itself that holds such a
sequence literally is read as the escape (`a\\\\b` names `a\\b`); every other path means
what it always did.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["encodable", "encodable_value", "name_from_shown", "shown_name"]

_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_BYTE = r"x[89a-fA-F][0-9a-fA-F]"
# In a name: a surrogate, or a backslash that a reader would take for the start of an escape.
_NAME_SPECIAL = re.compile("[\ud800-\udfff]|\\\\(?=\\\\|" + _ESCAPED_BYTE + "|[\udc80-\udcff])")
_SHOWN_ESCAPE = re.compile(r"\\(\\|" + _ESCAPED_BYTE + ")")


def _escape(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"  # a byte surrogateescape kept
    if 0xD800 <= code <= 0xDFFF:
        return f"\\u{code:04x}"
    return "\\\\"  # a backslash before what would read as an escape


def _encodes(text: str) -> bool:
    if text.isascii():  # O(1): CPython knows
        return True
    try:
        text.encode("utf-8")  # faster than searching for a surrogate (CPython's encoder is C)
    except UnicodeEncodeError:
        return False
    return True


def encodable(text: str) -> str:
    """`text` with every surrogate written as an escape, so UTF-8 can encode it."""
    if _encodes(text):
        return text
    return _SURROGATE.sub(lambda m: _escape(m.group()), text)


def encodable_value(value: Any) -> Any:
    """`value` (JSON-shaped: dicts, lists, strings, numbers) with every string, keys too,
    made `encodable`; the very same object when nothing needed it."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        pairs = [(encodable_value(k), encodable_value(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if isinstance(value, list | tuple):
        items = [encodable_value(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items)
    return value


def shown_name(name: str) -> str:
    """A file name (or path) as the model is shown it: lossless, and encodable."""
    if "\\" not in name and _encodes(name):
        return name
    return _NAME_SPECIAL.sub(lambda m: _escape(m.group()), name)


def _unescape(match: re.Match[str]) -> str:
    escape = match.group(1)
    return "\\" if escape == "\\" else chr(0xDC00 + int(escape[1:], 16))


def name_from_shown(text: str) -> str:
    """The file name `shown_name` showed as `text` (surrogateescape form)."""
    if "\\" not in text:
        return text
    return _SHOWN_ESCAPE.sub(_unescape, text)
