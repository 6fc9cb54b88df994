"""The text of an approval prompt: what the call would do, with nothing hidden.

Everything in a request comes from the model (or, for a Write's diff, from a file the
agent may have written), so it is shown so that it reads as what it is:
- invisible and bidirectional characters (zero-width, BOM, U+202A-U+202E,
  U+2066-U+2069, other format and control characters) appear as `\\u202e`-style
  escapes, line breaks and tabs inside a value as `\\n` and `\\t` (agents.visible,
  the rule every display follows), and the prompt says how many such characters the
  request held;
- an Edit or a Write shows its diff (computed next to the workspace, see
  agents.permissions.preview) instead of the raw strings;
- a long value keeps its beginning and end with the number of characters between.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agents.visible import hidden_characters, reveal

if TYPE_CHECKING:
    from agents.events import PermissionRequested

__all__ = ["describe_request"]

_HEAD_CHARS = 1500
_TAIL_CHARS = 500
_IN_DIFF_CHARS = 80  # with a diff, longer values are not repeated above it


def describe_request(request: PermissionRequested) -> str:
    """The prompt's text for one request (tool, input, reason, diff, hidden-character note)."""
    in_diff = request.preview is not None
    parts = [f"{_line(key)}={_value(value, in_diff=in_diff)}" for key, value in request.input.items()]
    lines = [f"{_line(request.name)} {' '.join(parts)}", f"  ({_line(request.reason)})"]
    in_preview = 0
    for line in (request.preview or "").splitlines():
        lines.append(f"  {_line(line)}")
        in_preview += len(hidden_characters(line, allow=""))
    # Counted over the whole request, not only what fits on the screen.
    hidden = sum(len(hidden_characters(t)) for t in (request.name, request.reason, *_strings(request.input)))
    if hidden:
        lines.append(
            f"  ! this request contains {_count(hidden)}, shown as \\u escapes: the text may not be what it seems"
        )
    elif in_preview:
        lines.append(f"  ! the current file contains {_count(in_preview)}, shown as \\u escapes in the diff")
    return "\n".join(lines)


def _line(text: str) -> str:
    return reveal(text, one_line=True)


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
        return _line(json.dumps(value, ensure_ascii=False))
    if in_diff and (len(value) > _IN_DIFF_CHARS or "\n" in value):
        return f"<{len(value)} characters, in the diff below>"
    if len(value) > _HEAD_CHARS + _TAIL_CHARS:
        missing = len(value) - _HEAD_CHARS - _TAIL_CHARS
        return f'"{_line(value[:_HEAD_CHARS])}[… {missing} characters not shown …]{_line(value[-_TAIL_CHARS:])}"'
    return f'"{_line(value)}"'
