"""The chaos batch: an eval batch on Ray whose session actors, tool workers, summarizer
workers and one raylet are killed while it runs, against the same batch unperturbed.

    python -m benchmarks.chaos_batch [--tasks 50] [--timings steady bursts late] [--concurrency 8]

Each task is a copy of one small git repository with a one-line bug (benchmarks/calc_batch.py)
and its own scripted model: it reads the file, writes long notes and runs two Bash commands
(a sandboxed tool task each) whose output pushes the working set over a small context
window, so older history is cleared and then summarized through the compactor pool; then
it makes its Edit (a fix that names the task, so every patch differs) and runs the test.

First the batch runs unperturbed on the head node alone; then, for each kill timing, on a
fresh --out with one more raylet (added with the batch, removed mid-run):

- steady: one kill every `--every` seconds, going round the kinds;
- bursts: one kill of each kind at once, every `--burst-every` seconds;
- late: once 60% of the rows are written, one kill every `--every` seconds until the batch ends;

killing (only once the last actor of the kind killed is back, unless --stack-kills), with SIGKILL by pid, a SessionActor or a SummarizerActor (pids from the GCS actor
table, which Ray's state API reads) or a running tool call: a Bash command's own process,
a child of a SessionActor (`bwrap`, or `bash` without the sandbox: Bash on the session's
node runs in its process, cluster.tool_tasks), as the kernel's OOM killer would, or a
worker process running a tool task (a descendant of this process whose title Ray set to
`ray::run_tool_task`). The raylet goes once a quarter of
the rows are written (steady), with the second burst, or with the late kills.

Reported per timing: tasks that ended with the unperturbed run's grade and byte-identical
patch (N of N), rows lost (tasks without a row), rows duplicated (rows beyond one per task),
kills landed per kind (the process existed and SIGKILL reached it), and the rows' own
counts of actor restarts, node losses, infrastructure retries (`retries`: a task run
again from its start) and infra_error rows (a task the infrastructure failed through
every retry: a plain rerun would run it again; none is expected), and the tool calls
whose worker died under them (`interrupted_calls`: the model got the interrupted-call
result, the task went on).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import io
import json
import logging
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import ray
from ray._private import state as gcs_state

from agents.settings import WorkingsetSettings
from benchmarks.calc_batch import GRADER, calc_repo, script, task, tasks_file
from cluster.eval import EvalOptions, EvalRunner, JsonReporter, RayHost, load_tasks

KINDS = ("session", "tool", "summarizer")
TIMINGS = ("steady", "bursts", "late")
_ACTOR_CLASSES = {"session": "SessionActor", "summarizer": "SummarizerActor"}
_TOOL_TITLE = "ray::run_tool_task"
_COMMAND_PROGRAMS = {"bwrap", "bash", "sandbox-launcher"}  # a Bash call's process (tools.sandbox.launcher)

# A small window, so that each task's history is cleared and then summarized once: budget
# (10_000 - 1_000) x 0.8 = 7_200 tokens, about 3_700 of them system prompt and tool schemas.
_COMPACTION = {
    "strategy": "clear-then-summarize",
    "context_window": 10_000,
    "preserve_recent_messages": 2,
    "preserve_recent_tool_uses": 1,
    "min_gain_tokens": 200,
}


# -- the batch ---------------------------------------------------------------------------


def task_turns(task_id: str) -> list[dict]:
    """The scripted session of one task: read, bloat the history, fix, verify."""
    notes = "Notes. " + "Every module was checked. " * 185
    fix = {"path": "calc.py", "old_string": "a - b", "new_string": f"a + b  # fixed in {task_id}"}
    return [
        {"text": "Reading.", "tool_calls": [{"name": "Read", "input": {"path": "calc.py"}}]},
        {
            "text": notes,
            "tool_calls": [
                {
                    "name": "Bash",
                    "input": {"command": "sleep 0.5; head -c 1600 /dev/zero | tr '\\0' a; echo; echo a-done"},
                }
            ],
        },
        {
            "text": "Now the big log.",
            "tool_calls": [
                {
                    "name": "Bash",
                    "input": {"command": "sleep 0.5; head -c 8000 /dev/zero | tr '\\0' b; echo; echo b-done"},
                }
            ],
        },
        {"text": "Fixing.", "tool_calls": [{"name": "Edit", "input": fix}]},
        {"text": "Testing.", "tool_calls": [{"name": "Bash", "input": {"command": GRADER}}]},
    ]


def make_batch(root: Path, count: int) -> Path:
    """`count` tasks on one repository, each with its own scripted model; the task file."""
    repo = calc_repo(root)
    rows = [
        task(f"t{i:02d}", repo, model=f"scripted:{script(root, f't{i:02d}', task_turns(f't{i:02d}'), 'Fixed.')}")
        for i in range(count)
    ]
    return tasks_file(root / "tasks.jsonl", rows)


def batch_settings(home: Path) -> WorkingsetSettings:
    return WorkingsetSettings.model_validate(
        {
            "home": home,
            "compact": _COMPACTION,
            "agent": {"max_output_tokens": 1_000},
            "permissions": {"mode": "accept-edits", "allow": ["Bash"], "headless": "deny-asks"},
        }
    )


class CountingReporter(JsonReporter):
    """Keeps the event stream, and counts the rows written so far."""

    def __init__(self) -> None:
        self.buffer = io.StringIO()
        super().__init__(self.buffer)
        self.started = 0
        self.finished = 0
        self.total = 0

    def event(self, kind: str, **fields) -> None:
        super().event(kind, **fields)
        if kind == "eval_started":
            self.total = fields["to_run"]
        self.started += kind == "task_started"
        self.finished += kind == "task_finished"


async def run_batch(tasks: Path, out: Path, *, concurrency: int, chaos: Chaos | None = None) -> dict:
    """Run the batch into `out` (with `chaos` alongside it); returns {"summary", "rows", "wall_s"}."""
    reporter = CountingReporter()
    runner = EvalRunner(
        batch_settings(out / "ignored"),
        load_tasks(tasks).tasks,
        EvalOptions(out=out, concurrency=concurrency),
        host=RayHost(actors=2),
        reporter=reporter,
    )
    started = time.monotonic()
    killing = asyncio.ensure_future(chaos.run(reporter)) if chaos else None
    try:
        summary = await runner.run()
    finally:
        if chaos is not None and killing is not None:
            chaos.stop()
            await killing
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]
    return {
        "summary": summary,
        "rows": rows,
        "wall_s": round(time.monotonic() - started, 1),
        "events": reporter.buffer.getvalue(),
    }


def patch_of(out: Path, row: dict) -> bytes | None:
    return (out / row["patch_path"]).read_bytes() if row.get("patch_path") else None


def _events(out: Path, row: dict) -> list[dict]:
    path = out / row["events_path"]
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def compare(tasks: Path, base_out: Path, base: dict, out: Path, perturbed: dict) -> dict:
    """The figures of one perturbed run against the unperturbed one."""
    ids = [t.id for t in load_tasks(tasks).tasks]
    before = {r["task_id"]: r for r in base["rows"]}
    per_task = Counter(r["task_id"] for r in perturbed["rows"])
    after = {r["task_id"]: r for r in perturbed["rows"]}
    right = [
        i
        for i in ids
        if i in after
        and after[i]["status"] == before[i]["status"]
        and patch_of(out, after[i]) == patch_of(base_out, before[i])
    ]
    wrong = {i: after[i]["status"] for i in ids if i in after and i not in right}
    rows = perturbed["rows"]
    interrupted = sum(
        1
        for r in rows
        if r.get("events_path")
        for e in _events(out, r)
        if e.get("type") == "tool_result" and "interrupted when its worker died" in e.get("content", "")
    )
    return {
        "right": len(right),
        "tasks": len(ids),
        "rows_lost": sum(1 for i in ids if i not in after),
        "rows_duplicated": sum(n - 1 for n in per_task.values()),
        "wrong": wrong,
        "statuses": dict(Counter(r["status"] for r in rows)),
        "actor_restarts": sum(r["actor_restarts"] for r in rows),
        "node_losses": sum(r["node_losses"] for r in rows),
        "retries": sum(r["retries"] for r in rows),
        "infra_errors": sum(r["status"] == "infra_error" for r in rows),
        "interrupted_calls": interrupted,
        "compactions": dict(sum((Counter(r["compaction_kinds"]) for r in rows), Counter())),
        "wall_s": perturbed["wall_s"],
    }


# -- the chaos ---------------------------------------------------------------------------


def _ours() -> set[int]:
    """Pids of this process's descendants (the Ray cluster it started): other processes on
    the machine, other clusters' included, are never touched."""
    return {p.pid for p in psutil.Process().children(recursive=True)}


