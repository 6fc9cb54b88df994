"""msgpack encoding of typed conversations, with an exact round trip.

Messages go through pydantic's JSON-mode dump (so every value is a msgpack-native
type) and come back through the one message adapter, which re-validates them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import msgpack

from agents.errors import WorkingsetError
from agents.messages import MESSAGES_ADAPTER, Message

__all__ = [
    "CodecError",
    "decode_message",
    "decode_messages",
    "encode_message",
    "encode_messages",
    "pack",
    "unpack",
]


class CodecError(WorkingsetError):
    """Bytes that do not decode to what was expected."""


def pack(value: Any) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


def unpack(data: bytes) -> Any:
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=False)
    except (msgpack.ExtraData, msgpack.FormatError, msgpack.StackError, ValueError) as exc:
        raise CodecError(f"undecodable msgpack data ({exc})") from exc


def encode_message(message: Message) -> tuple[str, bytes]:
    """(sha256 digest, msgpack bytes) of one message, computed once per message object."""
    private = message.__pydantic_private__
    cached = private.get("_encoded")
    if cached is None:
        data = pack(message.model_dump(mode="json"))
        cached = (hashlib.sha256(data).hexdigest(), data)
        private["_encoded"] = cached
    return cached


def decode_message(data: bytes) -> Message:
    try:
        return Message.model_validate(unpack(data))
    except ValueError as exc:
        raise CodecError(f"data does not hold a valid message ({exc})") from exc


def encode_messages(messages: Sequence[Message]) -> bytes:
    return pack(MESSAGES_ADAPTER.dump_python(list(messages), mode="json"))


def decode_messages(data: bytes) -> list[Message]:
    raw = unpack(data)
    try:
        return MESSAGES_ADAPTER.validate_python(raw)
    except ValueError as exc:
        raise CodecError(f"data does not hold a valid conversation ({exc})") from exc
