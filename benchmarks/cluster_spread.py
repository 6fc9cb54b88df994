"""How a batch spreads over the nodes of a simulated multi-node Ray cluster.

    python -m benchmarks.cluster_spread [--nodes 2 3] [--tasks 24] [--concurrency 12] [--latency-s 0.5]

For each cluster size, starts a `ray.cluster_utils.Cluster` on this machine (several
raylets, never `ray start`): a head with 2 CPUs, then nodes of 1, 2, 1, ... CPUs, every
one declaring `workingset_sandbox`. The tasks of benchmarks/eval_throughput.py (one
repository with a one-line bug per task, a scripted model fixing it in 3 calls of
`--latency-s` each) run through `workingset eval`'s runner on RayHost. Reported per
node: the tasks whose row names it, and the CPU seconds (user + system) of the node's
raylet and every process under it (its workers: SessionActors, TaskNode, tool tasks,
grades, the sandboxed commands) during the batch — a process gone before the end counts
only if its parent waited for it. The driver (this process) and the GCS are not a node's.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import io
import json
import logging
import tempfile
from pathlib import Path

import psutil
import ray
from ray.cluster_utils import Cluster

from agents.settings import load_settings
from benchmarks.eval_throughput import make_tasks
from cluster.eval import EVAL_ALLOW, EvalOptions, EvalRunner, JsonReporter, RayHost, load_tasks

_STORE = 80 * 1024**2


def _cpu_under(pid: int) -> float:
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for proc in procs:
        try:
            t = proc.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            continue
    return total


def _raylet_pid(node) -> int:
    return node.all_processes["raylet"][0].process.pid


async def _batch(root: Path, nodes: int, tasks: Path, script: Path, concurrency: int) -> None:
    out = root / f"out-{nodes}"
    settings = load_settings(
        root,
        {
            "model": f"scripted:{script}",
            "home": str(out / "home"),
            "permissions": {"mode": "accept-edits", "headless": "deny-asks", "allow": EVAL_ALLOW},
        },
    )
    loaded = load_tasks(tasks)
    runner = EvalRunner(
        settings,
        loaded.tasks,
        EvalOptions(out=out, concurrency=concurrency),
        host=RayHost(actors=1),
        reporter=JsonReporter(io.StringIO()),
    )
    await runner.run()


def one_size(root: Path, nodes: int, tasks: Path, script: Path, concurrency: int) -> None:
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 2,
            "include_dashboard": False,
            "object_store_memory": _STORE,
            "resources": {"workingset_sandbox": 1},
        },
    )
    assert cluster.head_node is not None
    members = [cluster.head_node]
    for i in range(nodes - 1):
        members.append(
            cluster.add_node(num_cpus=1 + i % 2, resources={"workingset_sandbox": 1}, object_store_memory=_STORE)
        )
    try:
        ray.init(address=cluster.address, log_to_driver=False, logging_level=logging.WARNING)
        cluster.wait_for_nodes()
        before = {m.node_id: _cpu_under(_raylet_pid(m)) for m in members}
        asyncio.run(_batch(root, nodes, tasks, script, concurrency))
        after = {m.node_id: _cpu_under(_raylet_pid(m)) for m in members}
        rows = (root / f"out-{nodes}" / "results.jsonl").read_text().splitlines()
        placed = collections.Counter(json.loads(r)["node"] for r in rows)
        passed = sum(1 for r in rows if json.loads(r)["status"] == "passed")
        print(f"{nodes} nodes: {len(rows)} tasks, {passed} passed")
        print(f"  {'node':>14} {'CPUs':>5} {'tasks':>6} {'CPU s':>8}")
        for m, cpus in zip(members, [2] + [1 + i % 2 for i in range(nodes - 1)], strict=True):
            label = ("head " if m is cluster.head_node else "") + m.node_id[:8]
            print(f"  {label:>14} {cpus:>5} {placed.get(m.node_id, 0):>6} {after[m.node_id] - before[m.node_id]:>8.1f}")
    finally:
        ray.shutdown()
        cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--tasks", type=int, default=24)
    parser.add_argument("--concurrency", type=int, default=12)
    parser.add_argument("--latency-s", type=float, default=0.5)
    args = parser.parse_args()
    print(
        f"{psutil.cpu_count()} cores on this machine; {args.tasks} tasks, concurrency {args.concurrency}, "
        f"3 calls x {args.latency_s:g} s"
    )
    with tempfile.TemporaryDirectory(prefix="workingset-spread-") as tmp:
        root = Path(tmp)
        tasks, script = make_tasks(root, args.tasks, args.latency_s)
        for nodes in args.nodes:
            one_size(root, nodes, tasks, script, args.concurrency)


if __name__ == "__main__":
    main()
