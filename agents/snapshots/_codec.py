"""msgpack encoding of typed conversations, with an exact round trip.

Messages go through pydantic's JSON-mode dump (so every value is a msgpack-native
type) and come back through the one message adapter, which re-validates them.
Encoding is total over what a JSON dump can hold: an integer outside msgpack's 64-bit
range (a model may write one into a tool input) travels as an extension holding its
decimal digits, and a string UTF-8 cannot encode (one holding a surrogate: a workspace
path that is not UTF-8) is stored with its surrogates as their own code points and read
back as the same string, so no value makes a session unsavable.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import msgpack

from agents.errors import WorkingsetError
from agents.messages import MESSAGES_ADAPTER, Message, message_caches

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


_BIG_INT = 1  # extension code: an integer beyond 64 bits, as ASCII decimal digits


def _beyond_msgpack(value: Any) -> msgpack.ExtType:
    if isinstance(value, int):
        return msgpack.ExtType(_BIG_INT, str(value).encode("ascii"))
    raise TypeError(f"cannot encode a {type(value).__name__} value")


def _extension(code: int, data: bytes) -> Any:
    if code == _BIG_INT:
        try:
            return int(data.decode("ascii"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ValueError(f"malformed big-integer extension {data[:40]!r}") from exc
    raise ValueError(f"unknown msgpack extension type {code}")


def pack(value: Any) -> bytes:
    try:
        return msgpack.packb(value, use_bin_type=True, default=_beyond_msgpack)
    except UnicodeEncodeError:
        # A string holding a surrogate (a path that is not UTF-8, in surrogateescape form):
        # stored as its code points, and read back as the same string by `unpack`. Only
        # then, since the error handler makes every string's packing slower.
        return _pack_surrogates(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise CodecError(f"value cannot be encoded ({exc})") from exc


def _pack_surrogates(value: Any) -> bytes:
    try:
        return msgpack.packb(value, use_bin_type=True, default=_beyond_msgpack, unicode_errors="surrogatepass")
    except (TypeError, ValueError, OverflowError) as exc:
        raise CodecError(f"value cannot be encoded ({exc})") from exc


def unpack(data: bytes) -> Any:
    try:
        return msgpack.unpackb(
            data, raw=False, strict_map_key=False, ext_hook=_extension, unicode_errors="surrogatepass"
        )
    except (msgpack.ExtraData, msgpack.FormatError, msgpack.StackError, ValueError, TypeError) as exc:
        raise CodecError(f"undecodable msgpack data ({exc})") from exc


def encode_message(message: Message) -> tuple[str, bytes]:
    """(sha256 digest, msgpack bytes) of one message, computed once per message object."""
    private = message_caches(message)
    cached = private.get("_encoded")
    if cached is None:
        try:
            dumped = message.model_dump(mode="json")
        except ValueError as exc:  # e.g. a tool input nested deeper than pydantic serializes
            raise CodecError(f"message cannot be encoded ({exc})") from exc
        data = pack(dumped)
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
