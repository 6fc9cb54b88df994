"""Reading a task file: JSON Lines of rows, or one JSON array of them (the shape
SWE-bench dumps come in), each row a task (`tasks.py`) or a SWE-bench row (`swebench.py`).

A malformed line is reported with its line number and field; the other lines still
load. In a file holding one array, problems name the item number instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agents.errors import ConfigError
from cluster.eval.provenance import task_digest
from cluster.eval.swebench import DEFAULT_RUNNER, is_swebench_row, swebench_task
from cluster.eval.tasks import RowError, Task, absolute_spec, is_url

__all__ = ["LoadedTasks", "TaskProblem", "load_tasks"]


@dataclass(frozen=True)
class TaskProblem:
    """Why one line of the task file was not loaded."""

    line: int
    field: str | None
    message: str
    unit: str = "line"  # "item" in a file holding one JSON array

    def describe(self, path: Path | str) -> str:
        where = f"{path} {self.unit} {self.line}"
        return f"{where}: field '{self.field}': {self.message}" if self.field else f"{where}: {self.message}"


@dataclass
class LoadedTasks:
    path: Path
    tasks: list[Task] = field(default_factory=list)
    problems: list[TaskProblem] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)  # task id -> digest of its row (provenance.py)

    def problem_lines(self) -> list[str]:
        return [p.describe(self.path) for p in self.problems]


def _problems_of(line: int, exc: ValidationError, unit: str) -> list[TaskProblem]:
    problems = []
    for error in exc.errors():
        loc = ".".join(str(p) for p in error["loc"]) or None
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = f"unknown field (known: {', '.join(Task.model_fields)})"
        problems.append(TaskProblem(line, loc, message, unit))
    return problems


def _normalize(task: Task, base: Path) -> Task:
    repo = task.repo
    if not is_url(repo):
        path = Path(repo).expanduser()
        repo = str(path if path.is_absolute() else (base / path).resolve())
    update: dict[str, Any] = {"repo": repo, "model": absolute_spec(task.model, base)}
    env = task.environment
    if env is not None and env.python is not None and not env.python.expanduser().is_absolute():
        update["environment"] = env.model_copy(update={"python": (base / env.python).resolve()})
    return task.model_copy(update=update)


def _parse_line(text: str) -> dict:
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RowError(None, f"not valid JSON ({exc.msg} at column {exc.colno})") from exc
    return row


def _rows(raw: bytes, path: Path) -> tuple[str, list[tuple[int, Any]]]:
    """(unit, [(number, row or RowError)]): JSON Lines, or one JSON array (as SWE-bench
    dumps come), numbered from 1."""
    if raw.lstrip().startswith(b"["):
        try:
            items = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"task file {path} starts with '[' but is not a valid JSON array ({exc})") from exc
        return "item", list(enumerate(items, start=1))
    rows: list[tuple[int, Any]] = []
    for number, chunk in enumerate(raw.split(b"\n"), start=1):
        try:
            text = chunk.decode("utf-8").strip()
        except UnicodeDecodeError:
            rows.append((number, RowError(None, "not valid UTF-8")))
            continue
        if text:
            try:
                rows.append((number, _parse_line(text)))
            except RowError as exc:
                rows.append((number, exc))
    return "line", rows


def _task_of(row: Any, repos_dir: Path, runner: str) -> Task:
    if isinstance(row, RowError):
        raise row
    if not isinstance(row, dict):
        raise RowError(None, f"expected a JSON object, got {type(row).__name__}")
    if is_swebench_row(row):
        return swebench_task(row, repos_dir=repos_dir, runner=runner)
    return Task.model_validate(row)


def load_tasks(path: Path, *, repos_dir: Path | None = None, swebench_runner: str | None = None) -> LoadedTasks:
    """Every valid task of the file, and a problem per malformed line (never raises for
    a bad line; raises ConfigError only when the file itself cannot be read)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"task file {path} cannot be read ({exc.strerror}); check the path") from exc
    base = path.resolve().parent
    loaded = LoadedTasks(path=path)
    unit, rows = _rows(raw, path)
    first_seen: dict[str, int] = {}
    for number, row in rows:
        try:
            task = _task_of(row, repos_dir or base, swebench_runner or DEFAULT_RUNNER)
        except RowError as exc:
            loaded.problems.append(TaskProblem(number, exc.field, exc.message, unit))
            continue
        except ValidationError as exc:
            loaded.problems.extend(_problems_of(number, exc, unit))
            continue
        if task.id in first_seen:
            message = f"duplicate task id {task.id!r} (first on {unit} {first_seen[task.id]})"
            loaded.problems.append(TaskProblem(number, "id", message, unit))
            continue
        first_seen[task.id] = number
        loaded.tasks.append(_normalize(task, base))
        loaded.digests[task.id] = task_digest(row)
    return loaded
