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
| `environment` | the task's own Python environment, built once per host and shared by the tasks that ask for the same one (environments/): `requirements`, `project`, `packages`, `commands`, `network`, `ref`, `label`, `python`, `python_version`, `install`, `pre_install` |
| `test_command` | the grader, run (sandboxed) in a fresh copy of the base with only the agent's patch applied: a pytest command is graded per test (`grading`), any other by its exit code |
| `test_patch` | the hidden tests, as in SWE-bench: a diff against the base, placed last in the grading copy (its files replace the agent's versions) |
| `grading` | `tests`: the pytest ids that must pass (default: those the hidden test files define, else those the base collects); `test_groups`: named subsets reported apart; `verdict`: `auto` (per test for a pytest command, else the exit code), `per-test`, `exit-code`; `pytest_config`: `base` (the base's configuration, never the patch's) or `none`; `pytest_plugins`: loaded with `-p` (autoload is off); `reject_test_changes`: fail a patch that changes test infrastructure (default: the `--reject-test-changes` flag) |
| `timeouts` | `setup_s` (workspace + setup command, default 600), `test_s` (grader, default 600) |
| `budgets` | `turns` (model calls), `tokens`, `cost_usd` (whole agent tree), `wall_s` (agent wall clock) |
| `model`, `strategy` | per-task overrides of `--model` and `--strategy` |
| `metadata` | free-form, kept with the task |

Unknown fields are refused, so a misspelt field is never silently ignored. Rows with an
`instance_id` are SWE-bench rows (see `swebench.py`). Reading a file of rows: `task_file.py`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agents.errors import WorkingsetError
from cluster.eval.verdicts import PytestCommand
from tools.sandbox import check_inside_workspace

__all__ = ["Budgets", "Environment", "GradingRules", "RowError", "Task", "Timeouts", "absolute_spec", "is_url"]

_STRICT = ConfigDict(extra="forbid")


class Timeouts(BaseModel):
    model_config = _STRICT
    setup_s: float = Field(
        600.0, gt=0, description="Limit on preparing the workspace and on the setup command, seconds."
    )
    test_s: float = Field(600.0, gt=0, description="Limit on the grader's test command; passing it is an error row.")


class Budgets(BaseModel):
    model_config = _STRICT
    turns: int | None = Field(None, ge=1, description="Model calls the agent may make (agent.max_turns).")
    tokens: int | None = Field(None, ge=1, description="Tokens the agent tree may use (subagents.tree_max_tokens).")
    cost_usd: float | None = Field(None, gt=0, description="List-price cost the agent tree may run up.")
    wall_s: float | None = Field(
        None, gt=0, description="Wall-clock seconds for the agent's turn; passing it is status timeout."
    )


class GradingRules(BaseModel):
    model_config = _STRICT
    reject_test_changes: bool | None = Field(
        None,
        description="Fail a patch that changes test infrastructure (patch_audit.py) instead of grading it; "
        "None: the batch's --reject-test-changes.",
    )
    tests: list[str] | None = Field(
        None,
        description="The pytest ids that must pass; unset: every test the hidden test files define, or "
        "without hidden tests every test the base's test command collects.",
    )
    test_groups: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Named subsets of `tests` the row reports apart (SWE-bench: FAIL_TO_PASS, PASS_TO_PASS).",
    )
    verdict: Literal["auto", "per-test", "log-parser", "exit-code"] = Field(
        "auto",
        description="per-test: each required test's outcome from the grader's pytest reporter; log-parser: "
        "each required test's outcome as swebench's parser for `log_parser` reads the test output; exit-code: the "
        "test command's exit code (any command); auto: per-test for a pytest command, else log-parser when "
        "`log_parser` is set, else exit-code.",
    )
    log_parser: str | None = Field(
        None,
        description='The SWE-bench repository ("django/django") whose swebench log parser reads the output of '
        "a test command that is not pytest.",
    )
    pytest_config: Literal["base", "none"] = Field(
        "base",
        description="The pytest configuration of a per-test grade: the base's (as the base commit and the "
        "hidden tests have it, never the patch's), or none.",
    )
    pytest_plugins: list[str] = Field(
        default_factory=list, description="Plugins a per-test grade loads with -p (plugin autoload is off)."
    )

    def kind(self, test_command: str) -> Literal["per-test", "log-parser", "exit-code"]:
        """The verdict this task's grade gives (`verdict`, with auto decided)."""
        if self.verdict != "auto":
            return self.verdict
        if PytestCommand.parse(test_command) is not None:
            return "per-test"
        return "log-parser" if self.log_parser else "exit-code"

    @model_validator(mode="after")
    def _groups_within_tests(self) -> GradingRules:
        outside = sorted({t for ids in self.test_groups.values() for t in ids} - set(self.tests or []))
        if outside:
            raise ValueError(f"test_groups name ids that are not in tests: {', '.join(outside[:3])}")
        return self


