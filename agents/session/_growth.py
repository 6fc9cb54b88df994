"""Facts about a conversation kept up to date as it grows, not read again whole per call.

A session's conversation is one list the loop only appends to (a reply, a batch's
results, a user message). Everything else hands the state a new list (a compaction, a
`/clear`, a restore) or pops its end (a refused reply; a paused reply joined by its
continuation). So a reader that remembers which list it read, how far, and the last
message it read there knows what is new: the same list, at least as long, with that
message still in its place has only grown, and only the messages after it need reading.
Anything else — a new list, a shorter one, another message in that place — is read
again whole, once. A per-call fact of the whole conversation then costs what the call
added, however long the session has run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence, Set

from agents.messages import Message

__all__ = ["GrowingSet", "GrowthCursor", "ToolIdIndex"]


class GrowthCursor:
    """Where a reader of a conversation got to."""

    def __init__(self) -> None:
        self._source: Sequence[Message] | None = None  # held, so its id cannot be reused while compared
        self._read = 0
        self._last: Message | None = None

    def unread(self, conversation: Sequence[Message]) -> tuple[bool, Sequence[Message]]:
        """(False, the messages appended since the last call) when `conversation` is the
        list read last time, grown at its end; (True, all of it) otherwise. Either way
        the whole conversation counts as read afterwards."""
        read = self._read
        grown = (
            conversation is self._source
            and len(conversation) >= read
            and (read == 0 or conversation[read - 1] is self._last)
        )
        self._source, self._read = conversation, len(conversation)
        self._last = conversation[-1] if conversation else None
        return not grown, conversation[read:] if grown else conversation


class GrowingSet:
    """What `facts` finds in each message of a conversation, as one set that grows with
    the conversation; built again, once, when the conversation is replaced or loses its end."""

    def __init__(self, facts: Callable[[Message], Iterable[str]]) -> None:
        self._facts = facts
        self._cursor = GrowthCursor()
        self._found: set[str] = set()

    def of(self, conversation: Sequence[Message]) -> Set[str]:
        """Every fact of `conversation` (read-only: it is the set itself)."""
        rewritten, unread = self._cursor.unread(conversation)
        if rewritten:
            self._found = set()
        for message in unread:
            self._found.update(self._facts(message))
        return self._found


class ToolIdIndex(GrowingSet):
    """The ids of the conversation's tool_use blocks, answered or still open: the ids a
    new reply's calls must not repeat."""

    def __init__(self) -> None:
        super().__init__(lambda message: (use.id for use in message.tool_uses))

    def ids(self, conversation: Sequence[Message]) -> Set[str]:
        return self.of(conversation)
