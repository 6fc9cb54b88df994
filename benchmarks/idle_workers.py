"""What an idle Ray process costs: CPU per second of each process of an embedded cluster
while nothing runs.

    python -m benchmarks.idle_workers [--actors 6] [--seconds 10]

Starts the embedded cluster (as `workingset` does), `--actors` actors that do nothing,
waits for start-up to settle, then reads every process's CPU time over `--seconds`:
the driver, Ray's own processes (GCS, raylet, agents) and each idle worker. Ray's core
runs a 10 ms periodic check in every worker process (`CoreWorker::RunTaskExecutionLoop`),
so each one costs CPU whether or not it has work: that is what a pre-started actor or
an idle pooled one costs a batch for as long as it lives.
"""

from __future__ import annotations

import argparse
import time

import psutil
import ray

from benchmarks.cpu_tree import load_average
from cluster.connection import connect


@ray.remote(num_cpus=0)
class Idle:
    def ready(self) -> bool:
        return True


def cpu_by_process() -> dict[int, tuple[str, float]]:
    me = psutil.Process()
    found = {}
    for proc in [me, *me.children(recursive=True)]:
        try:
            times = proc.cpu_times()
            found[proc.pid] = ("driver" if proc.pid == me.pid else proc.name(), times.user + times.system)
        except psutil.NoSuchProcess:
            continue
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actors", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    connect()
    actors = [Idle.remote() for _ in range(args.actors)]  # type: ignore[attr-defined]  # added by @ray.remote
    ray.get([a.ready.remote() for a in actors])
    time.sleep(5)  # let start-up (imports, registration) finish
    before = cpu_by_process()
    time.sleep(args.seconds)
    after = cpu_by_process()
    rates: dict[str, list[float]] = {}
    for pid, (name, cpu) in after.items():
        if pid in before:
            rates.setdefault(name, []).append((cpu - before[pid][1]) * 1000 / args.seconds)
    print(f"idle for {args.seconds:g} s with {args.actors} idle actors ({load_average()})")
    print(f"{'process':<28} {'count':>5} {'CPU ms/s each':>14} {'total':>8}")
    for name, values in sorted(rates.items(), key=lambda kv: -sum(kv[1])):
        print(f"{name[:28]:<28} {len(values):>5} {sum(values) / len(values):>14.1f} {sum(values):>8.1f}")
    print(f"{'all':<28} {sum(len(v) for v in rates.values()):>5} {'':>14} {sum(sum(v) for v in rates.values()):>8.1f}")
    for actor in actors:
        ray.kill(actor)


if __name__ == "__main__":
    main()
