"""Batch-evaluation throughput on this machine: `workingset eval`'s runner on Ray.

    python -m benchmarks.eval_throughput [--tasks 100] [--concurrency 8 32 64] [--latency-s 1] [--local]

Generates N tiny tasks in a temporary directory — each its own git repository with a
one-line bug (`a - b` for `a + b`) and a test — and a scripted model that fixes one in
3 calls (Read, Edit, answer), sleeping `--latency-s` before each. Every task then goes
through the full flow (trusted base and fresh workspace clone, session on a SessionPool,
tool calls as Ray tasks, the patch taken on the host, grading in a fresh copy in the
bubblewrap sandbox, a result row). For each
concurrency, on one embedded Ray cluster with a fresh pool (its start-up is not timed):

- tasks/min, and the ideal: N / (ceil(N / C) x 3 calls x latency) — as if nothing but
  the model's latency took time;
- harness CPU per task: CPU seconds (user + system, children waited for included) of
  this process and every process under it (Ray's GCS, raylet, workers, the sandboxed
  commands) during the batch, divided by N; and, for comparison, the whole machine's busy
  CPU seconds per task and its busy share (kernel work such as namespace set-up and
  file-system writeback is not charged to any process);
- peak memory: the largest total RSS of this process tree during the batch, and its
  growth over the tree before the batch.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import math
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import psutil

from agents.settings import load_settings
from cluster.eval import EVAL_ALLOW, EvalOptions, EvalRunner, JsonReporter, LocalHost, RayHost, load_tasks

CALLS = 3
GRADER = "python3 test_calc.py"


def make_tasks(root: Path, n: int, latency_s: float) -> tuple[Path, Path]:
    """N repositories with a one-line bug and a test, their task file, and the model script."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    }
    rows = []
    for i in range(n):
        repo = root / "repos" / f"calc{i:03d}"
        repo.mkdir(parents=True)
        (repo / "calc.py").write_text(f'"""Calculator #{i}."""\n\n\ndef add(a, b):\n    return a - b\n')
        (repo / "test_calc.py").write_text(f"from calc import add\n\nassert add({i}, 2) == {i + 2}, add({i}, 2)\n")
        for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "base"]):
            subprocess.run(["git", *args], cwd=repo, env=env, check=True)
        rows.append(
            {
                "id": f"calc-{i:03d}",
                "repo": str(repo),
                "instruction": "add() returns a wrong sum; fix it.",
                "test_command": GRADER,
            }
        )
    tasks = root / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ms = int(latency_s * 1000)
    script = root / "fix.json"
    script.write_text(
        json.dumps(
            {
                "turns": [
                    {
                        "text": "Reading.",
                        "sleep_ms": ms,
                        "tool_calls": [{"name": "Read", "input": {"path": "calc.py"}}],
                    },
                    {
                        "text": "Fixing.",
                        "sleep_ms": ms,
                        "tool_calls": [
                            {"name": "Edit", "input": {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}}
                        ],
                    },
                    {"text": "Fixed add().", "sleep_ms": ms},
                ]
            }
        )
    )
    return tasks, script


def _tree() -> list[psutil.Process]:
    me = psutil.Process()
    return [me, *me.children(recursive=True)]


