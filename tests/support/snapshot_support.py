"""What the DiskSnapshotStore tests share: the session id they save under, a growing
conversation, and reading a session's diskcache behind the store's back."""

from pathlib import Path

import diskcache

from agents.messages import Message
from tests.support.fakes import tool_interaction

SID = "sess01"


def growing_conversation(pairs: int) -> list[Message]:
    messages = [Message.user("investigate the failing test")]
    for i in range(pairs):
        messages += tool_interaction(i)
    return messages


def dump_session(root: Path, session_id: str = SID) -> dict:
    """Every key and stored value of a session's diskcache (read through a separate handle)."""
    with diskcache.Cache(str(root / session_id)) as cache:
        return {key: cache.get(key) for key in cache.iterkeys()}


def session_keys(root: Path, prefix: str, session_id: str = SID) -> set[str]:
    return {k for k in dump_session(root, session_id) if isinstance(k, str) and k.startswith(prefix)}


def edit_key(root: Path, key: str, value: bytes | None, session_id: str = SID) -> None:
    """Replace (or, with None, delete) one stored value behind the store's back."""
    with diskcache.Cache(str(root / session_id)) as cache:
        if value is None:
            assert cache.delete(key)
        else:
            cache.set(key, value)


def flip_last_byte(raw: bytes) -> bytes:
    return raw[:-1] + bytes([raw[-1] ^ 0xFF])
