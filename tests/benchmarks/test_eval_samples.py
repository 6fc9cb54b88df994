"""The sample batch in benchmarks/eval_tasks/: each repo's tests fail as shipped, the
Edits of its scripted model make them pass (except the one task that fails on purpose),
and the task file and scripts are well-formed. No mocks: the repos' tests really run."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from pydantic import BaseModel

from agents.providers.scripted import Script, load_script
from tests.support import ROOT
from tools.bash import BashInput
from tools.files._edit import EditInput
from tools.files._glob import GlobInput
from tools.files._grep import GrepInput
from tools.files._read import ReadInput
from tools.files._write import WriteInput

TASKS_DIR = ROOT / "benchmarks" / "eval_tasks"
TASKS_FILE = TASKS_DIR / "tasks.jsonl"
# The fields of cluster/eval/tasks.py `Task` these samples use; `timeouts.test_s` bounds the grader.
FIELDS = {"id": str, "repo": str, "instruction": str, "test_command": str, "timeouts": dict, "model": str}
FAILS_ON_PURPOSE = {"money"}
TOOL_INPUTS: dict[str, type[BaseModel]] = {
    "Read": ReadInput,
    "Write": WriteInput,
    "Edit": EditInput,
    "Bash": BashInput,
    "Grep": GrepInput,
    "Glob": GlobInput,
}
MAX_REPO_BYTES = 16_000  # "a few KB": the runner copies each repo per task
_JUNK = {"__pycache__", ".pytest_cache"}


def _read_tasks() -> list[dict[str, Any]]:
    lines = TASKS_FILE.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


TASKS = _read_tasks()


def _script_path(task: dict[str, Any]) -> Path:
    return TASKS_DIR / task["model"].removeprefix("scripted:")


def _calls(script: Script) -> list[tuple[str, dict[str, Any]]]:
    return [(call.name, call.input) for turn in script.turns for call in turn.tool_calls]


def _run_tests(task: dict[str, Any], repo: Path) -> subprocess.CompletedProcess[str]:
    """The task's test command in `repo`, with this interpreter standing in for `python`."""
    argv = shlex.split(task["test_command"])
    assert argv[0] == "python", task["test_command"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # The samples' tests are plain unittest; the dev install's pytest plugins would only
    # add about a second of startup to each of the twelve runs.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return subprocess.run(
        [sys.executable, *argv[1:]],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=task["timeouts"]["test_s"],
        check=False,
    )


def _summary(output: str) -> list[str]:
    """'3 failed', '6 passed' from pytest's final summary line."""
    lines = [line for line in output.splitlines() if re.search(r"\b(passed|failed)\b.* in [\d.]+s", line)]
    assert lines, output
    return [f"{n} {word}" for n, word in re.findall(r"(\d+) (failed|passed|errors?)", lines[-1])]


def _apply_edit(repo: Path, call: dict[str, Any]) -> None:
    """What the Edit tool does, with its rule that old_string occurs exactly once."""
    relative = PurePosixPath(call["path"])
    assert not relative.is_absolute() and ".." not in relative.parts, call["path"]
    target = repo / relative
    text = target.read_text(encoding="utf-8")
    count = text.count(call["old_string"])
    assert count == 1, f"{call['path']}: old_string occurs {count} times: {call['old_string']!r}"
    target.write_text(text.replace(call["old_string"], call["new_string"]), encoding="utf-8")


def test_the_task_file_has_one_well_formed_line_per_repo():
    assert len(TASKS) == 6
    assert len({t["id"] for t in TASKS}) == len(TASKS)
    for task in TASKS:
        assert set(task) == set(FIELDS), task["id"]
        for field, kind in FIELDS.items():
            assert isinstance(task[field], kind), (task["id"], field)
        assert task["instruction"].strip()
        assert set(task["timeouts"]) == {"test_s"} and task["timeouts"]["test_s"] > 0
        repo = TASKS_DIR / task["repo"]
        assert repo.is_dir() and (repo / "tests").is_dir(), task["repo"]
        assert not (repo / ".git").exists(), f"{task['repo']} must be a plain directory"
        assert task["model"].startswith("scripted:")
        assert _script_path(task).is_file(), task["model"]
    shipped = {p.name for p in (TASKS_DIR / "repos").iterdir()}
    assert shipped == {PurePosixPath(t["repo"]).name for t in TASKS}
    scripts = {p.name for p in (TASKS_DIR / "scripts").iterdir()}
    assert scripts == {_script_path(t).name for t in TASKS}


