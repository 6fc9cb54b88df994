"""Wall time of the test suite, file by file: each named test file run alone by pytest in a
fresh interpreter (its session fixtures, a Ray cluster among them, started for it alone),
with the load average before and after beside it, since on a shared machine the figure
means little without it; and the CPU seconds of the processes that were waited for
(pytest, and what it reaped: a lower bound, since a process re-parented before it ends,
as some of Ray's are, is not counted).

    python -m benchmarks.suite_files tests/benchmarks/test_chaos_batch.py tests/cluster/cli/test_cli.py [--root DIR]

`--root` is the checkout to run (its tests, its code first on PYTHONPATH): the current one
by default; give another worktree to measure it before a change, on the same machine.
One JSON line per file, then a total.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _children_cpu_s() -> float:
    """User + system seconds of the waited-for descendants so far (a process reaps its own
    children, so a raylet's workers count once the raylet is reaped)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_file(root: Path, test_file: str, timeout_s: float) -> dict:
    """One pytest run of `test_file` under `root`: seconds, exit code, pytest's last line."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    before = _load()
    cpu_before = _children_cpu_s()
    started = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_file],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        code, last = proc.returncode, (proc.stdout.strip().splitlines() or [""])[-1]
    except subprocess.TimeoutExpired:
        code, last = -1, f"timed out after {timeout_s:.0f} s"
    return {
        "file": test_file,
        "seconds": round(time.monotonic() - started, 1),
        "cpu_s": round(_children_cpu_s() - cpu_before, 1),
        "exit": code,
        "pytest": last,
        "load_before": before,
        "load_after": _load(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="test files, relative to --root")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the checkout to run (default: here)")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds per file before it is stopped")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    rows = []
    for test_file in args.files:
        row = run_file(root, test_file, args.timeout)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(
        json.dumps(
            {
                "root": str(root),
                "files": len(rows),
                "seconds": round(sum(r["seconds"] for r in rows), 1),
                "cpu_s": round(sum(r["cpu_s"] for r in rows), 1),
                "failed": [r["file"] for r in rows if r["exit"] != 0],
            }
        ),
        flush=True,
    )
    return 1 if any(r["exit"] != 0 for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
