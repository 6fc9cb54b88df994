"""Delta saves: what a new version adds to one this process knows is stored.

A version's index is its message digests in order, cut into chunks of 64; a chunk is
stored under the sha256 of its bytes. `StoredIndex` is what this process knows of one
stored version: the very message objects it holds, their digests and its chunk keys.
A new conversation is compared with it by object identity — messages are immutable, so
the same object is the same message — and only the messages after the first difference
are looked at: they are encoded (each message object caches its encoding, so a message is
encoded once in its life) and, if the stored version does not already hold them, written.
Chunks are rebuilt from the first one that changed. Appending costs the new messages and
the last chunk; a compaction that rewrites the conversation costs what it rewrote.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from agents.messages import Message
from agents.snapshots._codec import encode_message

__all__ = ["CHUNK", "Delta", "StoredIndex", "chunk_digests", "last_text", "plan"]

CHUNK = 64
DIGEST_BYTES = 32


def chunk_digests(chunk: bytes) -> list[str]:
    return [chunk[i : i + DIGEST_BYTES].hex() for i in range(0, len(chunk), DIGEST_BYTES)]


def _last_text(messages: Sequence[Message]) -> str | None:
    return next((m.text for m in reversed(messages) if m.role == "assistant" and m.text), None)


def last_text(messages: Sequence[Message]) -> str:
    """The preview `sessions list` shows: the last assistant text, cut to 200 characters."""
    return (_last_text(messages) or "")[:200]


@dataclass
class StoredIndex:
    version: str
    messages: list[Message]
    digests: list[str]
    chunks: list[str]
    last_text: str = ""
    counts: dict[str, int] = field(default_factory=dict)  # digest -> how often the version holds it

    def __post_init__(self) -> None:
        if not self.counts:
            for d in self.digests:
                self.counts[d] = self.counts.get(d, 0) + 1

    def advance(self, delta: Delta, version: str) -> None:
        """Become the index of the version `delta` was just committed as (in place: O(delta))."""
        k = delta.keep
        for d in self.digests[k:]:
            left = self.counts[d] - 1
            if left:
                self.counts[d] = left
            else:
                del self.counts[d]
        for d in delta.tail_digests:
            self.counts[d] = self.counts.get(d, 0) + 1
        del self.messages[k:], self.digests[k:], self.chunks[k // CHUNK :]
        self.messages.extend(delta.tail)
        self.digests.extend(delta.tail_digests)
        self.chunks.extend(delta.tail_chunks)
        self.version, self.last_text = version, delta.last_text


@dataclass
class Delta:
    """A conversation as (prefix kept from the stored version) + tail, and what is new."""

    keep: int
    tail: list[Message]
    tail_digests: list[str]
    tail_chunks: list[str]  # keys of the chunks from `keep // CHUNK` on
    chunks: list[str]  # every chunk key of the new version
    new_messages: dict[str, bytes]  # digest -> bytes, for messages the stored version lacks
    new_chunks: dict[str, bytes]
    last_text: str

    @property
    def count(self) -> int:
        return self.keep + len(self.tail)

    def fresh_index(self, version: str) -> StoredIndex:
        """Only for a delta planned against nothing (keep == 0)."""
        return StoredIndex(version, list(self.tail), list(self.tail_digests), list(self.chunks), self.last_text)


def _common_prefix(stored: list[Message], new: Sequence[Message]) -> int:
    n = len(stored)
    # C-speed check for the usual case (the old conversation plus new messages): list
    # equality tests identity first, so unchanged messages are never compared by value.
    if len(new) >= n and (n == 0 or new[n - 1] is stored[n - 1]) and new[:n] == stored:
        return n
    for k, (a, b) in enumerate(zip(stored, new, strict=False)):
        if a is not b:
            return k
    return min(n, len(new))


def plan(conversation: Sequence[Message], stored: StoredIndex | None) -> Delta:
    """Raises CodecError when a new message cannot be encoded."""
    keep = _common_prefix(stored.messages, conversation) if stored is not None else 0
    tail = list(conversation[keep:])
    encoded = [encode_message(m) for m in tail]
    tail_digests = [d for d, _ in encoded]
    held = stored.counts if stored is not None else {}
    new_messages = {d: data for d, data in encoded if d not in held}
    first = keep // CHUNK
    # Digests of the first rebuilt chunk that come from the kept prefix.
    head = stored.digests[first * CHUNK : keep] if stored is not None else []
    rebuilt_digests = head + tail_digests
    tail_chunks, new_chunks = [], {}
    unchanged = stored.chunks[first:] if stored is not None else []
    for n, i in enumerate(range(0, len(rebuilt_digests), CHUNK)):
        chunk = b"".join(bytes.fromhex(d) for d in rebuilt_digests[i : i + CHUNK])
        key = hashlib.sha256(chunk).hexdigest()
        tail_chunks.append(key)
        if n >= len(unchanged) or unchanged[n] != key:  # any other duplicate is skipped by the store
            new_chunks[key] = chunk
    chunks = (stored.chunks[:first] if stored is not None else []) + tail_chunks
    last = _last_text(tail)
    if last is None:
        if stored is not None and keep == len(stored.messages):
            last = stored.last_text
        else:
            last = _last_text(conversation[:keep]) or ""
    return Delta(keep, tail, tail_digests, tail_chunks, chunks, new_messages, new_chunks, last[:200])
