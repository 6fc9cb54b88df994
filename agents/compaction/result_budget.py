"""Per-result budget: an over-budget tool result keeps its head, a marker, and its tail.

The tail gets the larger share because test summaries, exit statuses and the root of
a traceback are printed last. The marker says how much was removed and how to get it
back, so nothing is cut silently.
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.messages import ClippedBody
from agents.tokens import TokenCounter

__all__ = ["ClippedResult", "clip_tool_result", "truncation_marker"]

_HEAD_SHARE = 0.4
_MIN_SIDE_CHARS = 1  # never an empty head or tail, however small the budget


@dataclass(frozen=True)
class ClippedResult:
    content: str
    removed_chars: int
    head_chars: int

    @property
    def marker(self) -> ClippedBody:
        """The typed marker the clipped tool result carries."""
        return ClippedBody(removed_chars=self.removed_chars, offset=self.head_chars)


def truncation_marker(recall_id: str, removed: int, offset: int) -> str:
    """The marker line standing between the head and the tail."""
    return ClippedBody(removed_chars=removed, offset=offset).render(recall_id)


def clip_tool_result(content: str, *, max_tokens: int, recall_id: str, counter: TokenCounter) -> ClippedResult | None:
    """The clipped form of `content`, or None when it is within budget."""
    tokens = counter.count_text(content)
    if tokens <= max_tokens:
        return None
    allowed_chars = int(len(content) * max_tokens / tokens)
    # The marker's own size is paid from the budget; estimate it with a worst-case width.
    marker_len = len(truncation_marker(recall_id, len(content), len(content)))
    keep = max(allowed_chars - marker_len, 2 * _MIN_SIDE_CHARS)
    head = max(int(keep * _HEAD_SHARE), _MIN_SIDE_CHARS)
    tail = max(keep - head, _MIN_SIDE_CHARS)
    removed = len(content) - head - tail
    if removed <= 0:
        return None
    marker = truncation_marker(recall_id, removed, head)
    return ClippedResult(content=content[:head] + marker + content[-tail:], removed_chars=removed, head_chars=head)
