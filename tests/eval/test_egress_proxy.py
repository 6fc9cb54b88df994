"""The egress proxy of an environment build, on its real unix socket: CONNECT only to the
allow-listed names and port, then TLS only for the name it allowed. The registry is a
TLS server on 127.0.0.1 with a self-signed certificate for `localhost` (the allow-listed
name, which resolves to it) and for `evil.example` (a second name the same address
serves, as a CDN does); it notes the first bytes and the server name of every connection."""

from __future__ import annotations

import asyncio
import queue
import socket
import ssl
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cluster.eval.environments import EgressProxy
from cluster.terminal._cli import main
from tests.support.tls_support import MemoryTLSClient, as_records, self_signed_certificate

NAME = "localhost"
_WAIT_S = 30.0  # only a bound on a wait for an event, never a deadline the test depends on


@dataclass
class Arrival:
    first_bytes: bytes  # b"": the connection closed before it carried anything
    server_name: str | None = None
    line: bytes = b""


@dataclass
class Registry:
    port: int
    ca: Path
    arrivals: queue.Queue[Arrival] = field(default_factory=queue.Queue)

    async def next_arrival(self) -> Arrival:
        return await asyncio.to_thread(self.arrivals.get, timeout=_WAIT_S)


def _serve(listener: socket.socket, context: ssl.SSLContext, registry: Registry) -> None:
    """Each connection: peek at its first bytes, then TLS, echo one line."""
    names: list[str | None] = []
    context.sni_callback = lambda _sock, name, _ctx: names.append(name)
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            arrival = Arrival(conn.recv(5, socket.MSG_PEEK))
            if arrival.first_bytes:
                names.clear()
                try:
                    with context.wrap_socket(conn, server_side=True) as tls:
                        arrival.line = tls.recv(64)
                        tls.sendall(b"echo " + arrival.line)
                except (ssl.SSLError, OSError):
                    pass
                arrival.server_name = names[0] if names else None
            registry.arrivals.put(arrival)


@pytest.fixture
def registry(tmp_path: Path):
    cert, key = self_signed_certificate(tmp_path, NAME, "evil.example")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    found = Registry(listener.getsockname()[1], cert)
    thread = threading.Thread(target=_serve, args=(listener, context, found), daemon=True)
    thread.start()
    yield found
    listener.shutdown(socket.SHUT_RDWR)
    listener.close()
    thread.join()


@pytest.fixture
async def proxy(registry: Registry) -> AsyncIterator[EgressProxy]:
    async with EgressProxy([NAME], port=registry.port) as running:
        yield running


async def _connect(proxy: EgressProxy, target: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    reader, writer = await asyncio.open_unix_connection(str(proxy.socket))
    writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    return reader, writer, await reader.readuntil(b"\r\n\r\n")


async def _tls_through(
    proxy: EgressProxy, registry: Registry, server_name: str | None, *, cut=lambda hello: [hello]
) -> bytes:
    """CONNECT to the registry, then a real TLS handshake for `server_name` whose hello is
    written in the pieces `cut` makes; what the registry echoes, or b"" if the tunnel closes."""
    reader, writer, head = await _connect(proxy, f"{NAME}:{registry.port}")
    assert head.startswith(b"HTTP/1.1 200"), head
    context = ssl.create_default_context(cafile=registry.ca)
    context.check_hostname = server_name is not None
    client = MemoryTLSClient(context, server_name)
    for piece in cut(client.first_flight()):
        writer.write(piece)
        await writer.drain()
        await asyncio.sleep(0)  # let the proxy read what is there so far
    try:
        while not client.done:
            data = await reader.read(65536)
            if not data:
                return b""
            writer.write(client.feed(data))
        writer.write(client.seal(b"ping\n"))
        reply = b""
        while b"\n" not in reply and (data := await reader.read(65536)):
            reply += client.open(data)
        return reply
    finally:
        writer.close()


async def test_a_hello_for_the_connect_host_is_relayed_to_it(proxy, registry):
    assert await _tls_through(proxy, registry, NAME) == b"echo ping\n"
    assert (await registry.next_arrival()).server_name == NAME
    assert proxy.decisions == [f"allowed CONNECT {NAME}:{registry.port}"]


async def test_a_hello_for_another_name_at_the_same_address_is_refused_and_logged(proxy, registry):
    """The registry's certificate is good for evil.example too: only the check stops it."""
    assert await _tls_through(proxy, registry, "evil.example") == b""
    assert (await registry.next_arrival()).first_bytes == b""  # not a byte reached it
    assert proxy.decisions == [
        f"refused CONNECT {NAME}:{registry.port}: TLS server name 'evil.example' is not the CONNECT host"
    ]


async def test_a_hello_without_a_server_name_is_refused(proxy, registry):
    assert await _tls_through(proxy, registry, None) == b""
    assert (await registry.next_arrival()).first_bytes == b""
    assert proxy.decisions == [f"refused CONNECT {NAME}:{registry.port}: no server name (SNI) in the ClientHello"]


async def test_bytes_that_are_not_tls_after_connect_are_refused(proxy, registry):
    reader, writer, head = await _connect(proxy, f"{NAME}:{registry.port}")
    writer.write(b"GET /admin HTTP/1.1\r\nHost: evil.example\r\n\r\n")
    await writer.drain()
    assert head.startswith(b"HTTP/1.1 200") and await reader.read() == b""
    writer.close()
    assert (await registry.next_arrival()).first_bytes == b""
    assert proxy.decisions == [
        f"refused CONNECT {NAME}:{registry.port}: not TLS: the first bytes are not a handshake record"
    ]


async def test_a_hello_written_one_byte_at_a_time_is_relayed(proxy, registry):
    reply = await _tls_through(proxy, registry, NAME, cut=lambda hello: [hello[i : i + 1] for i in range(len(hello))])
    assert reply == b"echo ping\n"


async def test_a_hello_split_over_several_records_is_relayed(proxy, registry):
    reply = await _tls_through(proxy, registry, NAME, cut=lambda hello: [as_records(hello, 7, 100)])
    assert reply == b"echo ping\n"
    assert (await registry.next_arrival()).server_name == NAME


async def test_the_egress_proxy_tunnels_only_to_allow_listed_hosts_and_port(proxy, registry):
    port = registry.port
    other_port = (await _connect(proxy, f"{NAME}:{port + 1}"))[2]
    other_host = (await _connect(proxy, f"127.0.0.1:{port}"))[2]
    reader, writer = await asyncio.open_unix_connection(str(proxy.socket))
    writer.write(f"GET http://{NAME}:{port}/ HTTP/1.1\r\n\r\n".encode())
    plain = await reader.readuntil(b"\r\n\r\n")
    assert all(r.startswith(b"HTTP/1.1 403") for r in (other_port, other_host, plain))
    assert proxy.decisions == [
        f"refused CONNECT {NAME}:{port + 1}",
        f"refused CONNECT 127.0.0.1:{port}",
        f"refused GET http://{NAME}:{port}/",
    ]


async def test_the_proxys_socket_directory_goes_with_it(registry):
    async with EgressProxy([NAME], port=registry.port) as proxy:
        assert proxy.socket.is_socket()
    assert not proxy.dir.exists()


def test_an_ip_address_as_setup_host_is_refused_naming_the_fix(tmp_path, capsys):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("")
    with pytest.raises(SystemExit) as exited:
        main(["eval", str(tasks), "--out", str(tmp_path / "out"), "--setup-host", "10.0.0.7"])
    error = capsys.readouterr().err
    assert exited.value.code == 2 and "'10.0.0.7' is an IP address" in error and "host name" in error
