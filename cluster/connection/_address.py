"""Which Ray cluster an address names, checked before Ray is handed it.

    check_address("auto" | "HOST:PORT" | ..., source="--address") -> Joinable

Ray, given an address where no GCS answers, retries for many minutes before it gives
up (more than five, against a silent port); so the address is checked here first,
in seconds, and a wrong one is one line naming what is there instead and the fix
(ClusterJoinError: exit 2, before anything is written):

  - `HOST:PORT`: the head's GCS (6379 unless `ray start --head --port` chose another),
    probed the way Ray's client asks (cluster.connection._gcs_probe): nothing listening, a web
    server (the dashboard's 8265 is for `ray job submit`), another service, silence;
  - `auto`: the cluster this machine is part of, by Ray's own lookup (the address the
    last `ray start` here recorded under Ray's temp directory), then probed the same;
  - `ray://` (Ray Client) is refused: the batch streams events from its actors and holds
    a placement group per task, which a Ray Client connection does not carry reliably;
    the driver belongs on a node of the cluster (`ray job submit` puts it there);
  - anything else (a URL, a bare host) is not a form Ray joins.

A GCS that asks for a token is reported as such (`Joinable.token`): whether this
process's token is the right one is for Ray's own client to say (cluster.connection._runtime).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from cluster.connection._errors import ClusterJoinError
from cluster.connection._gcs_probe import probe_gcs

__all__ = ["CLIENT_REFUSED", "Joinable", "check_address", "given_address", "host_port"]

CLIENT_REFUSED = (
    "ray:// addresses (Ray Client) are not supported: the batch streams events from its actors and holds "
    "placement groups for each task, which Ray Client does not carry reliably. Run the driver on a node of the "
    "cluster with --address auto (or HEAD_HOST:6379), or submit it there: "
    "ray job submit --address http://HEAD_HOST:8265 --working-dir . -- workingset eval ..."
)
_FORMS = "--address takes the head's GCS as HEAD_HOST:6379 (the port `ray start --head` printed) or auto"
_START_ONE = (
    "start a cluster with `ray start --head` (then --address auto), check the host and port, or drop "
    "--address to run on an embedded cluster (--local: in this process)"
)


@dataclass(frozen=True)
class Joinable:
    """An address where a Ray GCS answered."""

    address: str  # host:port
    token: bool  # the GCS asked for a token


def given_address(address: str | None) -> tuple[str, str] | None:
    """The address to join and where it came from (`--address`, which the setting
    `cluster.address` also fills, or RAY_ADDRESS); None: the embedded cluster."""
    if address:
        return address, "--address"
    if os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"], "RAY_ADDRESS"
    return None


def host_port(address: str) -> tuple[str, int] | None:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _resolve_auto(source: str) -> str:
    """Ray's own answer to `auto`: RAY_ADDRESS, else the address `ray start` recorded here."""
    from ray._private import services  # Ray's lookup, so `auto` means here what it means to Ray

    try:
        found = services.canonicalize_bootstrap_address("auto")
    except ConnectionError:
        found = None
    if not found:
        raise ClusterJoinError(
            f"{source} auto: no Ray cluster runs on this machine (no `ray start` recorded one); "
            "start one with `ray start --head`, or drop --address to run on an embedded cluster"
        )
    return found


def check_address(address: str, *, source: str = "--address") -> Joinable:
    """The cluster to join at `address` (named in messages as `source`), or
    ClusterJoinError saying what is there instead and what to give."""
    address = address.strip()
    if address.startswith("ray://"):
        raise ClusterJoinError(CLIENT_REFUSED)
    if "://" in address:
        raise ClusterJoinError(
            f"{source} {address} is a URL, not a Ray address (a dashboard's http://HOST:8265 is "
            f"for `ray job submit`); {_FORMS}"
        )
    resolved = _resolve_auto(source) if address == "auto" else address
    where = host_port(resolved)
    if where is None:
        raise ClusterJoinError(f"{source} {address} is not a Ray address; {_FORMS}")
    answer = probe_gcs(*where)
    named = address if resolved == address else f"{address} ({resolved})"
    if answer.kind == "other":
        fix = (
            _START_ONE
            if not answer.occupied
            else (f"{_FORMS}; the dashboard's http://HOST:8265 is for `ray job submit`" if answer.web else _FORMS)
        )
        raise ClusterJoinError(f"{source} {named}: no Ray cluster there: {answer.what}; {fix}")
    return Joinable(resolved, token=answer.kind == "token")
