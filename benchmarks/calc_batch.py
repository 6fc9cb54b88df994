"""The pieces of a small eval batch, shared by benchmarks (chaos_batch) and the eval tests:
a git repository with a one-line bug and a test that shows it, a scripted model's file,
task rows and the task file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

__all__ = ["GRADER", "calc_repo", "git", "script", "task", "tasks_file"]

GRADER = "python3 test_calc.py"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


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
    """A scripted model's file (`scripted:PATH`): its turns and final text."""
    path = root / f"{name}.json"
    path.write_text(json.dumps({"turns": turns, "final_text": final}))
    return path


def tasks_file(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def task(task_id: str, repo: Path | str, **fields) -> dict:
    """One task row on `repo`, graded by GRADER."""
    return {
        "id": task_id,
        "repo": str(repo),
        "instruction": "add() is wrong; fix it.",
        "test_command": GRADER,
        **fields,
    }
