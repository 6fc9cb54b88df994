"""What grading one task costs, whole: by exit code, and per test (first and later runs).

    python -m benchmarks.grade_time [--rounds 3]

For each of the sample batch's tasks (benchmarks/eval_tasks): the workspace is made,
the task's scripted agent's edits are replayed onto it (its fix, or its wrong fix), the
patch is taken, and then `GradeStage.grade` runs — grading copy, setup, hidden tests,
the test command in the sandbox, the verdict — three ways:
- `exit-code`: the test command's exit code (what every grade was before per-test
  verdicts; a task can still ask for it with `grading.verdict`);
- `per-test, first`: the grader's own pytest run, and, as these tasks name no tests and
  have no hidden tests, the base's tests collected in a second copy (then cached);
- `per-test, cached`: the same with the base's tests already known.
Prints the median wall ms of `--rounds` runs per task and mode, and the verdicts.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from agents.settings import WorkingsetSettings
from cluster.eval import GradeStage, OutDir, SandboxedShell, Task, Workspace, Workspaces, load_tasks

ROOT = Path(__file__).resolve().parent / "eval_tasks"
MODES = ("exit-code", "per-test, first", "per-test, cached")


def _replay(script: Path, workspace: Path) -> None:
    """The scripted agent's file edits, applied directly."""
    for turn in yaml.safe_load(script.read_text())["turns"]:
        for call in turn.get("tool_calls") or []:
            args = call["input"]
            path = workspace / str(args.get("path", ""))
            if call["name"] == "Edit":
                path.write_text(path.read_text().replace(args["old_string"], args["new_string"], 1))
            elif call["name"] == "Write":
                path.write_text(args["content"])


async def _grade(
    stage: GradeStage, task: Task, ws: Workspace, spaces: Workspaces, name: str
) -> tuple[float, bool | None]:
    patch = await spaces.diff(ws)
    start = time.perf_counter()
    passed = await stage.grade(task, ws, patch, name, {})
    return (time.perf_counter() - start) * 1000, passed


async def _task(task: Task, root: Path, rounds: int) -> dict[str, tuple[float, bool | None]]:
    times: dict[str, list[float]] = {m: [] for m in MODES}
    verdicts: dict[str, bool | None] = {}
    for n in range(rounds):
        out = OutDir(root / f"{task.id}-{n}")
        spaces = Workspaces(out)
        shell = SandboxedShell(WorkingsetSettings(home=out.home))
        stage = GradeStage(out, spaces, shell, asyncio.Semaphore(1))
        ws = await spaces.prepare(task, task.id)
        script = (ROOT / str(task.model).removeprefix("scripted:")).resolve()
        _replay(script if script.is_file() else Path(str(task.model).removeprefix("scripted:")), ws.path)
        exit_code = task.model_copy(update={"grading": task.grading.model_copy(update={"verdict": "exit-code"})})
        for mode, graded in (("exit-code", exit_code), ("per-test, first", task), ("per-test, cached", task)):
            ms, verdicts[mode] = await _grade(stage, graded, ws, spaces, task.id)
            times[mode].append(ms)
        await spaces.discard(task.id)
    return {m: (statistics.median(times[m]), verdicts[m]) for m in MODES}


async def main(rounds: int) -> None:
    tasks = load_tasks(ROOT / "tasks.jsonl").tasks
    with tempfile.TemporaryDirectory(prefix="grade-time-") as tmp:
        # The sandbox's host checks (once per process) and the first interpreter start are not a grade's.
        await SandboxedShell(WorkingsetSettings(home=Path(tmp) / "home")).run("python3 -c pass", Path(tmp), 60)
        print(f"median wall ms of {rounds} runs per task (verdict in brackets)")
        print(f"{'task':<14}" + "".join(f"{m:>22}" for m in MODES))
        for task in tasks:
            row = await _task(task, Path(tmp), rounds)
            print(f"{task.id:<14}" + "".join(f"{ms:>14.0f} [{'pass' if ok else 'fail'}]" for ms, ok in row.values()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main(parser.parse_args().rounds))
