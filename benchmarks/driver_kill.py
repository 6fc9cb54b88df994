"""kill -9 of a `workingset eval` driver, then the same command: what results.jsonl keeps.

    python -m benchmarks.driver_kill [--tasks benchmarks/eval_tasks/tasks.jsonl]
                                     [--moments started 2-rows last-row] [--ray]

For each moment, a fresh --out: the batch is started as a subprocess (`--json`, sessions
in-process unless --ray), SIGKILLed when its event stream reaches the moment (the first
task started; N rows written; the last row written, while the summary and report are
being written), and then the same command is run again to its end. Reported per moment:

- rows lost: rows the killed run had written that the final file no longer has, as written;
- rows duplicated: tasks with more than one row at the end (a finished task run again);
- missing: tasks of the file without a row at the end;
- valid: every line of the final results.jsonl is a whole result row;
- statuses at the end, and whether the rerun exited 0 or 1 (1: a task failed on purpose).

Orphans: every process that was a descendant of the driver when it was killed (with
--ray, the embedded cluster's processes, its workers and their sandboxes) is watched
after the kill; `orphans` are those still alive `--grace` seconds later (default 30: a
bound that only catches processes that do not die with the driver, not a speed), named,
and then killed so that nothing is left behind; `gone_in_s` is how long the last one
that did go took. The rerun's own first line about them (the batch's marker of its
processes, cluster/eval/leftovers.py) is kept as `rerun_leftovers`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import psutil

from cluster.eval import ResultRow

ROOT = Path(__file__).resolve().parents[1]


def _moment(text: str) -> tuple[str, int]:
    """`started` | `N-rows` | `last-row` -> (event type, how many of them)."""
    if text == "started":
        return "task_started", 1
    if text == "last-row":
        return "task_finished", -1
    count, _, unit = text.partition("-")
    if unit != "rows" or not count.isdigit():
        raise argparse.ArgumentTypeError(f"a moment is started, N-rows or last-row, got {text!r}")
    return "task_finished", int(count)


def _rows(path: Path) -> tuple[list[str], bool]:
    if not path.exists():
        return [], True
    raw = path.read_bytes()
    lines = raw.decode("utf-8", "replace").splitlines()
    valid = raw.endswith(b"\n") or not raw
    for line in lines:
        try:
            ResultRow.model_validate_json(line)
        except ValueError:
            valid = False
    return lines, valid


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _kill_tree(proc: subprocess.Popen, children: list[psutil.Process], grace_s: float) -> tuple[list[str], float]:
    """SIGKILL the driver; (the descendants still alive after `grace_s`, named; the
    seconds the last one that went took). Survivors are killed afterwards."""
    killed = time.monotonic()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    gone_in = 0.0
    watching = list(children)
    while watching and time.monotonic() - killed < grace_s:
        still = [c for c in watching if _alive(c)]
        if len(still) < len(watching):
            gone_in = time.monotonic() - killed
        watching = still
        time.sleep(0.2)
    left = [c for c in watching if _alive(c)]
    names = []
    for c in left:
        with contextlib.suppress(psutil.Error):
            names.append(f"{c.pid} {' '.join(c.cmdline()[:1]) or c.name()}")
            c.kill()
    return names, round(gone_in, 1)


def _descendants(pid: int) -> list[psutil.Process]:
    with contextlib.suppress(psutil.Error):
        return psutil.Process(pid).children(recursive=True)
    return []


def one(tasks: Path, moment: str, *, ray: bool, work: Path, grace_s: float = 30.0) -> dict:
    kind, count = _moment(moment)
    total = sum(1 for line in tasks.read_text().splitlines() if line.strip())
    count = total if count == -1 else count
    out = work / moment
    command = [
        sys.executable,
        "-m",
        "cluster.terminal._cli",
        "eval",
        str(tasks),
        "--out",
        str(out),
        "--json",
        *([] if ray else ["--local"]),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    seen, children = 0, list[psutil.Process]()
    assert proc.stdout is not None
    for line in proc.stdout:
        seen += json.loads(line).get("type") == kind
        children = _descendants(proc.pid) or children
        if seen >= count:
            break
    children = _descendants(proc.pid) or children  # as it stands at the kill
    left, gone_in = _kill_tree(proc, children, grace_s)
    proc.stdout.close()
    before, _ = _rows(out / "results.jsonl")

    started = time.monotonic()
    rerun = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    after, valid = _rows(out / "results.jsonl")
    rows = [json.loads(line) for line in after if line.strip()]
    per_task = Counter(r["task_id"] for r in rows)
    return {
        "moment": moment,
        "rows_at_kill": len(before),
        "rows_lost": sum(1 for line in before if line not in after),
        "rows_duplicated": sum(n - 1 for n in per_task.values() if n > 1),
        "missing": total - len(per_task),
        "valid": valid,
        "statuses": dict(Counter(r["status"] for r in rows)),
        "rerun_exit": rerun.returncode,
        "rerun_s": round(time.monotonic() - started, 1),
        "processes_at_kill": len(children),
        "orphans": len(left),
        "orphaned": left,
        "gone_in_s": gone_in,
        "rerun_leftovers": next((line for line in rerun.stderr.splitlines() if "still running" in line), None),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tasks", type=Path, default=ROOT / "benchmarks" / "eval_tasks" / "tasks.jsonl")
    parser.add_argument("--moments", nargs="+", default=["started", "2-rows", "last-row"], type=str)
    parser.add_argument("--ray", action="store_true", help="sessions on the embedded Ray cluster (default: --local)")
    parser.add_argument(
        "--grace",
        type=float,
        default=30.0,
        help="seconds after the kill by which every process of the batch must be gone",
    )
    args = parser.parse_args(argv)
    for moment in args.moments:
        _moment(moment)
    results = []
    with tempfile.TemporaryDirectory(prefix="driver-kill-") as work:
        for moment in args.moments:
            result = one(args.tasks.resolve(), moment, ray=args.ray, work=Path(work), grace_s=args.grace)
            results.append(result)
            print(json.dumps(result), flush=True)
    lost = sum(r["rows_lost"] for r in results)
    dup = sum(r["rows_duplicated"] for r in results)
    missing = sum(r["missing"] for r in results)
    orphans = sum(r["orphans"] for r in results)
    print(
        f"{len(results)} kill timings: rows lost {lost}, rows duplicated {dup}, tasks missing {missing}, "
        f"file valid {'yes' if all(r['valid'] for r in results) else 'NO'}, orphans after the kill {orphans}"
    )
    return 0 if not (lost or dup or missing or orphans) and all(r["valid"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
