"""The task file: JSON Lines, one task per line, validated by `Task`.

    {"id": "fix-add", "repo": "repos/calc", "instruction": "add() returns a wrong sum; fix it.",
     "test_command": "python -m pytest -q", "budgets": {"turns": 30, "cost_usd": 2.0}}

| field | meaning |
|---|---|
| `id` | unique name of the task (results, patches and logs are keyed by it) |
| `repo` | a local directory (relative paths: from the task file's folder) or a git URL (cloned once per batch) |
| `ref` | branch, tag or commit to start from (default: the repository's HEAD; a plain directory has none) |
| `instruction` | the prompt the agent gets |
| `setup_command` | run (sandboxed) in the workspace before the agent, and in the grading copy before the tests; a non-zero exit is an error row (in the grading copy: a failed row) |
| `environment` | the task's own Python environment, built once per node and shared by the tasks that ask for the same one (environments/): `requirements`, `project`, `packages`, `commands`, `network`, `ref`, `label`, `python` |
| `test_command` | the grader, run (sandboxed) in a fresh copy of the base with only the agent's patch applied: exit 0 = passed |
| `test_patch` | the hidden tests, as in SWE-bench: a diff against the base, placed last in the grading copy (its files replace the agent's versions) |
| `grading` | `reject_test_changes`: fail a patch that changes test infrastructure (default: the `--reject-test-changes` flag) |
| `timeouts` | `setup_s` (workspace + setup command, default 600), `test_s` (grader, default 600) |
| `budgets` | `turns` (model calls), `tokens`, `cost_usd` (whole agent tree), `wall_s` (agent wall clock) |
| `model`, `strategy` | per-task overrides of `--model` and `--strategy` |
| `metadata` | free-form, kept with the task |

Unknown fields are refused, so a misspelt field is never silently ignored. Rows with an
`instance_id` are SWE-bench rows (see `swebench.py`). A malformed line is reported with
its line number and field; the other lines still load. A file that starts with `[` is
read as one JSON array of rows (the shape SWE-bench dumps come in); problems then name
the item number.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agents.errors import ConfigError, WorkingsetError
from cluster.eval.provenance import task_digest
from tools.sandbox.config import check_inside_workspace

__all__ = ["Budgets", "Environment", "GradingRules", "LoadedTasks", "Task", "TaskProblem", "Timeouts", "absolute_spec",
           "is_url", "load_tasks"]

_STRICT = ConfigDict(extra="forbid")


class Timeouts(BaseModel):
    model_config = _STRICT
    setup_s: float = Field(600.0, gt=0, description="Limit on preparing the workspace and on the setup command, seconds.")
    test_s: float = Field(600.0, gt=0, description="Limit on the grader's test command; passing it is an error row.")


class Budgets(BaseModel):
    model_config = _STRICT
    turns: int | None = Field(None, ge=1, description="Model calls the agent may make (agent.max_turns).")
    tokens: int | None = Field(None, ge=1, description="Tokens the agent tree may use (subagents.tree_max_tokens).")
    cost_usd: float | None = Field(None, gt=0, description="List-price cost the agent tree may run up.")
    wall_s: float | None = Field(None, gt=0, description="Wall-clock seconds for the agent's turn; passing it is status timeout.")


class GradingRules(BaseModel):
    model_config = _STRICT
    reject_test_changes: bool | None = Field(
        None, description="Fail a patch that changes test infrastructure (patch_audit.py) instead of grading it; "
        "None: the batch's --reject-test-changes.")


class Environment(BaseModel):
    """The task's own virtualenv: what goes into it. The agent's and the grader's `python`,
    `pip` and console scripts come from it; the harness's Python is not visible."""

    model_config = _STRICT
    requirements: list[str] | None = Field(
        None, description="Requirement files of the repository to install (pip -r); unset: every requirements*.txt "
        "at its top.")
    project: bool | None = Field(
        None, description="Install the project's own dependencies (pyproject.toml, setup.py or setup.cfg); the project "
        "itself is imported from the workspace. Unset: when one of those files is there.")
    packages: list[str] = Field(default_factory=list, description="More requirement specifiers, e.g. pytest.")
    commands: list[str] = Field(
        default_factory=list, description="Shell commands run after the installs, in the repository, with the "
        "environment activated and writable.")
    network: bool | None = Field(
        None, description="Building it may reach the package registries (through the harness's egress proxy); "
        "unset: the batch's --setup-network. Never during the agent's turns or the grade.")
    ref: str | None = Field(
        None, min_length=1, description="Build from the repository at this commit (SWE-bench's "
        "environment_setup_commit); unset: the task's base commit.")
    label: str | None = Field(None, description="A name for the recipe, part of the cache key (SWE-bench's version).")
    python: Path | None = Field(
        None, description="Base interpreter (default: the harness's base interpreter, without its site-packages).")

    @field_validator("requirements")
    @classmethod
    def _in_repository(cls, names: list[str] | None) -> list[str] | None:
        check_inside_workspace(names or [])
        return names


class Task(BaseModel):
    """One evaluation task."""

    model_config = _STRICT
    id: str = Field(min_length=1, description="Unique task name.")
    repo: str = Field(min_length=1, description="Local directory or git URL.")
    ref: str | None = Field(None, min_length=1, description="Branch, tag or commit (default HEAD).")
    instruction: str = Field(min_length=1, description="The agent's prompt.")
    setup_command: str | None = Field(None, min_length=1, description="Run before the agent, sandboxed.")
    environment: Environment | None = Field(None, description="The task's own Python environment; unset: the harness's Python.")
    test_command: str = Field(min_length=1, description="The grader: exit 0 means passed.")
    test_patch: str | None = Field(None, description="Hidden tests: a diff against the base, placed last for grading.")
    grading: GradingRules = Field(default_factory=GradingRules)
    timeouts: Timeouts = Field(default_factory=Timeouts)
    budgets: Budgets = Field(default_factory=Budgets)
    model: str | None = Field(None, min_length=1, description="Model spec for this task.")
    strategy: str | None = Field(None, min_length=1, description="Compaction strategy for this task.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Free-form; kept with the task.")


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


class RowError(WorkingsetError):
    """A row that cannot become a task: which field, and why."""

    def __init__(self, field: str | None, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


_URL = re.compile(r"^([a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.IGNORECASE)


def is_url(repo: str) -> bool:
    return bool(_URL.match(repo))


def absolute_spec(spec: str | None, base: Path) -> str | None:
    """`scripted:<relative file>` made absolute against `base` (sessions on Ray run
    in other processes with another working directory)."""
    if spec is None or not spec.startswith("scripted:"):
        return spec
    path = Path(spec.removeprefix("scripted:")).expanduser()
    return f"scripted:{path if path.is_absolute() else (base / path).resolve()}"


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
    from cluster.eval.swebench import is_swebench_row, swebench_task

    if isinstance(row, RowError):
        raise row
    if not isinstance(row, dict):
        raise RowError(None, f"expected a JSON object, got {type(row).__name__}")
    if is_swebench_row(row):
        return swebench_task(row, repos_dir=repos_dir, runner=runner)
    return Task.model_validate(row)


def load_tasks(
    path: Path, *, repos_dir: Path | None = None, swebench_runner: str | None = None
) -> LoadedTasks:
    """Every valid task of the file, and a problem per malformed line (never raises for
    a bad line; raises ConfigError only when the file itself cannot be read)."""
    from cluster.eval.swebench import DEFAULT_RUNNER

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
