"""Processes a batch leaves behind: none by design, and the next run says so if there were.

Everything a batch starts dies with its driver, however the driver dies (kill -9
included). Each batch marks what it starts: a token in the environment
(`WORKINGSET_BATCH`), set before the batch starts anything, so every process the driver
starts carries it, and every process those start — the embedded Ray cluster's GCS,
raylet and agents, its workers, their commands — inherits it, with nothing to register.
Then:

- the embedded cluster's GCS and raylet are started by Ray with PR_SET_PDEATHSIG (Ray's
  kernel fate-sharing for a cluster a driver starts); its workers exit once their raylet
  is gone (Ray checks every second); a tool worker's sandbox is bubblewrap with
  --die-with-parent, so a command, a setup, a grade or an environment build goes with
  its worker;
- what Ray leaves to chance — its agents notice the raylet's death, then wait a minute
  on a GCS that died with it (and, having retitled themselves, no longer show the
  mark) — a keeper sees to: a small process the batch starts (in a session of its own,
  without the mark) that holds the read end of a pipe whose write end only the driver
  holds (close-on-exec, so no child keeps it open). While the driver lives, the keeper
  notes its descendants each second (pid and start time: the process tree itself, not
  a list anyone keeps). The kernel closes the pipe however the driver dies; the keeper
  then SIGKILLs every process it noted that is still the same process, and every live
  process carrying the batch's token, until none is left, and exits. A batch that ends
  says so down the pipe first, and the keeper leaves everything be.

And should something still survive (the keeper itself killed), the next run finds it:
the token is written to `<out>/state/processes.json`, removed when the batch ends; a run
that finds the file names the live processes carrying that token in one line (pids,
names, how to stop them). It does not kill them.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil

__all__ = ["MARK", "batch_marked", "find_leftovers", "marked_processes"]

MARK = "WORKINGSET_BATCH"
_SHOWN = 5
_DONE = b"done\n"  # the batch ended: the keeper leaves everything be
_QUIET_ROUNDS = 3  # rounds in a row that found nothing: the keeper's work is done
_ROUND_S = 0.5
_NOTE_S = 1.0  # how often the keeper notes the driver's descendants


def marked_processes(token: str) -> list[psutil.Process]:
    """Live processes of this user carrying the batch's token (never this process)."""
    me = os.getpid()
    found = []
    for process in psutil.process_iter():
        with suppress(psutil.Error):  # gone meanwhile, or another user's
            if process.pid != me and process.environ().get(MARK) == token and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
    return found


def _family(driver: psutil.Process, noted: dict[tuple[int, float], psutil.Process]) -> None:
    with suppress(psutil.Error):
        for process in driver.children(recursive=True):
            if process.pid != os.getpid():  # the keeper is the driver's child too
                with suppress(psutil.Error):
                    noted.setdefault((process.pid, process.create_time()), process)


def _keep(token: str, driver_pid: int) -> None:
    """The keeper: note the driver's descendants until it ends; if it ended without
    saying so, kill them and every process carrying the batch's token."""
    noted: dict[tuple[int, float], psutil.Process] = {}
    said = b""
    try:
        driver = psutil.Process(driver_pid)
    except psutil.Error:
        driver = None
    while True:
        ready, _, _ = select.select([sys.stdin.buffer], [], [], _NOTE_S)
        if ready:
            chunk = os.read(sys.stdin.fileno(), 64)
            if not chunk:
                break  # EOF: the driver is gone, however it went
            said += chunk
        elif driver is not None:
            _family(driver, noted)
    if said == _DONE:
        return
    quiet = 0
    while quiet < _QUIET_ROUNDS:
        found = marked_processes(token) + [p for p in noted.values() if _same_alive(p)]
        for process in found:
            with suppress(psutil.Error):
                process.send_signal(signal.SIGKILL)
        quiet = 0 if found else quiet + 1
        time.sleep(_ROUND_S)


def _same_alive(process: psutil.Process) -> bool:
    """Still the process that was noted (psutil checks the start time), and not a zombie."""
    with suppress(psutil.Error):
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    return False


def _start_keeper(token: str) -> tuple[subprocess.Popen, int]:
    """The keeper and the write end of its pipe (held by this process alone)."""
    read, write = os.pipe()  # both close-on-exec: no child of the driver holds the write end
    env = {k: v for k, v in os.environ.items() if k != MARK}
    keeper = subprocess.Popen(
        [sys.executable, "-m", "cluster.eval.leftovers", token, str(os.getpid())],
        stdin=read,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(read)
    return keeper, write


def find_leftovers(marker: Path) -> str | None:
    """One line naming the live processes of the batch that wrote `marker`, or None."""
    try:
        token = json.loads(marker.read_text(encoding="utf-8"))["token"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    found: list[tuple[int, str]] = []
    for process in marked_processes(token):
        with suppress(psutil.Error):
            title = " ".join(process.cmdline()[:1]) or process.name()
            found.append((process.pid, os.path.basename(title) if title.startswith("/") else title))
    if not found:
        return None
    shown = ", ".join(f"{pid} {name}" for pid, name in found[:_SHOWN])
    more = f" and {len(found) - _SHOWN} more" if len(found) > _SHOWN else ""
    pids = " ".join(str(pid) for pid, _ in found)
    return (
        f"{len(found)} process{'es' if len(found) > 1 else ''} of an earlier batch on this --out "
        f"{'are' if len(found) > 1 else 'is'} still running ({shown}{more}); stop them with: kill -9 {pids}"
    )


@contextmanager
def batch_marked(marker: Path) -> Iterator[str | None]:
    """Mark this batch's processes for the next run; yields the line about an earlier
    batch's leftovers (or None). The mark and the file go when the batch ends."""
    leftovers = find_leftovers(marker)
    token = secrets.token_hex(8)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"token": token, "driver": os.getpid()}), encoding="utf-8")
    keeper, pipe = _start_keeper(token)
    before = os.environ.get(MARK)
    os.environ[MARK] = token  # inherited by every process started from here on
    try:
        yield leftovers
    finally:
        if before is None:
            os.environ.pop(MARK, None)
        else:
            os.environ[MARK] = before
        with suppress(OSError):
            os.write(pipe, _DONE)
        os.close(pipe)
        with suppress(subprocess.TimeoutExpired):
            keeper.wait(timeout=10)
        marker.unlink(missing_ok=True)


if __name__ == "__main__":
    _keep(sys.argv[1], int(sys.argv[2]))
