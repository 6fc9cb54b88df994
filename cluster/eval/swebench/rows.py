"""SWE-bench rows as tasks, for repositories available locally.

A row with `instance_id` is read as SWE-bench: `repo` ("owner/name") is looked up
under the repositories directory (`--repos DIR`, default: the task file's folder) as
`DIR/owner__name`, then `DIR/name`; `base_commit` is the ref; `problem_statement`
becomes the instruction; `test_patch` holds the hidden tests: the files it names are
taken as the base has them with the test patch applied, replacing the agent's versions
in the grading copy (the harness's "restore the test files, then apply the test patch").
FAIL_TO_PASS + PASS_TO_PASS (lists, or JSON strings of lists, as the dataset stores
them) are the task's required tests (`grading.tests`), the row counting each group
apart. The gold `patch` is never shown to the agent. Other dataset fields are ignored,
except these eval fields, which override: setup_command, test_command, timeouts,
budgets, model, strategy, grading.

Where the `swebench` package knows the row's repository and version (specs.py), its
spec decides the environment (Python version, requirements, packages, install) and the
test command (the spec's, on the test files the test patch touches); otherwise the
grader runs pytest on the test ids (`--swebench-runner` changes the runner), with pytest
alone in the environment.

A row with `environment_setup_commit` gets its own environment, as the SWE-bench harness
builds one per (repo, version) at that commit: built from the repository at
environment_setup_commit, keyed with `version` as its label, then used at base_commit.
The row's own `environment` (an object) replaces the recipe's fields it names; `null`
runs the row in the harness's Python. Building it needs the network (`--setup-network`)
unless every requirement is already on this machine.

A repository that is not found does not make the row malformed: the task gets an
error row naming the places looked at, and the batch goes on.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from cluster.eval.swebench.specs import spec_for
from cluster.eval.tasks import RowError, Task

__all__ = ["DEFAULT_RUNNER", "is_swebench_row", "swebench_task", "test_ids"]

DEFAULT_RUNNER = "python -m pytest -q -p no:cacheprovider"

_OVERRIDES = ("setup_command", "test_command", "timeouts", "budgets", "model", "strategy", "grading")

_TEMPLATE = """Resolve the following issue in this repository ({repo}).

{problem}

Change the source code so the issue is fixed. Do not modify the existing tests."""


def is_swebench_row(row: dict) -> bool:
    return "instance_id" in row


def test_ids(row: dict, key: str, *, required: bool) -> list[str]:
    value = row.get(key)
    if value is None:
        if required:
            raise RowError(key, "field required (a list of test ids)")
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise RowError(key, f"a JSON string that does not parse ({exc.msg})") from exc
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RowError(key, "must be a list of test ids (or a JSON string of one)")
    return value


def _text(row: dict, key: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        raise RowError(key, "field required (a non-empty string)" if value is None else "must be a non-empty string")
    return value


def local_candidates(repo: str, repos_dir: Path) -> list[Path]:
    owner, _, name = repo.rpartition("/")
    names = [f"{owner}__{name}", name] if owner else [name]
    return [repos_dir / n for n in names]


def swebench_task(row: dict[str, Any], *, repos_dir: Path, runner: str = DEFAULT_RUNNER) -> Task:
    instance_id = _text(row, "instance_id")
    repo = _text(row, "repo")
    base_commit = _text(row, "base_commit")
    problem = _text(row, "problem_statement")
    fail_to_pass, pass_to_pass = (
        test_ids(row, "FAIL_TO_PASS", required=True),
        test_ids(row, "PASS_TO_PASS", required=False),
    )
    tests = list(dict.fromkeys(fail_to_pass + pass_to_pass))
    if not tests:
        raise RowError("FAIL_TO_PASS", "names no test; the grader would have nothing to run")
    candidates = local_candidates(repo, repos_dir.expanduser().resolve())
    found = next((c for c in candidates if c.is_dir()), None)
    metadata: dict[str, Any] = {"swebench_repo": repo}
    if found is None:
        metadata["looked_for"] = [str(c) for c in candidates]
    spec = spec_for({**row, "repo": repo, "base_commit": base_commit}, found)
    fields: dict[str, Any] = {
        "id": instance_id,
        "repo": str(found or candidates[0]),
        "ref": base_commit,
        "instruction": _TEMPLATE.format(repo=repo, problem=problem.strip()),
        "test_command": spec.test_command if spec else f"{runner} {' '.join(shlex.quote(t) for t in tests)}",
        "test_patch": row.get("test_patch") or None,
        "metadata": {**metadata, **({"swebench_notes": spec.notes} if spec else {})},
    }
    fields.update({k: row[k] for k in _OVERRIDES if k in row})
    given = fields.get("grading")
    own: dict[str, Any] = given if isinstance(given, dict) else {}
    fields["grading"] = {
        "tests": tests,
        "test_groups": {"FAIL_TO_PASS": fail_to_pass, "PASS_TO_PASS": pass_to_pass},
        **({"log_parser": spec.log_parser} if spec and spec.log_parser else {}),
        **own,
    }
    fields["environment"] = _environment(row, spec.environment if spec else None)
    return Task.model_validate(fields)


def _environment(row: dict[str, Any], from_spec: dict[str, Any] | None) -> dict[str, Any] | None:
    """The row's environment: SWE-bench's spec (or, without one, pytest alone) at the
    environment commit, with the row's own `environment` fields over it; `null`: none."""
    given = row.get("environment", {})
    if given is None:
        return None
    if not isinstance(given, dict):
        raise RowError("environment", "must be an object (the environment's recipe) or null")
    commit = row.get("environment_setup_commit")
    if not (isinstance(commit, str) and commit.strip()):
        return {**(from_spec or {}), **given} or None
    version = row.get("version")
    recipe = from_spec if from_spec is not None else {"packages": ["pytest"]}
    return {"ref": commit.strip(), "label": str(version) if version is not None else None, **recipe, **given}