def _cpu(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system + t.children_user + t.children_system


class TreeMeter:
    """CPU seconds and peak RSS of this process tree while a batch runs."""

    def __init__(self):
        self.start_machine = self._machine_busy()
        self.start_cpu = self._cpu_by_pid()
        self.base_rss = self._rss()
        self.peak_rss = self.base_rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    @staticmethod
    def _cpu_by_pid() -> dict[tuple[int, float], float]:
        found = {}
        for proc in _tree():
            try:
                found[(proc.pid, proc.create_time())] = _cpu(proc)
            except psutil.Error:
                continue
        return found

    @staticmethod
    def _machine_busy() -> float:
        t = psutil.cpu_times()
        return sum(t) - t.idle - getattr(t, "iowait", 0.0)

    @staticmethod
    def _rss() -> int:
        total = 0
        for proc in _tree():
            try:
                total += proc.memory_info().rss
            except psutil.Error:
                continue
        return total

    def _sample(self) -> None:
        while not self._stop.wait(0.25):
            self.peak_rss = max(self.peak_rss, self._rss())

    def stop(self) -> tuple[float, float]:
        """(CPU seconds the tree used since the start — a process gone by now counts only
        if a parent waited for it —, busy CPU seconds of the whole machine)."""
        self._stop.set()
        self._thread.join()
        end = self._cpu_by_pid()
        machine = self._machine_busy() - self.start_machine
        return sum(cpu - self.start_cpu.get(key, 0.0) for key, cpu in end.items()), machine


async def one_level(root: Path, tasks: Path, script: Path, concurrency: int, local: bool) -> dict:
    out = root / f"out-c{concurrency}"
    settings = load_settings(
        root,
        {
            "model": f"scripted:{script}",
            "home": str(out / "home"),
            "permissions": {"mode": "accept-edits", "headless": "deny-asks", "allow": EVAL_ALLOW},
        },
    )
    host = LocalHost() if local else RayHost(concurrency=concurrency)
    loaded = load_tasks(tasks)
    runner = EvalRunner(
        settings,
        loaded.tasks,
        EvalOptions(out=out, concurrency=concurrency),
        host=host,
        reporter=JsonReporter(io.StringIO()),
    )
    started = time.perf_counter()
    await host.start(runner.settings)  # pool and tool workers up before the clock starts
    ready_s = time.perf_counter() - started
    meter = TreeMeter()
    started = time.perf_counter()
    summary = await runner.run()
    wall = time.perf_counter() - started
    cpu, machine = meter.stop()
    n = len(loaded.tasks)
    ideal_wall = math.ceil(n / concurrency) * CALLS * json.loads(script.read_text())["turns"][0]["sleep_ms"] / 1000
    return {
        "concurrency": concurrency,
        "tasks": n,
        "passed": summary["statuses"]["passed"],
        "wall_s": wall,
        "per_min": n / wall * 60,
        "ideal_per_min": n / ideal_wall * 60,
        "vs_ideal": ideal_wall / wall,
        "cpu_per_task_s": cpu / n,
        "machine_cpu_per_task_s": machine / n,
        "machine_busy": machine / (wall * (os.cpu_count() or 1)),
        "peak_mb": meter.peak_rss / 1e6,
        "growth_mb": (meter.peak_rss - meter.base_rss) / 1e6,
        "p50_s": summary["wall_s"]["p50"],
        "p95_s": summary["wall_s"]["p95"],
        "ready_s": ready_s,
        "actors": sum(host.actors_started.values()) if isinstance(host, RayHost) else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--latency-s", type=float, default=1.0)
    parser.add_argument("--local", action="store_true", help="sessions in this process instead of on Ray")
    args = parser.parse_args()
    print(
        f"{os.cpu_count()} cores, {psutil.virtual_memory().total / 1e9:.0f} GB; {args.tasks} tasks × {CALLS} calls × "
        f"{args.latency_s:g} s; {'in-process' if args.local else 'Ray (embedded)'}"
    )
    header = (
        f"{'conc':>5} {'actors':>6} {'passed':>7} {'wall s':>7} {'tasks/min':>10} {'ideal/min':>10} {'vs ideal':>9} "
        f"{'task p50 s':>10} {'task p95 s':>10} {'CPU s/task':>11} {'machine':>13} {'peak MB':>8} {'growth MB':>10}"
    )
    with tempfile.TemporaryDirectory(prefix="workingset-eval-bench-") as tmp:
        root = Path(tmp)
        tasks, script = make_tasks(root, args.tasks, args.latency_s)
        rows = []
        for concurrency in args.concurrency:
            r = asyncio.run(one_level(root, tasks, script, concurrency, args.local))
            rows.append(r)
            print(f"  c={concurrency}: pool ready in {r['ready_s']:.1f} s, batch {r['wall_s']:.1f} s", flush=True)
        print(header)
        for r in rows:
            print(
                f"{r['concurrency']:>5} {r['actors']:>6} {r['passed']:>3}/{r['tasks']:<3} {r['wall_s']:>7.1f} "
                f"{r['per_min']:>10.1f} {r['ideal_per_min']:>10.1f} {r['vs_ideal']:>9.2f} {r['p50_s']:>10.2f} "
                f"{r['p95_s']:>10.2f} {r['cpu_per_task_s']:>11.3f} "
                f"{r['machine_cpu_per_task_s']:>6.3f} {r['machine_busy'] * 100:>4.0f} % "
                f"{r['peak_mb']:>8.0f} {r['growth_mb']:>10.0f}"
            )
        print("CPU s/task: this process tree; machine: all busy CPU s/task and the share of the cores busy")


if __name__ == "__main__":
    main()
