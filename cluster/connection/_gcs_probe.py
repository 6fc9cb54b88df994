"""Is a Ray GCS listening at HOST:PORT? Asked the way Ray's own client asks, in seconds.

Ray's client (`ray.init(address=...)`, its GcsClient) opens a gRPC channel to the
address and asks the GCS for the cluster's id (`NodeInfoGcsService.GetClusterId`);
against anything that is not a GCS it keeps retrying for minutes. The probe asks the
same, with a deadline of seconds, in two steps that tell the wrong answers apart:

  1. The HTTP/2 greeting (gRPC runs on HTTP/2): a gRPC server answers a client's
     connection preface with a SETTINGS frame. A refused connection, a web server (an
     HTTP/1 status line or a page), another protocol's banner, a closed connection and
     silence are each named from what came back.
  2. GetClusterId over gRPC, with no token: a GCS answers it, or answers UNAUTHENTICATED
     when its cluster uses token authentication (whether this process's token is the
     right one is then Ray's own client's to say: cluster.connection._runtime); any other gRPC server
     (a raylet's or an object manager's port) answers UNIMPLEMENTED.

With TLS (`RAY_USE_TLS`) the plain-text greeting means nothing, so only the connection
is checked.

    probe_gcs(host, port) -> GcsAnswer("gcs" | "token" | "other", what)
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Literal

from agents.visible import reveal

__all__ = ["PROBE_TIMEOUT_S", "GcsAnswer", "probe_gcs"]

PROBE_TIMEOUT_S = 5.0

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_EMPTY_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # length 0, type SETTINGS, no flags, stream 0
_SETTINGS_TYPE = 0x04
_GET_CLUSTER_ID = "/ray.rpc.NodeInfoGcsService/GetClusterId"


@dataclass(frozen=True)
class GcsAnswer:
    """What listens there. `kind`: "gcs" (a GCS answered), "token" (a GCS that wants a
    token), "other" (no GCS: `what` says what was found instead, as a clause)."""

    kind: Literal["gcs", "token", "other"]
    what: str = ""
    occupied: bool = False  # something else listens there: the port is the wrong one
    web: bool = False  # that something is a web server (a dashboard's port?)


def _tls() -> bool:
    return os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true")


def _target(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _greeting(host: str, port: int, timeout_s: float) -> GcsAnswer | None:
    """Step 1; None when an HTTP/2 server answered."""
    try:
        conn = socket.create_connection((host, port), timeout=timeout_s)
    except socket.gaierror as exc:
        return GcsAnswer("other", f"the host name {host!r} does not resolve ({exc.strerror})")
    except ConnectionRefusedError:
        return GcsAnswer("other", "nothing listens there (connection refused)")
    except TimeoutError:
        return GcsAnswer("other", f"no connection could be opened within {timeout_s:g} s")
    except OSError as exc:
        return GcsAnswer("other", f"no connection could be opened ({exc.strerror or exc})")
    with conn:
        if _tls():
            return None
        try:
            conn.sendall(_PREFACE + _EMPTY_SETTINGS)
            first = conn.recv(64)
        except TimeoutError:
            return GcsAnswer(
                "other",
                f"something accepted the connection but did not answer Ray's greeting within {timeout_s:g} s",
                occupied=True,
            )
        except OSError as exc:
            return GcsAnswer("other", f"the connection failed ({exc.strerror or exc})")
    if not first:
        return GcsAnswer("other", "something accepted the connection and closed it without answering", occupied=True)
    if len(first) >= 9 and first[3] == _SETTINGS_TYPE:
        return None
    if first.startswith(b"HTTP/") or first.lstrip()[:1] == b"<":
        return GcsAnswer("other", "a web server (HTTP/1) answers there", occupied=True, web=True)
    shown = reveal(first[:40].decode("latin-1"), one_line=True)
    return GcsAnswer("other", f"a service that is not Ray answers there (it said '{shown}')", occupied=True)


def _cluster_id(host: str, port: int, timeout_s: float) -> GcsAnswer:
    """Step 2: the GCS's own question."""
    import grpc  # only when an address is checked: it costs a tenth of a second to import

    options = [("grpc.enable_http_proxy", 0)]  # the probe goes where Ray's client goes, never through a proxy
    with grpc.insecure_channel(f"{_target(host)}:{port}", options=options) as channel:
        ask = channel.unary_unary(_GET_CLUSTER_ID)
        try:
            ask(b"", timeout=timeout_s)  # an empty GetClusterIdRequest
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else None
            if code == grpc.StatusCode.UNAUTHENTICATED:
                return GcsAnswer("token")
            if code == grpc.StatusCode.UNIMPLEMENTED:
                return GcsAnswer(
                    "other",
                    "a gRPC server that is not a GCS answers there (another port of a Ray node, such as a raylet's?)",
                    occupied=True,
                )
            if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                return GcsAnswer(
                    "other",
                    f"an HTTP/2 server answers there but not Ray's request within {timeout_s:g} s",
                    occupied=True,
                )
            details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
            return GcsAnswer(
                "other",
                f"the server there refused Ray's request ({code.name if code else 'error'}: "
                f"{reveal(str(details)[:160], one_line=True)})",
                occupied=True,
            )
    return GcsAnswer("gcs")


def probe_gcs(host: str, port: int, timeout_s: float = PROBE_TIMEOUT_S) -> GcsAnswer:
    """Whether a Ray GCS answers at host:port (each step bounded by `timeout_s`)."""
    refused = _greeting(host, port, timeout_s)
    if refused is not None:
        return refused
    if _tls():
        return GcsAnswer("gcs")  # the connection opened; the rest is TLS, Ray's to check
    return _cluster_id(host, port, timeout_s)
