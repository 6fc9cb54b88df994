"""The server name a TLS client asks for, read from the first bytes it sends.

The egress proxy (egress.py) lets a build CONNECT to an allow-listed host; without a
look at what follows, the tunnel could carry TLS for another name to the same address
(a CDN serves many names from one IP) or no TLS at all. So it reads the client's
ClientHello — the one message of the handshake that travels in the clear — and relays
only when its server name (SNI, RFC 6066) is the host it allowed.

`read_client_hello(stream)` takes the bytes received so far and answers one of:

    Incomplete(need)            at least `need` more bytes before it can say anything
    ClientHello(name, length)   the hello is stream[:length]; it asks for `name`
    Refused(reason)             not a ClientHello this proxy can vouch for

It is a pure function of its input that never raises: every length is checked against
what is there before it is used, and any input that does not parse is a Refused with
the reason. Refused: anything but TLS handshake records, a first message other than a
ClientHello, a hello over MAX_HELLO_BYTES or spread over more than MAX_RECORDS records,
a zero-length record, lengths that disagree, a repeated extension, a server_name
extension without exactly one host_name, a name that is not ASCII, and a hello with an
encrypted inner hello (ECH, whose real server name the proxy cannot see). The caller
reads exactly `need` more bytes between calls, so bytes after the hello stay unread.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MAX_HELLO_BYTES", "MAX_RECORDS", "ClientHello", "Incomplete", "Refused", "read_client_hello"]

# Real hellos are 200 bytes to ~2 KiB (post-quantum key shares included), in one record.
MAX_HELLO_BYTES = 16384
MAX_RECORDS = 64
_RECORD_HEADER = 5
_MAX_RECORD = 2**14  # TLSPlaintext.length (RFC 8446 §5.1)
_HANDSHAKE, _CLIENT_HELLO = 22, 1
_SERVER_NAME, _ENCRYPTED_CLIENT_HELLO = 0x0000, 0xFE0D
_HOST_NAME = 0
_MAX_NAME = 255


@dataclass(frozen=True)
class Incomplete:
    need: int


@dataclass(frozen=True)
class ClientHello:
    server_name: str
    length: int


@dataclass(frozen=True)
class Refused:
    reason: str


class _Malformed(Exception):
    """Internal: a length or value that does not fit; becomes a Refused."""


class _Cursor:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, count: int) -> bytes:
        if count > len(self.data) - self.pos:
            raise _Malformed("a length runs past the end of its field")
        self.pos += count
        return self.data[self.pos - count : self.pos]

    def number(self, size: int) -> int:
        return int.from_bytes(self.take(size), "big")

    def vector(self, size: int) -> bytes:
        """A field with a `size`-byte length prefix."""
        return self.take(self.number(size))

    def done(self) -> bool:
        return self.pos == len(self.data)


def read_client_hello(stream: bytes) -> Incomplete | ClientHello | Refused:
    try:
        return _read(bytes(stream))
    except _Malformed as exc:
        return Refused(f"malformed ClientHello: {exc}")


def _read(stream: bytes) -> Incomplete | ClientHello | Refused:
    handshake, pos, records = b"", 0, 0
    while True:
        header = stream[pos : pos + _RECORD_HEADER]
        if header[:1] and header[0] != _HANDSHAKE:
            return Refused(
                "not TLS: the first bytes are not a handshake record"
                if records == 0
                else "a record that is not part of the handshake inside the ClientHello"
            )
        if header[1:2] and header[1] != 3:
            return Refused("not TLS: the record's version is not 3.x")
        if len(header) < _RECORD_HEADER:
            return Incomplete(_RECORD_HEADER - len(header))
        if records == MAX_RECORDS:
            return Refused(f"the ClientHello spans more than {MAX_RECORDS} records")
        length = int.from_bytes(header[3:5], "big")
        if not 0 < length <= _MAX_RECORD:
            return Refused(f"a record of {length} bytes (TLS allows 1 to {_MAX_RECORD})")
        end = pos + _RECORD_HEADER + length
        handshake += stream[pos + _RECORD_HEADER : end]
        refused = _header_refusal(handshake)  # before waiting for the rest of a record
        if refused is not None:
            return refused
        if len(stream) < end:
            return Incomplete(end - len(stream))
        pos, records = end, records + 1
        verdict = _hello_in(handshake, pos)
        if verdict is not None:
            return verdict


def _header_refusal(handshake: bytes) -> Refused | None:
    """What the handshake message's type and length alone refuse."""
    if handshake[:1] and handshake[0] != _CLIENT_HELLO:
        return Refused(f"the first handshake message is of type {handshake[0]}, not a ClientHello")
    if len(handshake) >= 4 and int.from_bytes(handshake[1:4], "big") > MAX_HELLO_BYTES:
        return Refused(f"a ClientHello of {int.from_bytes(handshake[1:4], 'big')} bytes (at most {MAX_HELLO_BYTES})")
    return None


def _hello_in(handshake: bytes, consumed: int) -> ClientHello | Refused | None:
    """The verdict once the handshake bytes hold the whole hello; None while they do not."""
    if len(handshake) < 4:
        return None
    size = int.from_bytes(handshake[1:4], "big")
    if len(handshake) < 4 + size:
        return None
    if len(handshake) > 4 + size:
        return Refused("more handshake data after the ClientHello")
    return _server_name(handshake[4:], consumed)


def _server_name(body: bytes, consumed: int) -> ClientHello | Refused:
    hello = _Cursor(body)
    if hello.number(2) >> 8 != 3:
        return Refused("not TLS: the ClientHello's version is not 3.x")
    hello.take(32)  # random
    if len(hello.vector(1)) > 32:
        raise _Malformed("a session id over 32 bytes")
    suites = hello.vector(2)
    if not suites or len(suites) % 2:
        raise _Malformed("no cipher suites, or an odd number of bytes of them")
    if not hello.vector(1):
        raise _Malformed("no compression methods")
    if hello.done():
        return Refused("no server name (SNI): the ClientHello has no extensions")
    extensions = _Cursor(hello.vector(2))
    if not hello.done():
        raise _Malformed("bytes after the extensions")
    seen: set[int] = set()
    name = None
    while not extensions.done():
        kind, data = extensions.number(2), extensions.vector(2)
        if kind in seen:
            raise _Malformed(f"extension {kind} appears twice")
        seen.add(kind)
        if kind == _SERVER_NAME:
            name = _host_name(data)
    if _ENCRYPTED_CLIENT_HELLO in seen:
        return Refused("an encrypted ClientHello (ECH): the server name inside cannot be checked")
    if name is None:
        return Refused("no server name (SNI) in the ClientHello")
    return ClientHello(name, consumed)


def _host_name(data: bytes) -> str:
    """The one host_name of a server_name extension (RFC 6066 §3), as OpenSSL reads it."""
    extension = _Cursor(data)
    names = _Cursor(extension.vector(2))
    if not extension.done():
        raise _Malformed("bytes after the server name list")
    if names.number(1) != _HOST_NAME:
        raise _Malformed("a server name that is not a host_name")
    raw = names.vector(2)
    if not names.done():
        raise _Malformed("more than one server name")
    if not 0 < len(raw) <= _MAX_NAME:
        raise _Malformed(f"a server name of {len(raw)} bytes")
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError:
        raise _Malformed("a server name that is not ASCII") from None
