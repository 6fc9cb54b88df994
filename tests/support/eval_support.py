"""What the `workingset eval` tests share: a git repository with a one-line bug, scripted
models that fix it (or not), task files, and reading results.jsonl back."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.calc_batch import GRADER, calc_repo, git, script, task, tasks_file
from cluster.terminal._cli import main
from tests.support import ROOT

__all__ = [
    "GRADER",
    "ROOT",
    "calc_repo",
    "fix_turns",
    "git",
    "result_rows",
    "rows_by_id",
    "run_eval",
    "script",
    "task",
    "tasks_file",
]


def fix_turns(sleep_ms: int = 0) -> list[dict]:
    return [
        {"text": "Reading.", "sleep_ms": sleep_ms, "tool_calls": [{"name": "Read", "input": {"path": "calc.py"}}]},
        {
            "text": "Fixing.",
            "tool_calls": [
                {"name": "Edit", "input": {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}}
            ],
        },
        {"text": "Testing.", "tool_calls": [{"name": "Bash", "input": {"command": GRADER}}]},
        {"text": "Fixed add()."},
    ]


def result_rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def rows_by_id(out: Path) -> dict[str, dict]:
    return {r["task_id"]: r for r in result_rows(out)}


def run_eval(tasks: Path, out: Path, model: Path, *extra: str) -> int:
    return main(["eval", str(tasks), "--model", f"scripted:{model}", "--out", str(out), "--local", *extra])
