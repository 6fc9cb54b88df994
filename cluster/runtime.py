"""Connecting to Ray: an embedded local cluster by default, or an existing one.

    connect()                      start (or reuse) an embedded cluster sized for this machine
    connect(address="ray://...")   join an existing cluster (also RAY_ADDRESS)

The dashboard stays off unless asked for. Any failure to start or reach Ray ends in
one ClusterError that names the address and the fix.

The embedded cluster keeps idle workers for minutes, not Ray's one second: a batch's
tool calls come in bursts a model call apart, and a worker killed between them costs
a Python start and the harness's imports (seconds of CPU) at the next burst. On a
cluster of your own, set `RAY_idle_worker_killing_time_threshold_ms` when starting it.
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass

import ray

from agents.errors import WorkingsetError

__all__ = ["ClusterError", "RuntimeInfo", "connect", "current_node_id"]

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


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast when nothing listens at host:port: ray.init would retry for many minutes."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        return  # "auto", "local" and the like: ray.init resolves them itself
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
        pass


def connect(address: str | None = None, *, dashboard: bool = False, num_cpus: int | None = None) -> RuntimeInfo:
    """Start or join Ray once per process; later calls return the same runtime."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    if not ray.is_initialized():
        try:
            if address:
                _check_reachable(address)
                ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
            else:
                ray.init(
                    address="local",  # always our own cluster, never one another process left running
                    num_cpus=num_cpus or os.cpu_count() or 1,
                    include_dashboard=dashboard,
                    logging_level=logging.WARNING,
                    log_to_driver=False,
                    configure_logging=True,
                    _system_config={"idle_worker_killing_time_threshold_ms": IDLE_WORKER_KEEP_MS},
                )
        except (OSError, RuntimeError, ValueError) as exc:  # OSError: refused, timed out, unknown host
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
