"""Addresses where no Ray GCS answers, each a real listener on 127.0.0.1 (ephemeral port),
for the tests of `--address`: what a user points Workingset at by mistake.

    with not_ray("http") as address:    # "127.0.0.1:PORT"
        ...

    refused   a port bound but not listening: the connection is refused
    silent    accepts the connection and never says a word
    banner    another protocol's greeting (an SSH server's)
    http      a web server (HTTP/1)
    grpc      a gRPC server that serves no Ray service (a raylet's port looks so)
"""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
from collections.abc import Iterator

__all__ = ["NOT_RAY", "not_ray"]

NOT_RAY = ("refused", "silent", "banner", "http", "grpc")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        return None


@contextlib.contextmanager
def _accepting(greeting: bytes | None) -> Iterator[str]:
    """A TCP listener that sends `greeting` to each connection (None: nothing)."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)  # kept open: a silent peer, not a closed one
            if greeting is not None:
                conn.sendall(greeting)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        server.close()
        for conn in held:
            conn.close()
        thread.join(10)


@contextlib.contextmanager
def _refusing() -> Iterator[str]:
    with socket.socket() as bound:  # bound, so no other process takes the port; not listening, so refused
        bound.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{bound.getsockname()[1]}"


@contextlib.contextmanager
def _web() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def _grpc() -> Iterator[str]:
    from concurrent import futures

    import grpc

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(grace=None)


def not_ray(kind: str) -> contextlib.AbstractContextManager[str]:
    """A listener of `kind` (see the module docstring); its address while the block runs."""
    makers = {
        "refused": _refusing,
        "silent": lambda: _accepting(None),
        "banner": lambda: _accepting(b"SSH-2.0-OpenSSH_9.6\r\n"),
        "http": _web,
        "grpc": _grpc,
    }
    return makers[kind]()
