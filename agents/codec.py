"""msgpack encoding of typed conversations, with an exact round trip.

Messages go through pydantic's JSON-mode dump (so every value is a msgpack-native
type) and come back through the one message adapter, which re-validates them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgpack

from agents.errors import WorkingsetError
from agents.messages import MESSAGES_ADAPTER, Message

__all__ = ["CodecError", "decode_messages", "encode_messages", "pack", "unpack"]


class CodecError(WorkingsetError):
    """Bytes that do not decode to what was expected."""


def pack(value: Any) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


def unpack(data: bytes) -> Any:
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=False)
    except (msgpack.ExtraData, msgpack.FormatError, msgpack.StackError, ValueError) as exc:
        raise CodecError(f"undecodable msgpack data ({exc})") from exc


def encode_messages(messages: Sequence[Message]) -> bytes:
    return pack(MESSAGES_ADAPTER.dump_python(list(messages), mode="json"))


def decode_messages(data: bytes) -> list[Message]:
    raw = unpack(data)
    try:
        return MESSAGES_ADAPTER.validate_python(raw)
    except ValueError as exc:
        raise CodecError(f"data does not hold a valid conversation ({exc})") from exc
