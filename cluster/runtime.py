"""Connecting to Ray: an embedded local cluster by default, or an existing one.

    connect()                      start (or reuse) an embedded cluster sized for this machine
    connect(address="auto")        join the cluster running on this machine (`ray start`)
    connect(address="host:6379")   join the cluster whose head is there (also RAY_ADDRESS)

`ray://` (Ray Client) is refused with one line: sessions stream their events from
actors and tasks hold placement groups for their whole life, which a client
connection does not carry reliably; the driver belongs on a node of the cluster
(`ray job submit` puts it there). A cluster with token authentication is detected
before joining, so a missing or wrong token is named as such (not as a bad address,
and without Ray's twenty seconds of retries). The dashboard stays off unless asked
for. Any failure to start or reach Ray ends in one ClusterError that names the
address and the fix.

Ray's own lines stay off the progress display: the C++ core's warnings are held below
errors (RAY_BACKEND_LOG_LEVEL), the banner that setting prints while Ray starts is dropped
(what else Ray writes on stderr while it starts is passed on afterwards, through
sys.stderr, so above a progress display), and Ray's notice that the embedded cluster
uses token authentication (its default for a cluster it starts) is not repeated on
every run.

The embedded cluster keeps idle workers for minutes, not Ray's one second: a batch's
tool calls come in bursts a model call apart, and a worker killed between them costs
a Python start and the harness's imports (seconds of CPU) at the next burst. On a
cluster of your own, set `RAY_idle_worker_killing_time_threshold_ms` when starting it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import ray

from agents.errors import WorkingsetError

__all__ = ["ClusterError", "RuntimeInfo", "connect", "current_node_id", "node_cpus"]

IDLE_WORKER_KEEP_MS = 300_000


class ClusterError(WorkingsetError):
    """Ray could not be started or reached."""


@dataclass(frozen=True)
class RuntimeInfo:
    address: str
    embedded: bool
    nodes: int
    cpus: float


def current_node_id() -> str:
    return ray.get_runtime_context().get_node_id()


def node_cpus(node_id: str) -> float:
    """The CPUs a node of the cluster declares (1 when it is not found)."""
    node: dict = next((n for n in ray.nodes() if n["NodeID"] == node_id), {})
    return node.get("Resources", {}).get("CPU", 1.0)


_CLIENT_REFUSED = (
    "ray:// addresses (Ray Client) are not supported: the batch streams events from its actors and holds "
    "placement groups for each task, which Ray Client does not carry reliably. Run the driver on a node of the "
    "cluster with --address auto (or HEAD_HOST:6379), or submit it there: "
    "ray job submit --address http://HEAD_HOST:8265 --working-dir . -- workingset eval ..."
)


def _host_port(address: str) -> tuple[str, int] | None:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None  # "auto", "local" and the like: ray.init resolves them itself
    return host.strip("[]"), int(port)


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast when nothing listens at host:port: ray.init would retry for many minutes."""
    where = _host_port(address)
    if where is not None:
        with socket.create_connection(where, timeout=timeout_s):
            pass


_LEVEL_BANNER = "Set ray log level from environment variable"


@contextlib.contextmanager
def _held_stderr():
    """Ray's start-up writes on fd 2, held until it is done, then passed on through
    sys.stderr (which a progress display redirects above itself), less the log-level
    banner: RAY_BACKEND_LOG_LEVEL itself makes Ray print it, at INFO, before the level applies."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            for line in held.read().decode(errors="replace").splitlines():
                if line.strip() and _LEVEL_BANNER not in line:
                    print(line, file=sys.stderr)


# Where Ray announces its default for a cluster it starts ("Token authentication is
# enabled for this Ray cluster ..."); should the module move, the notice merely comes back.
_TOKEN_NOTICE_LOGGER = "ray._private.authentication.authentication_token_setup"


@contextlib.contextmanager
def _quiet_logger(name: str):
    log = logging.getLogger(name)
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


@contextlib.contextmanager
def _quiet_stderr():
    """The probe's own C++ warnings would say the same as our one line, less clearly."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _check_token(address: str) -> None:
    """Token authentication, named as such: one quick call to the cluster's GCS."""
    if _host_port(address) is None:
        return
    from ray._raylet import GcsClient  # type: ignore[attr-defined]  # a compiled module
    from ray.exceptions import AuthenticationError

    try:
        with _quiet_stderr():
            GcsClient(address=address)
    except AuthenticationError:
        has = "a token that the cluster refuses" if _token_given() else "no token"
        raise ClusterError(
            f"the Ray cluster at {address} uses token authentication and this process has {has}: set "
            "RAY_AUTH_MODE=token and RAY_AUTH_TOKEN to the cluster's token (or put it in ~/.ray/auth_token, or "
            "name its file in RAY_AUTH_TOKEN_PATH); `ray get-auth-token` on the head prints it") from None
    except Exception:  # noqa: BLE001 - anything else is ray.init's to report, in its own words
        return


def _token_given() -> bool:
    return bool(os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH")
                or (Path.home() / ".ray" / "auth_token").is_file())


@contextlib.contextmanager
def _sigterm_handler_kept() -> Iterator[None]:
    """ray.init in a driver replaces SIGTERM's handler with one that raises SystemExit
    wherever the main thread is; a command that handles SIGTERM itself (eval's clean stop
    on `ray job stop`) keeps its own."""
    previous = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if previous not in (signal.SIG_DFL, None) and signal.getsignal(signal.SIGTERM) is not previous:
            signal.signal(signal.SIGTERM, previous)


def connect(address: str | None = None, *, dashboard: bool = False, num_cpus: int | None = None) -> RuntimeInfo:
    """Start or join Ray once per process; later calls return the same runtime."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    # The runtime's C++ warnings go straight to this process's stderr, across any progress
    # display; below errors they stay in Ray's log files.
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "error")
    if address and address.startswith("ray://"):
        raise ClusterError(_CLIENT_REFUSED)
    if not ray.is_initialized():
        try:
            with _sigterm_handler_kept():
                if address:
                    _check_reachable(address)
                    _check_token(address)
                    with _held_stderr():
                        ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
                else:
                    with _held_stderr(), _quiet_logger(_TOKEN_NOTICE_LOGGER):
                        ray.init(
                            address="local",  # always our own cluster, never one another process left running
                            num_cpus=num_cpus or os.cpu_count() or 1,
                            include_dashboard=dashboard,
                            logging_level=logging.WARNING,
                            log_to_driver=False,
                            configure_logging=True,
                            _system_config={"idle_worker_killing_time_threshold_ms": IDLE_WORKER_KEEP_MS},
                        )
        except (OSError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:  # OSError: refused, timed out, unknown host
            where = f"the Ray cluster at {address}" if address else "an embedded Ray cluster"
            fix = "check the address and that the cluster is up" if address else "check free memory and /tmp space"
            raise ClusterError(f"cannot start or reach {where}: {exc}; {fix}, or use --local") from exc
    context = ray.get_runtime_context()
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    return RuntimeInfo(
        address=context.gcs_address,
        embedded=not address,
        nodes=len(nodes),
        cpus=sum(n.get("Resources", {}).get("CPU", 0.0) for n in nodes),
    )
