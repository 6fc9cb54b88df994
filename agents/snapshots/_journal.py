"""Progress inside a turn, kept as a journal on a stored version: one added row per save.

A session saves twice per tool batch while a turn runs (before a call that can change
something starts, and after the batch: `agents.session._tool_batch`). Such a save is nearly always
the stored state plus a message or two and a new header, so it is written as one journal
entry on the version it extends instead of as a version of its own:

    j:<version>:<n>   entry n (0, 1, ...) on <version>: envelope {schema, sum, body};
                      body = {header, count, messages} — the session's header, how many
                      messages the conversation then held, and the msgpack bytes of those
                      appended since entry n-1 (or since the version)

An entry is one row added in a transaction of its own, never replacing one, so a kill
at any moment leaves entries 0..n-1 or 0..n, and SQLite's commit makes it as durable as
a version. No session record is rewritten and no history rotates, so nothing is
collected because of it. Loading a version applies its entries in order, each checked
against its checksum and its count, up to the first missing one; a damaged entry stops
the reading there and says so. After `JOURNAL_LIMIT` entries, or when the conversation
changed other than at its end, the next save is a version again (and every save that
ends a turn, a compaction or a `/clear` is one), so a load reads few entries. A version's
entries are deleted with it when it is collected (`agents.snapshots._gc`).

An entry is named `<version>.<n>` where a version id is expected (`load` reads the
version and its entries up to n).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from agents.messages import Message, message_caches
from agents.session import SessionState
from agents.snapshots._codec import CodecError, decode_message, encode_message
from agents.snapshots._errors import SnapshotCorrupt
from agents.snapshots._version import open_envelope, seal

__all__ = [
    "JOURNALED_REASON",
    "JOURNAL_LIMIT",
    "JournalTip",
    "entry_name",
    "journal_key",
    "make_entry",
    "read_journal",
    "split_name",
]

JOURNALED_REASON = "tool_batch"  # the saves made inside a turn
JOURNAL_LIMIT = 64  # entries on one version before the next save is a version again


def journal_key(version: str, n: int) -> str:
    return f"j:{version}:{n:04d}"


def entry_name(version: str, n: int) -> str:
    return f"{version}.{n:04d}"


def split_name(name: str) -> tuple[str, int | None]:
    """(version, entry number) of `<version>.<n>`; (name, None) for a plain version id."""
    version, dot, n = name.partition(".")
    return (version, int(n)) if dot and n.isdigit() else (name, None)


@dataclass
class JournalTip:
    """What this process last stored for a session: a version and the entries on it."""

    version: str
    entries: int
    messages: list[Message]  # the conversation as last stored (the very objects)

    def appended(self, conversation: Sequence[Message]) -> list[Message] | None:
        """The messages added at the end since the last save; None when the conversation
        changed otherwise (then only a version can store it). List equality tests identity
        first, so the unchanged prefix is compared at C speed, never by value."""
        n = len(self.messages)
        if len(conversation) < n or (n and conversation[n - 1] is not self.messages[-1]):
            return None
        if conversation[:n] != self.messages:
            return None
        return list(conversation[n:])

    def advance(self, appended: list[Message]) -> None:
        self.messages.extend(appended)
        self.entries += 1


def make_entry(header: dict, appended: Sequence[Message], count: int) -> bytes:
    """Raises CodecError when a message cannot be encoded."""
    return seal({"header": header, "count": count, "messages": [encode_message(m)[1] for m in appended]})


def read_journal(
    reader, version: str, state: SessionState, *, upto: int | None = None
) -> tuple[SessionState, int, str | None]:
    """`state` (version `version` as read) with its journal entries applied, in order, up to
    the first missing one (or entry `upto`): (the state, entries applied, the problem that
    stopped the reading early, if one did)."""
    last = JOURNAL_LIMIT if upto is None else min(upto + 1, JOURNAL_LIMIT)
    rows = reader.values([journal_key(version, n) for n in range(last)])
    conversation = list(state.conversation)
    header: dict | None = None
    applied, problem = 0, None
    for n in range(last):
        raw = rows.get(journal_key(version, n))
        if raw is None:
            break
        try:
            body_header, added = _entry(raw, entry_name(version, n), len(conversation))
        except SnapshotCorrupt as exc:
            problem = f"{exc}; the session goes on from the entry before it"
            break
        header = body_header
        conversation.extend(added)
        applied += 1
    if header is not None:
        try:
            state = SessionState.model_validate({**header, "conversation": conversation})
        except ValueError as exc:
            raise SnapshotCorrupt(
                f"snapshot journal entry {entry_name(version, applied - 1)} does not hold a valid session ({exc})",
                version=entry_name(version, applied - 1),
            ) from exc
    return state, applied, problem


def _entry(raw: object, name: str, before: int) -> tuple[dict, list[Message]]:
    """The header and the messages of one entry that follows `before` messages."""
    body = open_envelope(raw, name)  # an entry is sealed as a version is
    try:
        added = []
        for data in body["messages"]:
            message = decode_message(data)
            message_caches(message)["_encoded"] = (hashlib.sha256(data).hexdigest(), data)  # never encoded again
            added.append(message)
        if body["count"] != before + len(added) or not isinstance(body["header"], dict):
            raise SnapshotCorrupt(f"snapshot journal entry {name} does not follow the one before it", version=name)
    except (CodecError, KeyError, TypeError) as exc:
        raise SnapshotCorrupt(f"snapshot journal entry {name} cannot be decoded ({exc})", version=name) from exc
    return body["header"], added