def _actor_pids(kind: str) -> list[int]:
    rows = gcs_state.actors().values()
    return [
        r["Pid"] for r in rows if r["ActorClassName"] == _ACTOR_CLASSES[kind] and r["State"] == "ALIVE" and r["Pid"]
    ]


def restarting(kind: str) -> int:
    """Actors of `kind` that are restarting now (killed, not back yet)."""
    if kind not in _ACTOR_CLASSES:
        return 0
    rows = gcs_state.actors().values()
    return sum(1 for r in rows if r["ActorClassName"] == _ACTOR_CLASSES[kind] and r["State"] == "RESTARTING")


def _tool_call_pids() -> list[int]:
    """Tool task workers, and the commands Bash runs as children of our session actors."""
    pids = []
    sessions = set(_actor_pids("session"))
    for pid in _ours():
        try:
            process = psutil.Process(pid)
            title = process.cmdline()
            parent = process.ppid()
        except psutil.Error:
            continue
        if title and (
            title[0].startswith(_TOOL_TITLE) or (parent in sessions and Path(title[0]).name in _COMMAND_PROGRAMS)
        ):
            pids.append(pid)
    return pids


def victims(kind: str) -> list[int]:
    """Live processes of `kind` in this process's cluster."""
    if kind == "tool":
        return _tool_call_pids()
    ours = _ours()
    return [pid for pid in _actor_pids(kind) if pid in ours]


