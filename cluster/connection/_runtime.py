"""Connecting to Ray: an embedded local cluster by default, or an existing one.

    connect()                      start (or reuse) an embedded cluster sized for this machine
    connect(address="auto")        join the cluster running on this machine (`ray start`)
    connect(address="host:6379")   join the cluster whose head is there (also RAY_ADDRESS)

An address is checked before Ray is handed it (cluster.connection._address: `ray://` refused, a
GCS probed the way Ray's client asks), so a wrong one is one line within seconds rather
than Ray's minutes of retries. A cluster with token authentication and a process
without the right token is named as such (Ray's own client says so at once). The
embedded cluster starts under `cluster.start_timeout_s` and is tried once more after a
failure, the cause said (cluster.connection._start). The dashboard stays off unless asked for.
Any failure to start or reach Ray ends in one ClusterError that names the cause and the
fix (ClusterJoinError, a ConfigError, for an address that is wrong).

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
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import ray

from agents.settings import ClusterSettings
from cluster.connection._address import check_address, given_address, host_port
from cluster.connection._errors import ClusterError, ClusterJoinError
from cluster.connection._start import start_once_more

__all__ = ["ClusterError", "ClusterJoinError", "RuntimeInfo", "connect", "current_node_id", "node_cpus"]

IDLE_WORKER_KEEP_MS = 300_000


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


_LEVEL_BANNER = "Set ray log level from environment variable"


@contextlib.contextmanager
def _held_stderr():
    """Ray's start-up writes on fd 2, held until it is done, then passed on through
    sys.stderr (which a progress display redirects above itself), less the log-level
    banner: RAY_BACKEND_LOG_LEVEL itself makes Ray print it, at INFO, before the level
    applies. A start that fails passes nothing on."""
    sys.stderr.flush()
    saved = os.dup(2)
    failed = False
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        except BaseException:
            failed = True  # what Ray said of a failed start stays in its logs: the caller names the cause
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            for line in [] if failed else held.read().decode(errors="replace").splitlines():
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
    """A GCS that asked the probe for a token: whether this process's token (if any) is
    the right one, by Ray's own client, which answers that at once."""
    from ray._raylet import GcsClient  # type: ignore[attr-defined]  # a compiled module
    from ray.exceptions import AuthenticationError

    try:
        with _quiet_stderr():
            GcsClient(address=address)
    except AuthenticationError:
        has = "a token that the cluster refuses" if _token_given() else "no token"
        raise ClusterJoinError(
            f"the Ray cluster at {address} uses token authentication and this process has {has}: set "
            "RAY_AUTH_MODE=token and RAY_AUTH_TOKEN to the cluster's token (or put it in ~/.ray/auth_token, or "
            "name its file in RAY_AUTH_TOKEN_PATH); `ray get-auth-token` on the head prints it"
        ) from None
    except Exception:  # noqa: BLE001 - anything else is ray.init's to report, in its own words
        return


def _token_given() -> bool:
    return bool(
        os.environ.get("RAY_AUTH_TOKEN")
        or os.environ.get("RAY_AUTH_TOKEN_PATH")
        or (Path.home() / ".ray" / "auth_token").is_file()
    )


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


def _notice(text: str) -> None:
    print(f"workingset: notice: {text}", file=sys.stderr)


def _join(address: str, source: str) -> None:
    joinable = check_address(address, source=source)
    if joinable.token:
        _check_token(joinable.address)
    try:
        with _held_stderr():
            ray.init(address=joinable.address, logging_level=logging.WARNING, log_to_driver=False)
    except (OSError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:
        with contextlib.suppress(Exception):
            ray.shutdown()
        said = " ".join(str(exc).split())[:600]  # Ray's version-mismatch text runs over several lines
        raise ClusterError(
            f"cannot join the Ray cluster at {address}: {said}; check that the cluster is up and "
            "runs the same Ray and Python as this machine, or use --local"
        ) from exc


def _check_same_cluster(address: str, source: str) -> None:
    """An address named to a process already on Ray is checked like a first one, and must
    be the cluster it is on: it is never quietly swapped for the one already joined."""
    joinable = check_address(address, source=source)
    current = ray.get_runtime_context().gcs_address
    if not _same_place(joinable.address, current):
        raise ClusterError(
            f"{source} {address}: this process is already on the Ray cluster at {current}; "
            "a process joins one cluster, so run this in a new one"
        )


def _same_place(address: str, current: str) -> bool:
    """Whether two host:port addresses name one GCS; this machine's names for itself
    (loopback, its node address) count as one host."""
    given, joined = host_port(address), host_port(current)
    if given is None or joined is None or given[1] != joined[1]:
        return False
    here = {"localhost", ray.util.get_node_ip_address()}
    hosts = {given[0], joined[0]}
    return len(hosts) == 1 or all(h in here or h.startswith("127.") for h in hosts)


def _start_embedded(num_cpus: int | None, dashboard: bool, timeout_s: float, notify: Callable[[str], None]) -> None:
    def start() -> None:
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

    start_once_more(start, timeout_s=timeout_s, what="the embedded Ray cluster", notify=notify, undo=ray.shutdown)


def connect(
    address: str | None = None,
    *,
    dashboard: bool = False,
    num_cpus: int | None = None,
    start_timeout_s: float | None = None,
    notify: Callable[[str], None] = _notice,
) -> RuntimeInfo:
    """Start or join Ray once per process; later calls return the same runtime.
    `start_timeout_s`: the embedded cluster's deadline (default: the setting's);
    `notify`: told of a first failed start that the second try made good."""
    given = given_address(address)
    # The runtime's C++ warnings go straight to this process's stderr, across any progress
    # display; below errors they stay in Ray's log files.
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "error")
    if ray.is_initialized() and given is not None:
        _check_same_cluster(*given)
    if not ray.is_initialized():
        with _sigterm_handler_kept():
            if given is not None:
                _join(*given)
            else:
                timeout_s = start_timeout_s if start_timeout_s is not None else ClusterSettings().start_timeout_s
                _start_embedded(num_cpus, dashboard, timeout_s, notify)
    context = ray.get_runtime_context()
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    return RuntimeInfo(
        address=context.gcs_address,
        embedded=given is None,
        nodes=len(nodes),
        cpus=sum(n.get("Resources", {}).get("CPU", 0.0) for n in nodes),
    )
