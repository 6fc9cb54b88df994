"""What the `workingset eval` tests share: a git repository with a one-line bug, scripted
models that fix it (or not), task files, and reading results.jsonl back."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cluster.cli import main

GRADER = "python3 test_calc.py"
ROOT = Path(__file__).resolve().parents[1]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def calc_repo(root: Path, name: str = "calc") -> Path:
    """A git repository with a one-line bug and a test that shows it."""
    repo = root / name
    repo.mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_calc.py").write_text("from calc import add\n\nassert add(2, 3) == 5, add(2, 3)\nprint('ok')\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    return repo


def script(root: Path, name: str, turns: list[dict], final: str = "Done.") -> Path:
    path = root / f"{name}.json"
    path.write_text(json.dumps({"turns": turns, "final_text": final}))
    return path


def fix_turns(sleep_ms: int = 0) -> list[dict]:
    return [
        {"text": "Reading.", "sleep_ms": sleep_ms, "tool_calls": [{"name": "Read", "input": {"path": "calc.py"}}]},
        {"text": "Fixing.", "tool_calls": [
            {"name": "Edit", "input": {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}}]},
        {"text": "Testing.", "tool_calls": [{"name": "Bash", "input": {"command": GRADER}}]},
        {"text": "Fixed add()."},
    ]


def tasks_file(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def task(task_id: str, repo: Path | str, **fields) -> dict:
    return {"id": task_id, "repo": str(repo), "instruction": "add() is wrong; fix it.", "test_command": GRADER, **fields}


def result_rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def rows_by_id(out: Path) -> dict[str, dict]:
    return {r["task_id"]: r for r in result_rows(out)}


def run_eval(tasks: Path, out: Path, model: Path, *extra: str) -> int:
    return main(["eval", str(tasks), "--model", f"scripted:{model}", "--out", str(out), "--local", *extra])
