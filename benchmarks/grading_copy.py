"""What grading in a fresh copy costs on the host, per task, stage by stage.

    python -m benchmarks.grading_copy [--repo DIR ...] [--rounds 5]

For each source (default: the sample batch's six repositories, and this checkout's own
git repository as a larger one): the trusted base, the agent's workspace cloned from
it, the patch taken against the base (after a one-line change), the grading copy with
the patch applied, and the cleanup. Prints the median of `--rounds` runs: wall ms, and
CPU ms (this process and the git processes it ran, user + system), which a busy machine
inflates less than wall time. The setup and test commands are the task's own and not
counted here; neither are sandbox starts (benchmarks/sandbox_overhead.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from cluster.eval import OutDir, Task, Workspaces

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("base + workspace", "patch", "grading copy", "cleanup")


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class _Clock:
    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def start(self) -> None:
        self._wall, self._cpu = time.perf_counter(), _cpu()

    def stop(self, stage: str) -> None:
        self.wall[stage] = time.perf_counter() - self._wall
        self.cpu[stage] = _cpu() - self._cpu


async def _round(source: Path, out: Path) -> _Clock:
    spaces = Workspaces(OutDir(out))
    task = Task(id="t", repo=str(source), instruction="i", test_command="true")
    clock = _Clock()
    clock.start()
    ws = await spaces.prepare(task, "t")
    clock.stop("base + workspace")
    (ws.path / "BENCH_CHANGE.txt").write_text("a change\n")
    clock.start()
    patch = await spaces.diff(ws)
    clock.stop("patch")
    clock.start()
    await spaces.grading_copy(ws, patch, "t", timeout_s=600)
    clock.stop("grading copy")
    clock.start()
    await spaces.discard("t")
    clock.stop("cleanup")
    return clock


def _describe(source: Path) -> str:
    if (source / ".git").exists():
        files = subprocess.run(["git", "ls-files"], cwd=source, capture_output=True, text=True).stdout.count("\n")
        counts = subprocess.run(["git", "count-objects", "-v"], cwd=source, capture_output=True, text=True).stdout
        kib = sum(int(line.split()[1]) for line in counts.splitlines() if line.startswith(("size:", "size-pack:")))
        return f"{source.name} (git, {files} files, {kib / 1024:.1f} MB of objects)"
    files = sum(1 for p in source.rglob("*") if p.is_file())
    return f"{source.name} (plain directory, {files} files)"


async def main(sources: list[Path], rounds: int) -> None:
    print(f"wall ms / CPU ms, median of {rounds}; load average {os.getloadavg()[0]:.1f} at the start\n")
    print(f"| source | {' | '.join(STAGES)} | total |")
    print(f"|---|{'---:|' * (len(STAGES) + 1)}")
    for source in sources:
        runs = []
        for _ in range(rounds):
            with tempfile.TemporaryDirectory(prefix="grading-copy-bench-") as tmp:
                runs.append(await _round(source, Path(tmp)))
        wall = [statistics.median(r.wall[s] for r in runs) * 1000 for s in STAGES]
        cpu = [statistics.median(r.cpu[s] for r in runs) * 1000 for s in STAGES]
        cells = " | ".join(f"{w:.0f} / {c:.0f}" for w, c in zip(wall, cpu, strict=True))
        print(f"| {_describe(source)} | {cells} | {sum(wall):.0f} / {sum(cpu):.0f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repo", action="append", type=Path, help="a source to measure (repeatable)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    defaults = sorted((ROOT / "benchmarks" / "eval_tasks" / "repos").iterdir()) + [ROOT]
    asyncio.run(main([p.resolve() for p in args.repo] if args.repo else defaults, args.rounds))
