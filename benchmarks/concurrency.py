"""Many concurrent sessions, on the embedded Ray cluster and in one process.

    python -m benchmarks.concurrency [--sessions 25 100 200] [--latency-s 2] [--turns 5] [--actors N]
                                     [--mode both|ray|local]

Every session runs one prompt through a scripted model that sleeps `--latency-s` per
call, for `--turns` model calls: each call but the last reads a file in the session's
own workspace, the last answers. All sessions start at once. On Ray they run on a
SessionPool; in process (`local`) the same sessions run as asyncio tasks of this
process, opened by the same lifecycle with the in-process ports. Reported per N:

- throughput vs ideal: ideal wall time (turns × latency, as if sessions cost
  nothing) divided by the measured wall time from the first open to the last answer;
- CPU ms per model call: CPU seconds of this process and every process under it
  (the raylet, the GCS, every worker; `benchmarks.cpu_tree`) from the first open to
  the last answer, over the model calls made — session opens and closes included,
  the benchmark's own sampling thread left out. On Ray the pool is set up and the
  tree left to settle (workers Ray starts keep importing for a while) first.
  Split into the driver, Ray workers (the SessionActors and tool workers), Ray's own
  processes (raylet, GCS, agents) and workers that exited during the run; the
  workers' share is also shown by process title (SessionActor, SubagentActor, IDLE
  tool workers, ...);
- workers started: Ray worker processes that appeared during the run (each one boots
  Python and imports the harness; Ray starts them when none is idle);
- session start latency: p50 / p95 of opening a session (build + registration);
- peak memory: the machine's memory in use at its peak during the run, minus before.

The load average is printed with every row: on a shared machine wall time (and so
throughput) depends on it, CPU time much less.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import psutil
import yaml

from agents.opening import OpenSpec, SessionRuntime, open_or_resume
from agents.settings import WorkingsetSettings, load_settings
from benchmarks.cpu_tree import CpuSample, load_average, sample_tree
from cluster.connection import connect, current_node_id, node_cpus
from cluster.eval import default_actors
from cluster.session_pool import SessionPool

OneSession = Callable[[Path], Awaitable[tuple[str, float]]]


def write_script(path: Path, turns: int, latency_s: float) -> None:
    ms = int(latency_s * 1000)
    steps = [
        {"text": f"step {n}", "sleep_ms": ms, "tool_calls": [{"name": "Read", "input": {"path": "notes.txt"}}]}
        for n in range(turns - 1)
    ]
    steps.append({"text": "done", "sleep_ms": ms})
    path.write_text(yaml.safe_dump({"turns": steps}))


class Watch:
    """Samples the machine's memory (peak) and the Ray worker processes under this one.
    Its own CPU (listing the process tree is not free, and Ray's tree is the larger) is
    measured on its thread and left out of the driver's."""

    def __init__(self):
        self.before = psutil.virtual_memory().used
        self.peak = self.before
        self.workers_seen: set[int] = set()
        self.cpu_s = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        started = time.thread_time()
        ticks = 0
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, psutil.virtual_memory().used)
            ticks += 1
            if ticks % 3 == 0:
                self.workers_seen |= sample_tree().workers
        self.cpu_s = time.thread_time() - started

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def batch_settings(root: Path, n: int, turns: int, latency_s: float, *, tag: str = "") -> WorkingsetSettings:
    script = root / f"script-{tag}{n}.yaml"
    write_script(script, turns, latency_s)
    return load_settings(
        root,
        {
            "model": f"scripted:{script}",
            "home": str(root / f"home-{tag}{n}"),
            "permissions": {"mode": "default", "headless": "deny-asks"},
        },
    )


def workspaces(root: Path, n: int, mode: str) -> list[Path]:
    made = []
    for i in range(n):
        ws = root / f"ws-{mode}-{n}-{i}"
        ws.mkdir()
        (ws / "notes.txt").write_text(f"notes of session {i}\n" * 20)
        made.append(ws)
    return made


async def measure(n: int, turns: int, latency_s: float, dirs: list[Path], one: OneSession) -> dict:
    with Watch() as watch:
        workers_before = sample_tree().workers
        cpu_before = sample_tree()
        started = time.perf_counter()
        results = await asyncio.gather(*(one(ws) for ws in dirs))
        wall = time.perf_counter() - started
        cpu: CpuSample = sample_tree() - cpu_before
    cpu = cpu.less_driver(watch.cpu_s)
    reasons, opens = [r for r, _ in results], [o for _, o in results]
    calls = n * turns
    return {
        "n": n,
        "ok": sum(r == "end_turn" for r in reasons),
        "wall_s": wall,
        "throughput_vs_ideal": turns * latency_s / wall,
        "cpu_ms_per_call": cpu.total * 1000 / calls,
        "cpu_split": {k: v * 1000 / calls for k, v in cpu.seconds.items()},
        "workers_by_title": {k: v * 1000 / calls for k, v in cpu.by_title().items()},
        "workers_started": len(watch.workers_seen - workers_before),
        "open_p50_ms": statistics.median(opens) * 1000,
        "open_p95_ms": sorted(opens)[int(0.95 * (len(opens) - 1))] * 1000,
        "peak_mem_mb": (watch.peak - watch.before) / 1e6,
        "load": load_average(),
    }