@dataclass
class Chaos:
    """Kills processes of the batch's cluster on one of the TIMINGS, and removes a raylet."""

    timing: str
    remove_raylet: Callable[[], None] | None = None
    every_s: float = 3.0
    burst_every_s: float = 15.0
    late_fraction: float = 0.6
    raylet_at_burst: int = 2
    max_bursts: int | None = None  # None: bursts go on until the batch ends
    landed: Counter = field(default_factory=Counter)
    missed: Counter = field(default_factory=Counter)  # no live process of that kind at the moment
    raylet_removed_at: float | None = None  # fraction of rows written then
    # Kill an actor only once the last one of its kind killed is back: kills never outpace
    # the cluster's restarts (on a loaded machine a restart can take longer than the
    # interval, and stacked kills then keep every actor down: a different experiment).
    wait_for_restart: bool = True
    max_hold_s: float = 60.0  # an actor that never comes back (its node went) holds no kill longer
    waited_s: float = 0.0  # time kills were held back for a restart
    _stopped: bool = False
    _turn: int = 0

    def stop(self) -> None:
        self._stopped = True

    async def run(self, reporter: CountingReporter) -> None:
        while not self._stopped and not reporter.started:
            await asyncio.sleep(0.2)
        plan = {"steady": self._steady, "bursts": self._bursts, "late": self._late}[self.timing]
        await plan(reporter)

    async def _steady(self, reporter: CountingReporter) -> None:
        while not self._stopped:
            await self.kill(KINDS[self._turn % len(KINDS)])
            self._turn += 1
            if reporter.total and reporter.finished >= reporter.total / 4:
                await self.raylet(reporter)
            await self._sleep(self.every_s)

    async def _bursts(self, reporter: CountingReporter) -> None:
        bursts = 0
        while not self._stopped and (self.max_bursts is None or bursts < self.max_bursts):
            await asyncio.gather(*(self.kill(kind) for kind in KINDS))
            bursts += 1
            if bursts == self.raylet_at_burst:
                await self.raylet(reporter)
            await self._sleep(self.burst_every_s)

    async def _late(self, reporter: CountingReporter) -> None:
        while not self._stopped and not (reporter.total and reporter.finished >= reporter.total * self.late_fraction):
            await asyncio.sleep(0.2)
        await self.raylet(reporter)
        while not self._stopped:
            await self.kill(KINDS[self._turn % len(KINDS)])
            self._turn += 1
            await self._sleep(self.every_s)

    async def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self._stopped and time.monotonic() < end:
            await asyncio.sleep(0.1)

    async def kill(self, kind: str) -> None:
        held = time.monotonic()
        while (
            self.wait_for_restart
            and not self._stopped
            and time.monotonic() - held < self.max_hold_s
            and await asyncio.to_thread(restarting, kind) > 0
        ):
            await asyncio.sleep(0.5)
        self.waited_s += time.monotonic() - held
        if self._stopped:
            return
        pids = await asyncio.to_thread(victims, kind)
        start = self._turn % len(pids) if pids else 0
        for pid in pids[start:] + pids[:start]:  # not always the same actor
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            self.landed[kind] += 1
            return
        self.missed[kind] += 1

    async def raylet(self, reporter: CountingReporter) -> None:
        if self.remove_raylet is None or self.raylet_removed_at is not None:
            return
        self.raylet_removed_at = round(reporter.finished / max(reporter.total, 1), 2)
        await asyncio.to_thread(self.remove_raylet)
        self.landed["raylet"] += 1


