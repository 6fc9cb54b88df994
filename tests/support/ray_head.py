"""A private Ray head made the way a user makes one (`ray start --head --block`), for the
tests that join a cluster as docs/clusters.md says: `--address auto` and `ray job submit`.

Private, because other sessions share this machine and a stray cluster would be joined
by their `ray.init()`:
  - its temp dir is a fresh directory of its own, so `ray_current_cluster` (where
    `ray.init()` and `--address auto` look first) is written there, never in /tmp/ray;
    only a process given `RAY_TMPDIR` of that directory finds it that way;
  - every port is one the OS just handed out (GCS, dashboard, agents, client server,
    metrics), so it takes no default port another cluster may hold;
  - it uses token authentication with a random token: a process that stumbles on it by
    its last resort (Ray's `auto` also greps `ps` for any raylet) is refused, not joined.
    The token is given to `ray start` in RAY_AUTH_MODE/RAY_AUTH_TOKEN, or (`token_file`)
    only as a file in the head's own `~/.ray/auth_token`, as a user's machine may have it.

It starts as every cluster of the tests starts (cluster.connection._start): Ray's start-up wait
set from cluster.start_timeout_s, and a failed start ended and tried once more, the cause
written to its log.

Always torn down: a watchdog process (this file run as a script) owns `ray start` in a
process group of its own and stops it when its stdin closes — when the test ends, fails,
or when the test process itself dies (the pipe closes with it). Stopping is SIGTERM to
`ray start` (which drains and stops its node's processes), then SIGKILL to the group, then
SIGKILL to any process still naming the temp dir on its command line or running in it
(a job's driver). Never `ray stop`, which would stop every cluster on the machine.

    with private_head(tmp, dashboard=True, env=...) as head:
        head.gcs_address, head.node_id, head.dashboard_url, head.env

A second node joins as machine B would (`ray start --address`), on fresh ports of its
own and under the head's temp dir, so the head's teardown stops it too:

    with joining_node(head, env) as node:   # node.poll(), node.log()
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

from agents.settings._config import WorkingsetSettings
from cluster.connection._errors import ClusterError
from cluster.connection._start import RAYLET_WAIT_S, deadline_environment, start_once_more

READY_SLACK_S = 30.0  # beyond Ray's own start-up waits, for `ray start` to say it is up
STOP_GRACE_S = 40.0  # ray start drains its node for up to 30 s on SIGTERM


@dataclass(frozen=True)
class PrivateHead:
    gcs_address: str
    node_id: str
    temp_root: Path  # RAY_TMPDIR for a process that should find this head by `auto`
    dashboard_url: str | None
    env: dict[str, str]  # what a process joining this head needs (token, RAY_TMPDIR)

    def start_log(self) -> str:
        """What `ray start --head` printed."""
        return (self.temp_root / "ray-start.log").read_text(errors="replace")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _head_command(temp_dir: Path, *, dashboard: bool, num_cpus: int) -> tuple[list[str], int]:
    dashboard_port = _free_port()
    ports = {
        "--port": _free_port(),
        "--dashboard-port": dashboard_port,
        "--ray-client-server-port": _free_port(),
        "--dashboard-agent-listen-port": _free_port(),
        "--dashboard-agent-grpc-port": _free_port(),
        "--runtime-env-agent-port": _free_port(),
        "--metrics-export-port": _free_port(),
    }
    command = [
        str(Path(sys.executable).with_name("ray")),
        "start",
        "--head",
        "--block",
        f"--temp-dir={temp_dir}",
        f"--num-cpus={num_cpus}",
        "--object-store-memory=100000000",
        "--disable-usage-stats",
        "--resources",
        json.dumps({"workingset_sandbox": 1}),
        "--dashboard-host=127.0.0.1",
        f"--include-dashboard={'true' if dashboard else 'false'}",
        *(f"{flag}={port}" for flag, port in ports.items()),
    ]
    return command, dashboard_port


def _processes_naming(text: str) -> list[psutil.Process]:
    """Processes whose command line names `text` or that run in it (a job's driver runs in
    its unpacked working dir there)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        with contextlib.suppress(psutil.Error, TypeError):
            if any(text in part for part in proc.info["cmdline"] or ()) or (proc.info["cwd"] or "").startswith(text):
                found.append(proc)
    return [p for p in found if p.pid != os.getpid()]


