"""What the egress proxy's server-name check adds to one CONNECT, on loopback.

    python -m benchmarks.egress_proxy [--connections 300] [--warmup 20]

A TLS server on 127.0.0.1 (a self-signed ECDSA certificate for `localhost`) echoes one
line. Three series, interleaved connection by connection (each kind in turn first,
second and last) so that the machine's load falls on all alike; each connection is a
whole tunnel: open, CONNECT (or TCP connect), TLS handshake, one echo round trip, close.
- direct:    the client connects to the server itself;
- relayed:   through EgressProxy with its ClientHello check swapped for a pass-through
             that forwards the first bytes it reads (the proxy before the check);
- checked:   through EgressProxy as it is.
Prints the median and p90 ms of each, the median of the paired differences checked −
relayed (what the check adds per CONNECT), and the CPU µs of read_client_hello on a
real ClientHello. Loopback only; the proxy, the server and the client share one event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ssl
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import cluster.eval.environments.egress as egress
from cluster.eval.environments import ClientHello, read_client_hello

NAME = "localhost"


def _certificate(directory: Path) -> tuple[Path, Path]:
    key, cert = directory / "key.pem", directory / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            f"/CN={NAME}",
            "-addext",
            f"subjectAltName=DNS:{NAME}",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(await reader.readline())
    await writer.drain()
    writer.close()


async def _pass_through(reader: asyncio.StreamReader) -> tuple[ClientHello, bytes]:
    first = await reader.read(65536)
    return ClientHello(NAME, len(first)), first


async def _round_trip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client: ssl.SSLContext) -> None:
    await writer.start_tls(client, server_hostname=NAME)
    writer.write(b"ping\n")
    assert await reader.readline() == b"ping\n"
    writer.close()


async def _series(
    connections: int, warmup: int, client: ssl.SSLContext, port: int, proxy: egress.EgressProxy
) -> dict[str, list[float]]:
    checked_hello = egress._client_hello

    async def direct() -> None:
        await _round_trip(*await asyncio.open_connection("127.0.0.1", port), client)

    async def tunnel() -> None:
        reader, writer = await asyncio.open_unix_connection(str(proxy.socket))
        writer.write(f"CONNECT {NAME}:{port} HTTP/1.1\r\n\r\n".encode())
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
        await _round_trip(reader, writer, client)

    async def relayed() -> None:
        egress._client_hello = _pass_through
        try:
            await tunnel()
        finally:
            egress._client_hello = checked_hello

    kinds: dict[str, Callable[[], Awaitable[None]]] = {"direct": direct, "relayed": relayed, "checked": tunnel}
    samples: dict[str, list[float]] = {kind: [] for kind in kinds}
    order = list(kinds.items())
    for index in range(warmup + connections):
        order = order[1:] + order[:1]  # each kind first, second and third in turn
        for kind, connect in order:
            started = time.perf_counter()
            await connect()
            if index >= warmup:
                samples[kind].append((time.perf_counter() - started) * 1000)
    return samples


async def measure(connections: int, warmup: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = _certificate(Path(tmp))
        server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server_side.load_cert_chain(cert, key)
        client = ssl.create_default_context(cafile=cert)
        server = await asyncio.start_server(_echo, "127.0.0.1", 0, ssl=server_side)
        port = server.sockets[0].getsockname()[1]
        async with server, egress.EgressProxy([NAME], port=port) as proxy:
            samples = await _series(connections, warmup, client, port, proxy)
        assert proxy.decisions.count(f"allowed CONNECT {NAME}:{port}") == 2 * (warmup + connections), proxy.decisions[
            -3:
        ]
    return samples


def parse_microseconds(rounds: int = 20000) -> float:
    context = ssl.create_default_context()
    outgoing = ssl.MemoryBIO()
    tls = context.wrap_bio(ssl.MemoryBIO(), outgoing, server_hostname="files.pythonhosted.org")
    with contextlib.suppress(ssl.SSLWantReadError):  # it waits for the server: the hello is out
        tls.do_handshake()
    hello = outgoing.read()
    started = time.process_time()
    for _ in range(rounds):
        read_client_hello(hello)
    return (time.process_time() - started) / rounds * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--connections", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    samples = asyncio.run(measure(args.connections, args.warmup))
    print(f"{args.connections} connections each, interleaved (ms per connection: open, handshake, one echo, close):")
    for kind, values in samples.items():
        p90 = statistics.quantiles(values, n=10, method="inclusive")[-1]
        print(f"  {kind:8s} median {statistics.median(values):6.3f}  p90 {p90:6.3f}")
    added = [c - r for c, r in zip(samples["checked"], samples["relayed"], strict=True)]
    quartiles = statistics.quantiles(added, n=4, method="inclusive")
    print(
        f"  the check adds per CONNECT: median {statistics.median(added) * 1000:+.0f} µs "
        f"(paired differences, quartiles {quartiles[0] * 1000:+.0f} .. {quartiles[2] * 1000:+.0f} µs)"
    )
    print(f"  read_client_hello on a real ClientHello: {parse_microseconds():.1f} µs of CPU")


if __name__ == "__main__":
    main()