class Environment(BaseModel):
    """The task's own virtualenv: what goes into it. The agent's and the grader's `python`,
    `pip` and console scripts come from it; the harness's Python is not visible."""

    model_config = _STRICT
    requirements: list[str] | None = Field(
        None,
        description="Requirement files of the repository to install (pip -r); unset: every requirements*.txt "
        "at its top.",
    )
    project: bool | None = Field(
        None,
        description="Install the project's own dependencies (pyproject.toml, setup.py or setup.cfg); the project "
        "itself is imported from the workspace. Unset: when one of those files is there.",
    )
    packages: list[str] = Field(default_factory=list, description="More requirement specifiers, e.g. pytest.")
    commands: list[str] = Field(
        default_factory=list,
        description="Shell commands run after the installs, in the repository, with the "
        "environment activated and writable.",
    )
    network: bool | None = Field(
        None,
        description="Building it may reach the package registries (through the harness's egress proxy); "
        "unset: the batch's --setup-network. Never during the agent's turns or the grade.",
    )
    ref: str | None = Field(
        None,
        min_length=1,
        description="Build from the repository at this commit (SWE-bench's "
        "environment_setup_commit); unset: the task's base commit.",
    )
    label: str | None = Field(None, description="A name for the recipe, part of the cache key (SWE-bench's version).")
    python: Path | None = Field(
        None, description="Base interpreter (default: the harness's base interpreter, without its site-packages)."
    )
    python_version: str | None = Field(
        None,
        pattern=r"^3\.\d+$",
        description='The Python version to build with (SWE-bench\'s spec: "3.9"), found on '
        "this host (PATH, pyenv, /usr/bin, /usr/local/bin); ignored when `python` names one. A host without it makes "
        "the task an error row naming the version.",
    )
    install: str | None = Field(
        None,
        description="The project's install command, run in the repository after the requirements (SWE-bench's "
        "spec: \"python -m pip install -e '.[dev]'\"); the project itself is then uninstalled again and imported "
        "from the workspace. Unset: `pip install .` when `project` is true.",
    )
    pre_install: list[str] = Field(
        default_factory=list,
        description="Commands run in the repository before the install, each allowed to "
        "fail (SWE-bench's pre_install steps often need root or the whole network, which the build never has); "
        "the build log says which failed.",
    )

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
    environment: Environment | None = Field(
        None, description="The task's own Python environment; unset: the harness's Python."
    )
    test_command: str = Field(
        min_length=1,
        description="The grader: a pytest command is graded per test (see "
        "grading), any other command by its exit code.",
    )
    test_patch: str | None = Field(None, description="Hidden tests: a diff against the base, placed last for grading.")
    grading: GradingRules = Field(default_factory=GradingRules)
    timeouts: Timeouts = Field(default_factory=Timeouts)
    budgets: Budgets = Field(default_factory=Budgets)
    model: str | None = Field(None, min_length=1, description="Model spec for this task.")
    strategy: str | None = Field(None, min_length=1, description="Compaction strategy for this task.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Free-form; kept with the task.")

    @model_validator(mode="after")
    def _per_test_needs_pytest(self) -> Task:
        if self.grading.verdict == "per-test" and PytestCommand.parse(self.test_command) is None:
            raise ValueError(
                "grading.verdict is per-test, but the test command is not one pytest command "
                "(`python -m pytest …` or `pytest …`, without pipes, lists or redirections)"
            )
        if self.grading.verdict == "log-parser" and not self.grading.log_parser:
            raise ValueError("grading.verdict is log-parser, but grading.log_parser names no repository")
        return self


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
