"""The text of an approval prompt: what the call would do, with nothing hidden.

Everything in a request comes from the model (or, for a Write's diff, from a file the
agent may have written), so it is shown so that it reads as what it is:
- invisible and bidirectional characters (zero-width, BOM, U+202A-U+202E,
  U+2066-U+2069, other format and control characters) appear as `\\u202e`-style
  escapes, line breaks and tabs inside a value as `\\n` and `\\t`, and the prompt says
  how many such characters the request held;
- an Edit or a Write shows its diff (computed next to the workspace, see
  agents.permissions.preview) instead of the raw strings;
- a long value keeps its beginning and end with the number of characters between.
"""

from __future__ import annotations

import json
from typing import Any

from agents.events import PermissionRequested
from agents.permissions.visible import hidden_characters, reveal

__all__ = ["describe_request", "shown"]

_HEAD_CHARS = 1500
_TAIL_CHARS = 500
_IN_DIFF_CHARS = 80  # with a diff, longer values are not repeated above it


def shown(text: str) -> tuple[str, int]:
    """`text` on one line with hidden characters escaped, and how many there were."""
    flat = text.replace("\n", "\\n").replace("\t", "\\t")
    return reveal(flat, keep="")


def describe_request(request: PermissionRequested) -> str:
    """The prompt's text for one request (tool, input, reason, diff, hidden-character note)."""
    in_diff = request.preview is not None
    parts = [f"{shown(key)[0]}={_value(value, in_diff=in_diff)}" for key, value in request.input.items()]
    lines = [f"{shown(request.name)[0]} {' '.join(parts)}", f"  ({shown(request.reason)[0]})"]
    in_preview = 0
    for line in (request.preview or "").splitlines():
        text, count = reveal(line, keep="")
        lines.append(f"  {text}")
        in_preview += count
    # Counted over the whole request, not only what fits on the screen.
    hidden = sum(len(hidden_characters(t)) for t in (request.name, request.reason, *_strings(request.input)))
    if hidden:
        lines.append(f"  ! this request contains {_count(hidden)}, shown as \\u escapes: the text may not be what it seems")
    elif in_preview:
        lines.append(f"  ! the current file contains {_count(in_preview)}, shown as \\u escapes in the diff")
    return "\n".join(lines)


def _count(n: int) -> str:
    return f"{n} invisible, bidirectional or control character{'' if n == 1 else 's'}"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _value(value: Any, *, in_diff: bool) -> str:
    if not isinstance(value, str):
        return shown(json.dumps(value, ensure_ascii=False))[0]
    if in_diff and (len(value) > _IN_DIFF_CHARS or "\n" in value):
        return f"<{len(value)} characters, in the diff below>"
    if len(value) > _HEAD_CHARS + _TAIL_CHARS:
        missing = len(value) - _HEAD_CHARS - _TAIL_CHARS
        return f'"{shown(value[:_HEAD_CHARS])[0]}[… {missing} characters not shown …]{shown(value[-_TAIL_CHARS:])[0]}"'
    return f'"{shown(value)[0]}"'
