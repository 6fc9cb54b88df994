"""The only way out of a sandbox that builds an environment with the network on.

The build runs in the same sandbox as every other command, in its own empty network
namespace (`--unshare-net`: only a loopback device). What reaches out is this proxy,
run by the harness on the host: it listens on a unix socket in a directory bound
read-only into the sandbox, and answers only `CONNECT host:443` for the hosts on its
allow-list (the package registries), opening that connection itself. Inside, a small
forwarder (FORWARDER, run by the environment's base interpreter) listens on
127.0.0.1 and relays to the socket; the build gets HTTPS_PROXY pointing there.

What the build can reach: TLS to the allow-listed names, port 443, nothing else — not
the host's 127.0.0.1 (the Ray GCS and object store, model servers, the harness's own
services), not the node's other addresses or the LAN (a Ray head listening on the node
IP would run any job it is given), no DNS of its own. A plain HTTP request, another
port or another name gets 403 and is logged with the decision (`decisions`).

After the 200, the tunnel carries nothing until the client's ClientHello is complete
(client_hello.py): its server name (SNI) must be the name the CONNECT asked for (case
and a trailing dot aside), or the connection is closed, the decision logged, and not a
byte reaches the registry. So the tunnel carries TLS for that name only — not another
name served from the same address (a CDN's), not plain bytes, not a hello without a
name or with an encrypted inner one (ECH). An allow-list entry must therefore be a
host name, never an IP address: TLS sends no IP as a server name (`host_name`).
What the TLS session carries after the hello is encrypted and not looked at.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import tempfile
from collections.abc import Iterable
from pathlib import Path

from cluster.eval.environments.client_hello import (
    ClientHello,
    Incomplete,
    Refused,
    read_client_hello,
)
from tools.files import remove_tree

__all__ = ["DEFAULT_HOSTS", "FORWARDER", "EgressProxy", "registry_host"]

DEFAULT_HOSTS = ("pypi.org", "files.pythonhosted.org")
_HEAD_LIMIT = 8192
_CONNECT_TIMEOUT_S = 30.0
_HELLO_TIMEOUT_S = 30.0

# Runs inside the sandbox (python -I -S): listen on 127.0.0.1, print the port, relay
# every connection to the proxy's socket. Ends with the sandbox.
FORWARDER = """
import asyncio, os, sys

async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.write_eof()
    except (OSError, RuntimeError):
        pass

async def relay(reader, writer):
    try:
        up_reader, up_writer = await asyncio.open_unix_connection(sys.argv[1])
    except OSError:
        writer.close()
        return
    try:
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
    finally:
        up_writer.close()
        writer.close()

async def main():
    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    os.close(1)
    async with server:
        await server.serve_forever()

asyncio.run(main())
"""


def registry_host(text: str) -> str:
    """An allow-list entry: a host name, since only a name can be checked against the
    TLS server name; raises ValueError naming the fix otherwise."""
    name = text.strip().lower().rstrip(".")
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        pass
    else:
        raise ValueError(
            f"{text!r} is an IP address; TLS names no IP address as its server, so the proxy could "
            "never check it: give the registry's host name"
        )
    if not name or any(c in name for c in " /:@"):
        raise ValueError(f"{text!r} is not a host name (e.g. pypi.example.org)")
    return name


def _same_host(a: str, b: str) -> bool:
    return a.lower().rstrip(".") == b.lower().rstrip(".")


def _shown(text: str, limit: int = 120) -> str:
    """Text the client chose, safe for the build's log (no control characters)."""
    return ascii(text[:limit])[1:-1] + ("..." if len(text) > limit else "")


class EgressProxy:
    """A CONNECT-only proxy for one build, on a unix socket in a fresh directory."""

    def __init__(self, hosts: Iterable[str] = DEFAULT_HOSTS, *, port: int = 443):
        self.hosts = frozenset(registry_host(h) for h in hosts)
        self.port = port
        self.decisions: list[str] = []
        self.dir: Path | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task] = set()

    @property
    def socket(self) -> Path:
        assert self.dir is not None
        return self.dir / "proxy.sock"

    @property
    def forwarder(self) -> Path:
        assert self.dir is not None
        return self.dir / "forward.py"

    async def __aenter__(self) -> EgressProxy:
        # A short path (a unix socket's is limited to 108 bytes), searchable by the
        # sandbox's uid; the directory is bound read-only, the socket stays connectable.
        self.dir = Path(tempfile.mkdtemp(prefix="workingset-egress-"))
        self.dir.chmod(0o755)
        self.forwarder.write_text(FORWARDER, encoding="utf-8")
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.socket))
        self.socket.chmod(0o777)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        if self.dir is not None:
            remove_tree(self.dir, ignore_errors=True)

    def allows(self, host: str, port: int) -> bool:
        return port == self.port and host.lower().rstrip(".") in self.hosts

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._tunnel(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        except asyncio.CancelledError:
            pass  # __aexit__ ends open tunnels; asyncio 3.11's connection callback cannot take a cancelled task
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _tunnel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _CONNECT_TIMEOUT_S)
        if len(head) > _HEAD_LIMIT:
            return
        method, target, *_ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ") + ["", ""]
        host, _, port = target.rpartition(":")
        host = host.strip("[]")
        if method != "CONNECT" or not port.isdigit() or not self.allows(host, int(port)):
            self.decisions.append(f"refused {_shown(method)} {_shown(target)}")
            writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), _CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            self.decisions.append(f"failed CONNECT {target}: {exc}")
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
            return
        try:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            hello, raw = await _client_hello(reader)
            if isinstance(hello, ClientHello) and not _same_host(hello.server_name, host):
                hello = Refused(f"TLS server name {_shown(hello.server_name)!r} is not the CONNECT host")
            if isinstance(hello, Refused):
                self.decisions.append(f"refused CONNECT {target}: {hello.reason}")
                return
            self.decisions.append(f"allowed CONNECT {target}")
            up_writer.write(raw)
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            up_writer.close()


async def _client_hello(reader: asyncio.StreamReader) -> tuple[ClientHello | Refused, bytes]:
    """The client's ClientHello and its bytes, read exactly (what follows stays unread)."""
    stream = b""
    try:
        async with asyncio.timeout(_HELLO_TIMEOUT_S):
            while isinstance(verdict := read_client_hello(stream), Incomplete):
                stream += await reader.readexactly(verdict.need)
    except TimeoutError:
        return Refused(f"no complete ClientHello within {_HELLO_TIMEOUT_S:g} s"), stream
    except asyncio.IncompleteReadError:
        return Refused("the client closed before its ClientHello was complete"), stream
    return verdict, stream


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            writer.write_eof()