def test_the_batch_runner_loads_every_task():
    """The runner's own loader (it refuses unknown fields) takes every line, resolving the
    repo and the scripted model against the task file's folder."""
    load_tasks = pytest.importorskip("cluster.eval.task_file").load_tasks
    loaded = load_tasks(TASKS_FILE)
    assert loaded.problem_lines() == []
    assert [t.id for t in loaded.tasks] == [t["id"] for t in TASKS]
    for task in loaded.tasks:
        assert Path(task.repo).is_dir()
        assert Path(task.model.removeprefix("scripted:")).is_file()


@pytest.mark.parametrize("task", TASKS, ids=[t["id"] for t in TASKS])
def test_the_repo_is_small_stdlib_python(task):
    repo = TASKS_DIR / task["repo"]
    files = [p for p in repo.rglob("*") if p.is_file() and not _JUNK & set(p.parts)]
    assert sum(p.stat().st_size for p in files) < MAX_REPO_BYTES
    sources = [p for p in files if p.suffix == ".py" and "tests" not in p.relative_to(repo).parts]
    assert 2 <= len([p for p in sources if p.name != "__init__.py"]) <= 5


@pytest.mark.parametrize("task", TASKS, ids=[t["id"] for t in TASKS])
def test_the_script_calls_only_workspace_tools_with_valid_inputs(task):
    script = load_script(_script_path(task))  # the scripted provider's own validation
    repo = TASKS_DIR / task["repo"]
    calls = _calls(script)
    for name, given in calls:
        assert name in TOOL_INPUTS, f"{task['id']}: tool {name!r}"
        args = TOOL_INPUTS[name].model_validate(given)  # extra="forbid": no unknown fields
        if name in ("Read", "Grep") and getattr(args, "path", None):
            assert (repo / args.path).exists(), f"{task['id']}: {name} of missing {args.path}"
        if name == "Bash":
            assert args.command == task["test_command"], f"{task['id']}: only the test command runs"
    names = [name for name, _ in calls]
    first_edit, last_edit = names.index("Edit"), len(names) - 1 - names[::-1].index("Edit")
    assert {"Read", "Grep", "Glob"} & set(names[:first_edit]), "inspects before editing"
    assert "Bash" in names[last_edit:], "verifies after the last edit"
    assert task["test_command"] in script.final_text


@pytest.mark.parametrize("task", TASKS, ids=[t["id"] for t in TASKS])
def test_the_tests_fail_as_shipped_and_the_scripted_edits_decide_them(task, tmp_path):
    repo = tmp_path / PurePosixPath(task["repo"]).name
    shutil.copytree(TASKS_DIR / task["repo"], repo, ignore=shutil.ignore_patterns(*_JUNK))

    before = _run_tests(task, repo)
    assert before.returncode == 1, f"expected failing tests as shipped:\n{before.stdout}{before.stderr}"

    script = load_script(_script_path(task))
    for name, call in _calls(script):
        if name == "Edit":
            _apply_edit(repo, call)
    after = _run_tests(task, repo)
    expected = 1 if task["id"] in FAILS_ON_PURPOSE else 0
    assert after.returncode == expected, f"{after.stdout}{after.stderr}"

    # The final text reports the verification result the edits really produce.
    counts = _summary(after.stdout)
    assert ("failed" in " ".join(counts)) == bool(expected)
    for count in counts:
        assert count in script.final_text, (count, script.final_text)
