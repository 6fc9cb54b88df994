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
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

__all__ = ["DEFAULT_HOSTS", "FORWARDER", "EgressProxy"]

DEFAULT_HOSTS = ("pypi.org", "files.pythonhosted.org")
_HEAD_LIMIT = 8192
_CONNECT_TIMEOUT_S = 30.0

# Runs inside the sandbox (python -I -S): listen on 127.0.0.1, print the port, relay
# every connection to the proxy's socket. Ends with the sandbox.
FORWARDER = '''
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
'''


class EgressProxy:
    """A CONNECT-only proxy for one build, on a unix socket in a fresh directory."""

    def __init__(self, hosts: Iterable[str] = DEFAULT_HOSTS, *, port: int = 443):
        self.hosts = frozenset(h.lower().rstrip(".") for h in hosts)
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
            shutil.rmtree(self.dir, ignore_errors=True)

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
            self.decisions.append(f"refused {method} {target}")
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
        self.decisions.append(f"allowed CONNECT {target}")
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            up_writer.close()


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
