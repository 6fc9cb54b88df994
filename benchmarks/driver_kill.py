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

With --ray the embedded Ray cluster's processes are descendants of the killed driver;
any still alive after the kill are named and killed, so nothing is left behind.
"""

from __future__ import annotations

import argparse
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

from cluster.eval.results import ResultRow

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


def _kill_tree(proc: subprocess.Popen, children: list[psutil.Process]) -> list[str]:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    time.sleep(2)  # give processes that share the driver's fate the time to go
    left = [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    names = [f"{c.pid} {c.name()}" for c in left]
    for c in left:
        c.kill()
    return names


def one(tasks: Path, moment: str, *, ray: bool, work: Path) -> dict:
    kind, count = _moment(moment)
    total = sum(1 for line in tasks.read_text().splitlines() if line.strip())
    count = total if count == -1 else count
    out = work / moment
    command = [sys.executable, "-m", "cluster.cli", "eval", str(tasks), "--out", str(out), "--json",
               *([] if ray else ["--local"])]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    seen, children = 0, list[psutil.Process]()
    assert proc.stdout is not None
    for line in proc.stdout:
        seen += json.loads(line).get("type") == kind
        children = psutil.Process(proc.pid).children(recursive=True) or children
        if seen >= count:
            break
    left = _kill_tree(proc, children)
    proc.stdout.close()
    before, _ = _rows(out / "results.jsonl")

    started = time.monotonic()
    rerun = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    after, valid = _rows(out / "results.jsonl")
    rows = [json.loads(line) for line in after if line.strip()]
    per_task = Counter(r["task_id"] for r in rows)
    return {
        "moment": moment, "rows_at_kill": len(before), "rows_lost": sum(1 for line in before if line not in after),
        "rows_duplicated": sum(n - 1 for n in per_task.values() if n > 1), "missing": total - len(per_task),
        "valid": valid, "statuses": dict(Counter(r["status"] for r in rows)), "rerun_exit": rerun.returncode,
        "rerun_s": round(time.monotonic() - started, 1), "left_after_kill": left,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tasks", type=Path, default=ROOT / "benchmarks" / "eval_tasks" / "tasks.jsonl")
    parser.add_argument("--moments", nargs="+", default=["started", "2-rows", "last-row"], type=str)
    parser.add_argument("--ray", action="store_true", help="sessions on the embedded Ray cluster (default: --local)")
    args = parser.parse_args(argv)
    for moment in args.moments:
        _moment(moment)
    results = []
    with tempfile.TemporaryDirectory(prefix="driver-kill-") as work:
        for moment in args.moments:
            result = one(args.tasks.resolve(), moment, ray=args.ray, work=Path(work))
            results.append(result)
            print(json.dumps(result), flush=True)
    lost = sum(r["rows_lost"] for r in results)
    dup = sum(r["rows_duplicated"] for r in results)
    missing = sum(r["missing"] for r in results)
    print(f"{len(results)} kill timings: rows lost {lost}, rows duplicated {dup}, tasks missing {missing}, "
          f"file valid {'yes' if all(r['valid'] for r in results) else 'NO'}")
    return 0 if not (lost or dup or missing) and all(r["valid"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
