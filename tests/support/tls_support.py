"""TLS for the tests: a self-signed certificate, a real client's ClientHello (OpenSSL's,
through the ssl module's memory BIOs), hellos built field by field, and a handshake
message cut into records of chosen sizes."""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path


def self_signed_certificate(directory: Path, *names: str) -> tuple[Path, Path]:
    """A certificate for `names` (host names or IP addresses) that signed itself, and its
    key: (cert.pem, key.pem) in `directory`. A client trusts it by loading cert.pem as its CA."""
    key, cert = directory / "key.pem", directory / "cert.pem"
    alt = ",".join(f"IP:{n}" if n.replace(".", "").isdigit() or ":" in n else f"DNS:{n}" for n in names)
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            f"/CN={names[0]}",
            "-addext",
            f"subjectAltName={alt}",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


class MemoryTLSClient:
    """An ssl client whose bytes go where the test puts them: `first_flight()` is its
    ClientHello records, `feed(data)` gives it the server's bytes during the handshake and
    returns its answer; then `seal(text)` is a record to send, `open(data)` the text in one."""

    def __init__(self, context: ssl.SSLContext, server_name: str | None) -> None:
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_hostname=server_name)
        self.done = False

    def first_flight(self) -> bytes:
        return self.feed(b"")

    def feed(self, data: bytes) -> bytes:
        self.incoming.write(data)
        if not self.done:
            try:
                self.tls.do_handshake()
                self.done = True
            except ssl.SSLWantReadError:
                pass
        return self.outgoing.read()

    def seal(self, text: bytes) -> bytes:
        self.tls.write(text)
        return self.outgoing.read()

    def open(self, data: bytes) -> bytes:
        self.incoming.write(data)
        try:
            return self.tls.read()
        except ssl.SSLWantReadError:  # no application data in it (a session ticket)
            return b""


def real_client_hello(server_name: str | None = "pypi.org") -> bytes:
    """The records of the ClientHello the ssl module (OpenSSL) sends to `server_name`."""
    context = ssl.create_default_context()
    context.check_hostname = server_name is not None
    return MemoryTLSClient(context, server_name).first_flight()


def as_records(stream: bytes, *sizes: int) -> bytes:
    """The handshake message of `stream` (one record) again, in records of `sizes` bytes
    (the rest in one more record)."""
    message, records, at = stream[5 : 5 + int.from_bytes(stream[3:5], "big")], b"", 0
    for size in (*sizes, len(message)):
        part, at = message[at : at + size], at + size
        if part:
            records += b"\x16\x03\x01" + len(part).to_bytes(2, "big") + part
    return records


def _vector(data: bytes, size: int) -> bytes:
    return len(data).to_bytes(size, "big") + data


def server_name_extension(*names: bytes, name_type: int = 0) -> tuple[int, bytes]:
    return 0, _vector(b"".join(bytes([name_type]) + _vector(n, 2) for n in names), 2)


def built_client_hello(extensions: list[tuple[int, bytes]] | None, *, version: bytes = b"\x03\x03") -> bytes:
    """A ClientHello record with these extensions (None: no extensions field at all)."""
    body = version + bytes(32) + _vector(b"", 1) + _vector(b"\x13\x01", 2) + _vector(b"\x00", 1)
    if extensions is not None:
        body += _vector(b"".join(kind.to_bytes(2, "big") + _vector(data, 2) for kind, data in extensions), 2)
    message = b"\x01" + _vector(body, 3)
    return b"\x16\x03\x01" + _vector(message, 2)