# -- the figure --------------------------------------------------------------------------


def _start_cluster():
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 2,
            "include_dashboard": False,
            "object_store_memory": 150 * 1024**2,
            "resources": {"workingset_sandbox": 1},
        },
    )
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    return cluster


async def measure(
    count: int,
    timings: list[str],
    concurrency: int,
    work: Path,
    *,
    every_s: float,
    burst_every_s: float,
    wait_for_restart: bool = True,
) -> list[dict]:
    cluster = _start_cluster()
    try:
        tasks = make_batch(work / "batch", count)
        base_out = work / "unperturbed"
        base = await run_batch(tasks, base_out, concurrency=concurrency)
        print(
            json.dumps(
                {
                    "timing": "unperturbed",
                    "statuses": base["summary"]["statuses"],
                    "wall_s": base["wall_s"],
                    "load": os.getloadavg(),
                }
            ),
            flush=True,
        )
        results = []
        for timing in timings:
            node = cluster.add_node(num_cpus=1, resources={"workingset_sandbox": 1}, object_store_memory=80 * 1024**2)
            cluster.wait_for_nodes()
            chaos = Chaos(
                timing,
                remove_raylet=functools.partial(cluster.remove_node, node),
                every_s=every_s,
                burst_every_s=burst_every_s,
                wait_for_restart=wait_for_restart,
            )
            out = work / timing
            perturbed = await run_batch(tasks, out, concurrency=concurrency, chaos=chaos)
            figures = {
                "timing": timing,
                **compare(tasks, base_out, base, out, perturbed),
                "kills_landed": dict(chaos.landed),
                "kills_missed": dict(chaos.missed),
                "kills_held_for_restarts_s": round(chaos.waited_s, 1),
                "raylet_removed_at": chaos.raylet_removed_at,
                "load": os.getloadavg(),
            }
            results.append(figures)
            print(json.dumps(figures), flush=True)
        return results
    finally:
        ray.shutdown()
        cluster.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--timings", nargs="+", choices=TIMINGS, default=list(TIMINGS))
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--every", type=float, default=3.0, help="seconds between kills (steady, late)")
    parser.add_argument("--burst-every", type=float, default=15.0, help="seconds between bursts")
    parser.add_argument(
        "--stack-kills",
        action="store_true",
        help="kill actors of a kind even while the last one killed is still restarting",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="chaos-batch-") as work:
        results = asyncio.run(
            measure(
                args.tasks,
                args.timings,
                args.concurrency,
                Path(work),
                every_s=args.every,
                burst_every_s=args.burst_every,
                wait_for_restart=not args.stack_kills,
            )
        )
    for r in results:
        print(
            f"{r['timing']}: {r['right']}/{r['tasks']} right grade and same patch, rows lost {r['rows_lost']}, "
            f"duplicated {r['rows_duplicated']}, kills landed {r['kills_landed']}, infra retries {r['retries']}, "
            f"infra_error rows {r['infra_errors']}, interrupted tool calls {r['interrupted_calls']}"
        )
    bad = any(r["right"] != r["tasks"] or r["rows_lost"] or r["rows_duplicated"] for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