async def settle(max_s: float = 20.0, quiet_cores: float = 0.3) -> None:
    """Wait until the process tree is nearly idle: worker processes Ray starts go on
    importing after they first answer, and that start-up is not a session's cost."""
    deadline = time.monotonic() + max_s
    last = sample_tree()
    while time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        now = sample_tree()
        if (now - last).total / 0.5 < quiet_cores:
            return
        last = now


async def run_on_ray(root: Path, n: int, turns: int, latency_s: float, actors: int) -> dict:
    pool = SessionPool(batch_settings(root, n, turns, latency_s), actors=actors)
    await pool.ready()
    await settle()

    async def one(ws: Path) -> tuple[str, float]:
        started = time.perf_counter()
        remote = await pool.open(ws)
        opened = time.perf_counter() - started
        outcome = await remote.run_turn("Read the notes, then answer.")
        await pool.close(remote)
        return outcome.reason, opened

    try:
        return await measure(n, turns, latency_s, workspaces(root, n, "ray"), one)
    finally:
        pool.shutdown()


async def run_in_process(root: Path, n: int, turns: int, latency_s: float) -> dict:
    settings = batch_settings(root, n, turns, latency_s)
    # This process's one-time costs of a session (imports, caches), paid before timing
    # as SessionPool.ready pays them in each SessionActor.
    unhurried = batch_settings(root, n, turns, 0.0, tag="warm-")
    warm = await open_or_resume(OpenSpec(unhurried, workspaces(root, 1, f"warm-{n}")[0]), SessionRuntime())
    await warm.run_turn("Read the notes, then answer.")
    await warm.aclose()

    async def one(ws: Path) -> tuple[str, float]:
        started = time.perf_counter()
        session = await open_or_resume(OpenSpec(settings, ws), SessionRuntime())
        opened = time.perf_counter() - started
        outcome = await session.run_turn("Read the notes, then answer.")
        await session.aclose()
        return outcome.reason, opened

    return await measure(n, turns, latency_s, workspaces(root, n, "local"), one)


def print_row(where: str, r: dict) -> None:
    split = r["cpu_split"]
    print(
        f"{where:>6} {r['n']:>8} {r['ok']:>5} {r['wall_s']:>7.2f} {r['throughput_vs_ideal']:>9.2f} "
        f"{r['cpu_ms_per_call']:>9.2f}  {split['driver']:>6.2f} {split['workers']:>7.2f} {split['ray_system']:>6.2f} "
        f"{split['exited']:>6.2f} {r['workers_started']:>6} {r['open_p50_ms']:>8.1f} {r['open_p95_ms']:>8.1f} "
        f"{r['peak_mem_mb']:>8.0f}  {r['load']}",
        flush=True,
    )
    if r["workers_by_title"]:
        shown = ", ".join(f"{title.removeprefix('ray::')} {ms:.2f}" for title, ms in r["workers_by_title"].items())
        print(f"{'':>6} workers' CPU ms/call by process: {shown}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[25, 100, 200])
    parser.add_argument("--latency-s", type=float, default=2.0)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--actors", type=int, help="SessionActors (default: as a batch on this node would have)")
    parser.add_argument("--mode", choices=["both", "ray", "local"], default="both")
    args = parser.parse_args()
    print(f"{args.turns} calls × {args.latency_s:g} s each (ideal {args.turns * args.latency_s:g} s)")
    print(
        f"{'where':>6} {'sessions':>8} {'ok':>5} {'wall s':>7} {'vs ideal':>9} {'CPU ms/call':>9}  "
        f"{'driver':>6} {'workers':>7} {'ray':>6} {'exited':>6} {'w.new':>6} {'open p50':>8} {'open p95':>8} "
        f"{'peak MB':>8}"
    )
    with tempfile.TemporaryDirectory(prefix="workingset-conc-") as tmp:
        # Every in-process row first, before Ray starts: with Ray up, its processes' own
        # CPU (and workers of an earlier row exiting) would be counted in them.
        if args.mode in ("both", "local"):
            for n in args.sessions:
                print_row("local", asyncio.run(run_in_process(Path(tmp), n, args.turns, args.latency_s)))
        if args.mode in ("both", "ray"):
            info = connect()
            for n in args.sessions:
                actors = args.actors or default_actors(n, node_cpus(current_node_id()))
                print(f"Ray: {info.nodes} node(s), {info.cpus:g} CPUs; {actors} SessionActors for {n} sessions")
                print_row("ray", asyncio.run(run_on_ray(Path(tmp), n, args.turns, args.latency_s, actors)))


if __name__ == "__main__":
    main()
