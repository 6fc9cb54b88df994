"""Starting Ray on this machine within a deadline, and once more after a failure.

On a loaded machine a start can miss one of Ray's start-up waits: the GCS writing its
port file (a wait Ray lets a variable set, RAY_gcs_server_port_wait_time_s, in whole
seconds) or the raylet registering with the GCS (a fixed 30 s inside Ray, which no
setting reaches). So:

  - `start_deadline(s)` sets the first wait for the duration of a start, and
    `deadline_environment(s)` gives it to a `ray start` of another process: the setting
    `cluster.start_timeout_s` bounds every start Workingset makes, the embedded
    cluster's and the tests' clusters' alike;
  - `start_once_more(start, ...)` runs a start under that deadline; when it fails, it
    ends what the failed attempt left running (Ray leaves its GCS up when a later step
    gives up) and runs it once more. A second try that works is said through `notify`,
    with the first one's cause; a second failure is one ClusterError that names both
    causes and the fix (so a failed start is one line, not a notice and an error).

    start_once_more(lambda: ray.init(...), timeout_s=60, what="the embedded Ray cluster",
                    notify=print, undo=ray.shutdown)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import TypeVar

import psutil

from cluster.connection._errors import ClusterError

__all__ = ["GCS_WAIT_VARIABLE", "deadline_environment", "start_deadline", "start_once_more"]

T = TypeVar("T")

GCS_WAIT_VARIABLE = "RAY_gcs_server_port_wait_time_s"
RAYLET_WAIT_S = 30  # Ray's own, fixed: the raylet's registration with the GCS
FIX = (
    "Raise cluster.start_timeout_s (WORKINGSET_CLUSTER__START_TIMEOUT_S) on a loaded machine, check free memory "
    "and /tmp space, or run in this process with --local"
)


def deadline_environment(timeout_s: float) -> dict[str, str]:
    """The variables that give a Ray start (here or in a `ray start`) this deadline.
    Ray reads whole seconds: below one second it does not wait at all."""
    return {GCS_WAIT_VARIABLE: str(int(timeout_s))}


@contextlib.contextmanager
def start_deadline(timeout_s: float) -> Iterator[None]:
    """This process's Ray starts wait `timeout_s` for their GCS inside the block."""
    before = {k: os.environ.get(k) for k in deadline_environment(timeout_s)}
    os.environ.update(deadline_environment(timeout_s))
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def cause(exc: BaseException, timeout_s: float) -> str:
    """Why a start failed, in a clause: Ray's start-up timeouts by what they mean."""
    text = str(exc).strip()
    if "gcs_server_port" in text and "Timed out" in text:
        return f"its GCS did not come up within {timeout_s:g} s (cluster.start_timeout_s)"
    if "timed out during startup" in text:
        return f"its raylet did not register with the GCS within Ray's fixed {RAYLET_WAIT_S} s"
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first[:300]}" if first else type(exc).__name__


def _children() -> dict[int, psutil.Process]:
    with contextlib.suppress(psutil.Error):
        return {p.pid: p for p in psutil.Process().children(recursive=True)}
    return {}


def _end_new(before: dict[int, psutil.Process]) -> None:
    """End the processes the failed attempt started (and theirs)."""
    left = [p for pid, p in _children().items() if pid not in before]
    for proc in left:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(left, timeout=10)


def start_once_more(
    start: Callable[[], T],
    *,
    timeout_s: float,
    what: str,
    notify: Callable[[str], None],
    undo: Callable[[], None] | None = None,
) -> T:
    """`start()` under the deadline; after a failure, what it left running ended (and
    `undo` called), once more; `notify` hears of a first failure the second try made
    good. Two failures: ClusterError naming both causes."""
    causes: list[str] = []
    for _attempt in (1, 2):
        before = _children()
        try:
            with start_deadline(timeout_s):
                started = start()
        except Exception as exc:  # noqa: BLE001 - Ray's start-up raises bare Exception among others
            causes.append(cause(exc, timeout_s))
            if undo is not None:
                with contextlib.suppress(Exception):
                    undo()
            _end_new(before)
            continue
        if causes:  # said once it is known how it ended: a failure is one line, naming both causes
            notify(f"{what} started at the second try; the first failed: {causes[0]}")
        return started
    again = "the same again" if causes[1] == causes[0] else causes[1]
    raise ClusterError(f"{what} did not start, twice: {causes[0]}; then {again}. {FIX}")
