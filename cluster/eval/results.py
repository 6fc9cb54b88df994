"""`results.jsonl`: one row per finished task attempt, appended as each task ends.

The latest row of a task is its result. Rerunning the same command skips every task
that has a row, except those that ended in `infra_error` (the infrastructure, not the
task, failed: they run again); `--retry-failed` runs again those whose latest row is
not `passed`; a
task whose row in the task file changed since its result row (`task_digest`) runs
again and says so. A task interrupted by Ctrl-C or a kill has no row, so the rerun
picks it up. Each row is one write of a complete line, fsynced (durable.py); a torn
last line left by a crash is moved to `results.jsonl.torn-<time>` on the next start.

Rows of several task files share one out directory: each row names its `task_file`;
a task id is one task in the directory, so the same id with other content in another
task file is refused (`TaskConflict`) rather than mixed up.

Statuses:
    passed   the agent finished and the grade passed: every required test passing (a pytest
             command, `grade.verdict` per-test) or the test command exited 0 (any other)
    failed   the agent finished and the grade did not pass (`grade.reasons`), or its patch could
             not be graded (does not apply, over the size cap, changes test infrastructure
             where the task rejects that, breaks the setup command): `error` says why
    error    the task could not be run or graded: missing repository, failing setup,
             model or harness error, grader timeout (see `error`)
    infra_error  the infrastructure kept failing under the task (workers, actors or nodes
             lost, an actor that stopped answering) through every retry it is given
             (runner.py); not the agent's doing: a plain rerun runs it again
    timeout    the agent passed its wall-clock budget (budgets.wall_s); still graded
    budget     the agent hit its turn, token or cost budget; still graded
    truncated  the agent's replies were cut off at the output token limit; still graded
    refused    the provider refused to go on (stop reason `refusal`); still graded

`cost_usd` is what the calls of known price cost; `unpriced_calls` counts the others
(scripted models, models of unknown price), and `pricing` says which kind the run was.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from agents.errors import ConfigError
from agents.visible import reveal
from cluster.eval.durable import append_line, repair_jsonl, write_atomic
from cluster.eval.tasks import Task
from cluster.eval.verdicts import Grade

__all__ = [
    "RERUN_ALWAYS",
    "STATUSES",
    "Plan",
    "ResultRow",
    "ResultsFile",
    "TaskConflict",
    "plan_run",
    "write_predictions",
]

Status = Literal["passed", "failed", "error", "timeout", "budget", "truncated", "refused", "infra_error"]
STATUSES: tuple[str, ...] = ("passed", "failed", "error", "timeout", "budget", "truncated", "refused", "infra_error")
RERUN_ALWAYS = frozenset({"infra_error"})  # a plain rerun runs these again: nothing of the task's own was decided


class ResultRow(BaseModel):
    task_id: str
    status: Status
    attempt: int = Field(1, description="1 for the first run of this task in this out dir, 2 for the next, ...")
    stop_reason: str | None = Field(None, description="How the agent's turn ended: end_turn, turn_limit, budget, ...")
    tests_passed: bool | None = Field(None, description="The grader's verdict, when it gave one.")
    test_exit_code: int | None = None
    grade: Grade | None = Field(
        None,
        description="What the grade checked: per-test outcomes of the required "
        "tests, or the exit code (see cluster/eval/verdicts/).",
    )
    turns: int = Field(0, description="Model calls of the root session.")
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = Field(0, description="Model calls whose price is unknown (not in cost_usd).")
    pricing: str | None = Field(None, description="list, configured, scripted, unknown or mixed.")
    wall_s: float = Field(0.0, description="The whole task: workspace, setup, agent, grading.")
    agent_wall_s: float = 0.0
    compactions: int = 0
    compaction_kinds: dict[str, int] = Field(default_factory=dict)
    tool_calls: int = Field(0, description="Tool calls in the task's events.")
    recall_calls: int = Field(0, description="Of them, Recall calls (reading back a cleared or clipped tool result).")
    patch_path: str | None = Field(None, description="The agent's diff, relative to the out dir (None: no change).")
    patch_touches_tests: list[str] = Field(
        default_factory=list,
        description="Files of the patch that are test infrastructure (conftest.py, test "
        "modules, pytest configuration, files the hidden tests replace; see cluster/eval/patch_audit.py).",
    )
    session_id: str | None = None
    model: str = ""
    strategy: str = ""
    base_commit: str | None = None
    environment: str | None = Field(
        None,
        description="Key of the task's own environment (its directory in the "
        "node's environment cache), when it has one.",
    )
    environment_reused: bool | None = Field(
        None, description="The environment was in the node's cache: this task built nothing."
    )
    environment_s: float | None = Field(
        None,
        description="Seconds to get the environment: its recipe resolved "
        "against the repository, and its build or the wait for another task's.",
    )
    error: str | None = Field(None, description="Why an error row has no verdict, or why a failed row was not graded.")
    retries: int = Field(0, description="Runs again after lost infrastructure (runner.MAX_INFRA_RETRIES at most).")
    actor_restarts: int = Field(0, description="Session actor failures the session recovered from.")
    node: str | None = Field(
        None,
        description="The Ray node the task ran on (its workspace, session, tool calls "
        "and grade); None in one process (--local).",
    )
    node_losses: int = Field(
        0,
        description="Nodes lost under this task: each time it ran again from its start "
        "elsewhere (not counted in retries).",
    )
    notes: list[str] = Field(default_factory=list)
    events_path: str | None = None
    grade_log: str | None = None
    workspace: str | None = Field(None, description="Kept workspace (--keep-workspaces).")
    started_at: float = 0.0
    finished_at: float = 0.0
    run: str | None = Field(None, description="Fingerprint of the settings that produced the row (run.json).")
    task_digest: str | None = Field(None, description="Digest of the task's own row in the task file.")
    task_file: str | None = Field(None, description="The task file the task came from.")

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_creation_tokens


class ResultsFile:
    def __init__(self, path: Path):
        self.path = path
        self.problems: list[str] = []

    def rows(self) -> list[ResultRow]:
        """Every readable row in file order; unreadable lines go to `problems`."""
        self.problems = []
        if not self.path.is_file():
            return []
        rows = []
        for number, line in enumerate(self.path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append(ResultRow.model_validate_json(line))
            except ValidationError:
                self.problems.append(f"{self.path} line {number} is not a result row (a write was cut short?); ignored")
        return rows

    def latest(self) -> tuple[dict[str, ResultRow], dict[str, int]]:
        """(latest row per task, rows per task)."""
        latest: dict[str, ResultRow] = {}
        counts: dict[str, int] = {}
        for row in self.rows():
            latest[row.task_id] = row
            counts[row.task_id] = counts.get(row.task_id, 0) + 1
        return latest, counts

    def append(self, row: ResultRow) -> None:
        append_line(self.path, reveal(row.model_dump_json()))  # the same values, no raw control byte

    def repair(self) -> str | None:
        """Cut lines that are not rows (a torn last line) out of the file, kept aside;
        a notice saying so, or None when the file was whole."""
        moved, aside = repair_jsonl(self.path, _is_row)
        if not moved:
            return None
        what = "a torn last line (a write cut short by a crash)" if moved == 1 else f"{moved} lines that were not rows"
        return f"{self.path.name}: moved {what} to {aside.name if aside else '?'}; the file is valid again"


def _is_row(line: bytes) -> bool:
    try:
        ResultRow.model_validate_json(line)
    except ValidationError:
        return False
    return True


class TaskConflict(ConfigError):
    """A task id that another task file of the out directory holds with other content."""


@dataclass
class Plan:
    run: list[Task] = field(default_factory=list)  # new, changed, or retried
    skipped: list[Task] = field(default_factory=list)  # finished, unchanged
    changed: set[str] = field(default_factory=set)  # ids whose row in the task file changed since their result


def _conflict_message(conflicts: dict[str, list[str]], task_file: str) -> str:
    parts = []
    for other, ids in conflicts.items():
        shown = ", ".join(map(repr, ids[:3])) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
        parts.append(f"task id{'s' if len(ids) > 1 else ''} {shown} in {task_file} also in {other} with other content")
    return (
        "; ".join(parts) + ": an id names one task in an out directory; give the tasks other ids in one file, "
        "or use a different --out"
    )


def plan_run(
    tasks: list[Task],
    latest: dict[str, ResultRow],
    *,
    retry_failed: bool,
    digests: dict[str, str] | None = None,
    task_file: str | None = None,
) -> Plan:
    """What to run and what to skip; a task whose id another task file holds with other
    content raises TaskConflict naming both files."""
    plan = Plan()
    conflicts: dict[str, list[str]] = {}
    for task in tasks:
        row = latest.get(task.id)
        digest = (digests or {}).get(task.id)
        if row is not None and digest and row.task_digest and row.task_digest != digest:
            if row.task_file not in (None, task_file):
                conflicts.setdefault(row.task_file, []).append(task.id)
                continue
            plan.changed.add(task.id)
        if (
            row is None
            or task.id in plan.changed
            or row.status in RERUN_ALWAYS
            or (retry_failed and row.status != "passed")
        ):
            plan.run.append(task)
        else:
            plan.skipped.append(task)
    if conflicts:
        raise TaskConflict(_conflict_message(conflicts, task_file or "this task file"))
    return plan


def write_predictions(path: Path, rows: list[ResultRow], out_dir: Path) -> int:
    """SWE-bench predictions: one line per task, the patch as the agent left it."""
    lines = []
    for row in sorted(rows, key=lambda r: r.task_id):
        patch = ""
        if row.patch_path and (out_dir / row.patch_path).is_file():
            patch = (out_dir / row.patch_path).read_text(encoding="utf-8", errors="replace")
        lines.append(json.dumps({"instance_id": row.task_id, "model_name_or_path": row.model, "model_patch": patch}))
    write_atomic(path, "".join(f"{line}\n" for line in lines))
    return len(lines)
