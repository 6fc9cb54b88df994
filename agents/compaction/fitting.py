"""The last steps of a hard fit: when folding cannot bring a request under the budget
(the kept recent results are themselves too large), clear or clip what is left.

Pure functions returning (new messages, the original blocks whose bodies left view),
or None when nothing can be removed. Untouched messages stay the same objects.
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.compaction.clearing import is_placeholder, marked_result, replace_results
from agents.compaction.residue import residue
from agents.compaction.result_budget import clip_tool_result
from agents.messages import ClearedBody, ClippedBody, Message, ToolResultBlock
from agents.tokens import TokenCounter

__all__ = ["clear_kept_results", "clip_to_fit"]

_MIN_CLIPPED_TOKENS = 200  # a clipped body keeps at least this much head and tail


def _open_results(messages: Sequence[Message]) -> list[ToolResultBlock]:
    return [b for m in messages if m.role == "user" for b in m.tool_results_in if not is_placeholder(b.marker)]


def clear_kept_results(
    messages: Sequence[Message], excess: int, counter: TokenCounter, residue_chars: int, *, latest: bool = False
) -> tuple[list[Message], list[ToolResultBlock]] | None:
    """Clear result bodies oldest first (each keeping its residue) until about `excess`
    tokens are freed; the latest result too only with `latest`."""
    chosen: dict[str, ToolResultBlock] = {}
    originals: list[ToolResultBlock] = []
    freed = 0
    candidates = _open_results(messages)
    for block in candidates if latest else candidates[:-1]:
        if freed >= excess:
            break
        cleared = marked_result(
            block, ClearedBody(original_chars=len(block.content), residue=residue(block.content, residue_chars))
        )
        gain = counter.count_text(block.content) - counter.count_text(cleared.content)
        if gain > 0:
            chosen[block.tool_use_id] = cleared
            originals.append(block)
            freed += gain
    if not chosen:
        return None
    return replace_results(messages, chosen), originals


def clip_to_fit(
    messages: Sequence[Message], excess: int, counter: TokenCounter
) -> tuple[list[Message], list[ToolResultBlock]] | None:
    """Clip the largest open bodies (head and tail kept, the middle recallable) until
    about `excess` tokens are freed; a body clipped already is left to clearing."""
    chosen: dict[str, ToolResultBlock] = {}
    originals: list[ToolResultBlock] = []
    unclipped = [b for b in _open_results(messages) if not isinstance(b.marker, ClippedBody)]
    for block in sorted(unclipped, key=lambda b: -len(b.content)):
        if excess <= 0:
            break
        tokens = counter.count_text(block.content)
        allowed = max(tokens - excess, _MIN_CLIPPED_TOKENS)
        clipped = clip_tool_result(block.content, max_tokens=allowed, recall_id=block.tool_use_id, counter=counter)
        if clipped is None:
            continue
        chosen[block.tool_use_id] = ToolResultBlock(
            tool_use_id=block.tool_use_id, content=clipped.content, is_error=block.is_error, marker=clipped.marker
        )
        originals.append(block)
        excess -= tokens - counter.count_text(clipped.content)
    if not chosen:
        return None
    return replace_results(messages, chosen), originals
