"""Many concurrent sessions on the embedded Ray cluster.

    python -m benchmarks.concurrency [--sessions 25 100 200] [--latency-s 2] [--turns 5] [--actors 4]

Every session runs one prompt through a scripted model that sleeps `--latency-s` per
call, for `--turns` model calls: each call but the last reads a file in the session's
own workspace (a real tool task on Ray), the last answers. All sessions start at
once on a SessionPool. Reported per N:

- throughput vs ideal: ideal wall time (turns × latency, as if sessions cost
  nothing) divided by the measured wall time from the first open to the last answer;
- session start latency: p50 / p95 of opening a session (build + registration);
- peak memory: the machine's memory in use at its peak during the run, minus before.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import threading
import time
from pathlib import Path

import psutil
import yaml

from agents.config import load_settings
from cluster.runtime import connect
from cluster.session_pool import SessionPool


def write_script(path: Path, turns: int, latency_s: float) -> None:
    ms = int(latency_s * 1000)
    steps = [{"text": f"step {n}", "sleep_ms": ms, "tool_calls": [{"name": "Read", "input": {"path": "notes.txt"}}]}
             for n in range(turns - 1)]
    steps.append({"text": "done", "sleep_ms": ms})
    path.write_text(yaml.safe_dump({"turns": steps}))


class MemoryPeak:
    def __init__(self):
        self.before = psutil.virtual_memory().used
        self.peak = self.before
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, psutil.virtual_memory().used)

    def __enter__(self) -> MemoryPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


async def run_batch(root: Path, n: int, turns: int, latency_s: float, actors: int) -> dict:
    script = root / f"script-{n}.yaml"
    write_script(script, turns, latency_s)
    settings = load_settings(root, {
        "model": f"scripted:{script}",
        "home": str(root / f"home-{n}"),
        "permissions": {"mode": "default", "headless": "deny-asks"},
    })
    pool = SessionPool(settings, actors=actors)
    await pool.ready()
    workspaces = []
    for i in range(n):
        ws = root / f"ws-{n}-{i}"
        ws.mkdir()
        (ws / "notes.txt").write_text(f"notes of session {i}\n" * 20)
        workspaces.append(ws)
    opens: list[float] = []

    async def one(ws: Path) -> str:
        started = time.perf_counter()
        remote = await pool.open(ws)
        opens.append(time.perf_counter() - started)
        outcome = await remote.run_turn("Read the notes, then answer.")
        await pool.close(remote)
        return outcome.reason

    with MemoryPeak() as memory:
        started = time.perf_counter()
        reasons = await asyncio.gather(*(one(ws) for ws in workspaces))
        wall = time.perf_counter() - started
    pool.shutdown()
    ideal = turns * latency_s
    return {
        "n": n,
        "ok": sum(r == "end_turn" for r in reasons),
        "wall_s": wall,
        "throughput_vs_ideal": ideal / wall,
        "open_p50_ms": statistics.median(opens) * 1000,
        "open_p95_ms": sorted(opens)[int(0.95 * (len(opens) - 1))] * 1000,
        "peak_mem_mb": (memory.peak - memory.before) / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[25, 100, 200])
    parser.add_argument("--latency-s", type=float, default=2.0)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--actors", type=int, default=4)
    args = parser.parse_args()
    info = connect()
    print(f"Ray: {info.nodes} node(s), {info.cpus:g} CPUs; {args.actors} SessionActors; "
          f"{args.turns} calls × {args.latency_s:g} s each (ideal {args.turns * args.latency_s:g} s)")
    print(f"{'sessions':>8} {'ok':>5} {'wall s':>7} {'vs ideal':>9} {'open p50 ms':>12} {'open p95 ms':>12} {'peak MB':>8}")
    with tempfile.TemporaryDirectory(prefix="workingset-conc-") as tmp:
        for n in args.sessions:
            r = asyncio.run(run_batch(Path(tmp), n, args.turns, args.latency_s, args.actors))
            print(f"{r['n']:>8} {r['ok']:>5} {r['wall_s']:>7.2f} {r['throughput_vs_ideal']:>9.2f} "
                  f"{r['open_p50_ms']:>12.1f} {r['open_p95_ms']:>12.1f} {r['peak_mem_mb']:>8.0f}")


if __name__ == "__main__":
    main()