def _raylet_node_id(temp_dir: Path) -> str | None:
    for proc in _processes_naming(str(temp_dir)):
        with contextlib.suppress(psutil.Error):
            args = proc.cmdline()
            if args and args[0].endswith("raylet"):
                return next((a.split("=", 1)[1] for a in args if a.startswith("--node_id=")), None)
    return None


def _dashboard_up(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/version", timeout=2):
            return True
    except urllib.error.HTTPError:
        return True  # it answers (asking for the token): it is up
    except OSError:
        return False


def _wait_ready(temp_dir: Path, starter: subprocess.Popen, dashboard_url: str | None, deadline_s: float) -> dict:
    deadline = time.monotonic() + deadline_s
    address_file = temp_dir / "ray_current_cluster"
    while time.monotonic() < deadline and starter.poll() is None:
        node_id = _raylet_node_id(temp_dir) if address_file.is_file() else None
        if node_id and (dashboard_url is None or _dashboard_up(dashboard_url)):
            return {
                "gcs_address": address_file.read_text().strip(),
                "node_id": node_id,
                "dashboard_url": dashboard_url,
                "starter_pid": starter.pid,
            }
        time.sleep(0.5)
    log = (temp_dir.parent / "ray-start.log").read_text(errors="replace")[-2000:]
    raise RuntimeError(f"ray start did not come up in {deadline_s:.0f} s (exit {starter.poll()}): {log}")


def _stop(starter_pid: int, temp_dir: Path) -> None:
    """SIGTERM, then SIGKILL to the group, then to whatever still names the temp dir."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(starter_pid, signal.SIGTERM)
    with contextlib.suppress(psutil.Error):
        psutil.Process(starter_pid).wait(STOP_GRACE_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(starter_pid, signal.SIGKILL)  # the group ray start leads (start_new_session)
    for proc in _processes_naming(str(temp_dir)):
        with contextlib.suppress(psutil.Error):
            proc.kill()


def _watch(root: Path, dashboard: bool, num_cpus: int) -> None:
    """The watchdog: start the head (as every cluster of the tests starts: under
    cluster.start_timeout_s, once more after a failure), print where it is, stop it when
    stdin closes."""
    temp_dir = root / "ray"
    timeout_s = WorkingsetSettings().cluster.start_timeout_s
    starters: list[subprocess.Popen] = []

    def start() -> dict:
        command, dashboard_port = _head_command(temp_dir, dashboard=dashboard, num_cpus=num_cpus)
        (temp_dir / "ray_current_cluster").unlink(missing_ok=True)  # a failed attempt's, if any
        with open(root / "ray-start.log", "ab") as log:
            starters.append(
                subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, **deadline_environment(timeout_s)},
                    start_new_session=True,
                )
            )
        url = f"http://127.0.0.1:{dashboard_port}" if dashboard else None
        return _wait_ready(temp_dir, starters[-1], url, timeout_s + RAYLET_WAIT_S + READY_SLACK_S)

    def stop() -> None:
        if starters:
            _stop(starters[-1].pid, temp_dir)

    def note(text: str) -> None:
        with open(root / "ray-start.log", "a") as log:
            log.write(f"\n[ray_head] {text}\n")

    signal.signal(signal.SIGTERM, lambda *_: (stop(), os._exit(0)))
    try:
        try:
            ready = start_once_more(start, timeout_s=timeout_s, what="ray start --head", notify=note, undo=stop)
        except ClusterError as exc:
            ready = {"error": str(exc)}
        print(json.dumps(ready), flush=True)
        sys.stdin.read()
    finally:
        stop()


@contextlib.contextmanager
def private_head(
    *, dashboard: bool = False, num_cpus: int = 2, env: dict[str, str] | None = None, token_file: bool = False
) -> Iterator[PrivateHead]:
    """A head of its own for the duration of the block; `env` is the head's environment
    (its workers and job drivers inherit it) on top of the token and a private RAY_TMPDIR.
    `token_file`: the head's only token is `$HOME/.ray/auth_token` of a HOME of its own."""
    # A short path: Ray's Unix socket paths under the temp dir must stay below 108 bytes.
    root = Path(tempfile.mkdtemp(prefix="wshead-", dir="/tmp"))
    joining = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16), "RAY_TMPDIR": str(root)}
    head_env = {**{k: v for k, v in (env or os.environ).items() if not k.startswith("RAY_")}, **joining}
    if token_file:
        home = root / "home"
        (home / ".ray").mkdir(parents=True)
        (home / ".ray" / "auth_token").write_text(joining["RAY_AUTH_TOKEN"])
        head_env = {**{k: v for k, v in head_env.items() if not k.startswith("RAY_AUTH_")}, "HOME": str(home)}
    watchdog = subprocess.Popen(
        [sys.executable, __file__, str(root), str(int(dashboard)), str(num_cpus)],
        env=head_env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    info: dict = {}
    try:
        info = json.loads(watchdog.stdout.readline() or '{"error": "the watchdog died"}')
        if "error" in info:
            raise RuntimeError(info["error"])
        yield PrivateHead(
            gcs_address=info["gcs_address"],
            node_id=info["node_id"],
            temp_root=root,
            dashboard_url=info["dashboard_url"],
            env=joining,
        )
    finally:
        watchdog.stdin.close()
        try:
            watchdog.wait(STOP_GRACE_S + 20)
        except subprocess.TimeoutExpired:
            watchdog.kill()
            watchdog.wait()
        if "starter_pid" in info:
            _stop(info["starter_pid"], root / "ray")  # a no-op when the watchdog did its job
        subprocess.run(["rm", "-rf", str(root)], check=False)


if __name__ == "__main__":
    _watch(Path(sys.argv[1]), dashboard=sys.argv[2] == "1", num_cpus=int(sys.argv[3]))


@dataclass
class JoiningNode:
    """`ray start --address … --block` of a second node, running or ended."""

    process: subprocess.Popen
    log_path: Path

    def poll(self) -> int | None:
        return self.process.poll()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def timed_out_starting(self) -> bool:
        """Ray gives a new node's raylet a fixed 30 s to register; a machine this loaded
        can miss it, which says nothing of the cluster it joins."""
        return self.poll() not in (None, 0) and "timed out during startup" in self.log()


def _node_command(head: PrivateHead, num_cpus: int) -> list[str]:
    ports = {
        "--node-manager-port": _free_port(),
        "--object-manager-port": _free_port(),
        "--dashboard-agent-listen-port": _free_port(),
        "--dashboard-agent-grpc-port": _free_port(),
        "--runtime-env-agent-port": _free_port(),
        "--metrics-export-port": _free_port(),
    }
    return [
        str(Path(sys.executable).with_name("ray")),
        "start",
        f"--address={head.gcs_address}",
        "--block",
        f"--temp-dir={head.temp_root / 'ray'}",
        f"--num-cpus={num_cpus}",
        "--object-store-memory=100000000",
        "--disable-usage-stats",
        "--include-log-monitor=false",
        "--resources",
        json.dumps({"workingset_sandbox": 1}),
        *(f"{flag}={port}" for flag, port in ports.items()),
    ]


@contextlib.contextmanager
def joining_node(head: PrivateHead, env: dict[str, str], *, num_cpus: int = 1) -> Iterator[JoiningNode]:
    """A second node's `ray start --address` in `env` (nothing of the test process's RAY_
    variables: what it knows of the token is what `env` says), stopped when the block ends."""
    log_path = head.temp_root / f"join-{secrets.token_hex(4)}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            _node_command(head, num_cpus),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield JoiningNode(process, log_path)
    finally:
        if process.poll() is None:
            process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(STOP_GRACE_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
