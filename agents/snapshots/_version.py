"""One stored version: its envelope, and reading it back with every digest verified.

    v:<id>  envelope {schema, sum, body}; body = {header, chunks (index chunk keys), count}
    c:<key> up to 64 message digests, 32 bytes each; key = sha256 of the chunk
    m:<key> one message, msgpack; key = sha256 of its bytes

A version is corrupt when its envelope, a chunk or a message does not verify; one of a
schema newer than this Workingset's is refused (SnapshotTooNew), never read as corrupt.
"""

from __future__ import annotations

import hashlib

from agents.messages import Message, message_caches
from agents.session import READABLE_SCHEMAS, SCHEMA_VERSION, SessionState
from agents.snapshots._codec import CodecError, decode_message, pack, unpack
from agents.snapshots._errors import SnapshotCorrupt, SnapshotTooNew
from agents.snapshots._file import SalvagedRows, StoreReader
from agents.snapshots._index import Delta, StoredIndex, chunk_digests, last_text

__all__ = ["make_envelope", "open_envelope", "read_version", "seal"]


def make_envelope(header: dict, delta: Delta) -> bytes:
    return seal({"header": header, "chunks": delta.chunks, "count": delta.count})


def seal(body: dict) -> bytes:
    """`body` in an envelope with this Workingset's schema and a checksum (`open_envelope`)."""
    packed = pack(body)
    return pack({"schema": SCHEMA_VERSION, "sum": hashlib.sha256(packed).hexdigest(), "body": packed})


def open_envelope(raw: object, version: str) -> dict:
    if raw is None:
        raise SnapshotCorrupt(f"snapshot version {version} is missing", version=version)
    if not isinstance(raw, bytes):
        raise SnapshotCorrupt(f"snapshot version {version} cannot be decoded (not bytes)", version=version)
    try:
        envelope = unpack(raw)
        schema = envelope.get("schema")
        if isinstance(schema, int) and schema > SCHEMA_VERSION:
            raise SnapshotTooNew(
                f"snapshot version {version} has schema {schema}; this Workingset reads schemas "
                f"{READABLE_SCHEMAS[0]} to {SCHEMA_VERSION}; resume it with the newer Workingset that wrote it",
                found=schema,
            )
        if schema not in READABLE_SCHEMAS:
            raise SnapshotCorrupt(f"snapshot version {version} has no known schema ({schema!r})", version=version)
        body = envelope["body"]
        if hashlib.sha256(body).hexdigest() != envelope["sum"]:
            raise SnapshotCorrupt(f"snapshot version {version} fails its checksum", version=version)
        return unpack(body)
    except (CodecError, KeyError, TypeError, AttributeError) as exc:
        raise SnapshotCorrupt(f"snapshot version {version} cannot be decoded ({exc})", version=version) from exc


def read_version(
    reader: StoreReader | SalvagedRows, version: str, memo: dict[str, Message] | None = None
) -> tuple[SessionState, StoredIndex]:
    """One version, every digest verified; `memo` shares decoded messages across calls."""
    body = open_envelope(reader.value("v:" + version), version)
    memo = {} if memo is None else memo
    try:
        chunk_keys = list(body["chunks"])
        chunks = reader.values(["c:" + k for k in chunk_keys])
        digests: list[str] = []
        for key in chunk_keys:
            chunk = chunks.get("c:" + key)
            if not isinstance(chunk, bytes) or hashlib.sha256(chunk).hexdigest() != key:
                raise SnapshotCorrupt(
                    f"snapshot version {version}: index chunk {key[:12]} is missing or damaged", version=version
                )
            digests += chunk_digests(chunk)
        wanted = list({d: None for d in digests if d not in memo})
        found = reader.values(["m:" + d for d in wanted])
        for digest in wanted:
            data = found.get("m:" + digest)
            if not isinstance(data, bytes) or hashlib.sha256(data).hexdigest() != digest:
                raise SnapshotCorrupt(
                    f"snapshot version {version}: message {digest[:12]} is missing or damaged", version=version
                )
            message = decode_message(data)
            message_caches(message)["_encoded"] = (digest, data)  # never encoded again
            memo[digest] = message
        messages = [memo[d] for d in digests]
        state = SessionState.model_validate({**body["header"], "conversation": messages})
    except (CodecError, ValueError, KeyError, TypeError) as exc:
        if isinstance(exc, SnapshotCorrupt):
            raise
        raise SnapshotCorrupt(
            f"snapshot version {version} does not hold a valid session ({exc})", version=version
        ) from exc
    # The index holds the messages as stored: a schema-1 upgrade makes new objects of
    # the ones it types, so a save after it writes those and keeps the rest.
    return state, StoredIndex(version, messages, digests, chunk_keys, last_text(state.conversation))
