"""Where the prompt cache should hold, given what compaction wrote.

Besides the system prompt, the tool schemas and the newest turn, a request gets one
more cache breakpoint: at the end of the latest message (before the last) that carries
a compaction marker — a summary boundary, a trim note, a digest, a cleared, superseded
or elided body. Compaction changes what comes after its own markers, so this prefix
is what the next compaction is least likely to reach: for `current`, whose digests
are append-only, it is exactly the part the next fold leaves byte-identical; for a
strategy that rewrites it anyway the breakpoint costs nothing (a cache write is billed
by the tokens written, up to the furthest breakpoint, however many there are).

The Anthropic provider places it (`agents.providers.anthropic_convert`) and the
compaction benchmark's cache model prices it (breakpoint `compacted`).
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.messages import Bridge, ClippedBody, Message, TextBlock, ToolResultBlock

__all__ = ["compacted_breakpoint"]


def _marked(message: Message) -> bool:
    for block in message.content:
        if isinstance(block, TextBlock) and block.marker is not None and not isinstance(block.marker, Bridge):
            return True
        if (
            isinstance(block, ToolResultBlock)
            and block.marker is not None
            and not isinstance(block.marker, ClippedBody)
        ):
            return True
    return False


def compacted_breakpoint(messages: Sequence[Message]) -> int | None:
    """Index of the message whose last block takes the `compacted` breakpoint, or None."""
    for i in range(len(messages) - 2, -1, -1):
        if _marked(messages[i]):
            return i
    return None
