"""SWE-bench rows graded as SWE-bench grades them: the swebench package's specs, its log
parsers for commands that are not pytest, predictions graded without an agent, and the
real marshmallow rows of SWE-bench Lite dev (when a clone of the repository is here)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cluster.eval.environments.recipe import find_python
from cluster.eval.task_file import load_tasks
from tests.support.eval_support import (
    ROOT,
    calc_repo,
    git,
    rows_by_id,
    run_eval,
    script,
    tasks_file,
)

SHARED = ROOT.parent / "shared" / "traces" / "tasks"
LITE_DEV = SHARED / "princeton-nlp-SWE-bench_Lite-dev.json"


def _lite_rows() -> list[dict]:
    if not LITE_DEV.is_file():
        pytest.skip(f"SWE-bench Lite dev rows not found at {LITE_DEV}: these tests need ../shared/traces")
    return json.loads(LITE_DEV.read_text())


def _by_id(rows: list[dict]) -> dict[str, dict]:
    return {r["instance_id"]: r for r in rows}


def test_a_known_repository_takes_its_python_install_and_test_command_from_swebenchs_spec(tmp_path):
    row = _by_id(_lite_rows())["marshmallow-code__marshmallow-1359"]
    (task,) = load_tasks(tasks_file(tmp_path / "t.jsonl", [row]), repos_dir=tmp_path).tasks
    assert task.test_command == "pytest -rA tests/test_fields.py"  # the spec's command on the test patch's files
    assert task.environment is not None
    env = task.environment
    assert (env.python_version, env.install, env.ref, env.label) == (
        "3.9",
        "python -m pip install -e '.[dev]'",
        row["environment_setup_commit"],
        "3.0",
    )
    assert task.grading.kind(task.test_command) == "per-test"
    assert task.grading.test_groups["FAIL_TO_PASS"] == [
        "tests/test_fields.py::TestParentAndName::test_datetime_list_inner_format"
    ]


def test_a_repository_whose_tests_are_not_pytest_is_graded_by_swebenchs_log_parser(tmp_path):
    row = {
        "repo": "django/django",
        "instance_id": "django__django-1",
        "base_commit": "a" * 40,
        "version": "4.0",
        "environment_setup_commit": "b" * 40,
        "problem_statement": "p",
        "FAIL_TO_PASS": ["test_x (a.b.C)"],
        "test_patch": "diff --git a/tests/auth_tests/test_views.py b/tests/auth_tests/test_views.py\n",
    }
    (task,) = load_tasks(tasks_file(tmp_path / "t.jsonl", [row]), repos_dir=tmp_path).tasks
    assert task.test_command.endswith(
        "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 auth_tests.test_views"
    )
    assert (task.grading.log_parser, task.grading.kind(task.test_command)) == ("django/django", "log-parser")


def test_a_conda_environment_spec_is_refused_at_load_naming_the_fix(tmp_path):
    row = {
        "repo": "matplotlib/matplotlib",
        "instance_id": "m-1",
        "base_commit": "a" * 40,
        "version": "3.5",
        "problem_statement": "p",
        "FAIL_TO_PASS": ["t"],
    }
    loaded = load_tasks(tasks_file(tmp_path / "t.jsonl", [row]), repos_dir=tmp_path)
    assert not loaded.tasks
    assert "builds a conda environment (environment.yml)" in loaded.problem_lines()[0]
    assert "give the row its own `environment`" in loaded.problem_lines()[0]


def _calc(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository, its SWE-bench row's test patch, and the gold fix."""
    repo = calc_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    test_patch = (
        "diff --git a/tests/test_add.py b/tests/test_add.py\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/tests/test_add.py\n@@ -0,0 +1,5 @@\n+from calc import add\n+\n+\n"
        "+def test_add():\n+    assert add(2, 3) == 5\n"
    )
    gold = (
        "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
        "-    return a - b\n+    return a + b\n"
    )
    return repo, base, test_patch, gold  # type: ignore[return-value]


def _swe_row(repo: Path, base: str, test_patch: str, instance_id: str) -> dict:
    return {
        "repo": f"acme/{repo.name}",
        "instance_id": instance_id,
        "base_commit": base,
        "problem_statement": "add()",
        "test_patch": test_patch,
        "FAIL_TO_PASS": ["tests/test_add.py::test_add"],
        "PASS_TO_PASS": [],
    }


def test_predictions_are_graded_without_an_agent(tmp_path):
    repo, base, test_patch, gold = _calc(tmp_path)
    ids = ["gold", "empty", "broken", "unpredicted"]
    tasks = tasks_file(tmp_path / "swe.jsonl", [_swe_row(repo, base, test_patch, i) for i in ids])
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(
        "".join(
            json.dumps({"instance_id": i, "model_name_or_path": "someone", "model_patch": p}) + "\n"
            for i, p in (("gold", gold), ("empty", ""), ("broken", gold.replace("a - b", "a * b")), ("elsewhere", gold))
        )
    )
    out = tmp_path / "out"
    idle = script(tmp_path, "idle", [{"text": "never asked"}])
    assert run_eval(tasks, out, idle, "--repos", str(repo.parent), "--predictions", str(predictions)) == 0
    rows = rows_by_id(out)
    assert sorted(rows) == ["broken", "empty", "gold"]  # no prediction, no run
    assert (rows["gold"]["status"], rows["gold"]["stop_reason"], rows["gold"]["model"], rows["gold"]["turns"]) == (
        "passed",
        "prediction",
        "someone",
        0,
    )
    assert rows["gold"]["grade"]["required"] == {"tests/test_add.py::test_add": "passed"}
    assert (rows["empty"]["status"], rows["empty"]["grade"]["required"]) == (
        "failed",
        {"tests/test_add.py::test_add": "failed"},
    )
    assert rows["broken"]["status"] == "failed" and rows["broken"]["error"].startswith("the prediction does not apply")


def test_a_malformed_predictions_file_is_one_line_naming_where(tmp_path, capsys):
    repo, base, test_patch, _ = _calc(tmp_path)
    tasks = tasks_file(tmp_path / "swe.jsonl", [_swe_row(repo, base, test_patch, "x")])
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text('{"instance_id": "x", "model_patch": 3, "model_name_or_path": "m"}\n')
    assert run_eval(tasks, tmp_path / "out", tmp_path / "none", "--predictions", str(predictions)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"workingset: error: {predictions} line 1: model_patch missing or not a string"]


def test_a_log_parser_grades_each_required_test_from_the_output(tmp_path):
    repo, _, _, _ = _calc(tmp_path)
    printed = "printf 'PASSED tests/a.py::one\\nFAILED tests/a.py::two - boom\\nPASSED tests/a.py::three[a b]\\n'"
    rows = [
        {
            "id": name,
            "repo": str(repo),
            "instruction": "i",
            "test_command": printed,
            "grading": {"log_parser": "marshmallow-code/marshmallow", "tests": tests},
        }
        for name, tests in (("good", ["tests/a.py::one", "tests/a.py::three[a"]), ("bad", ["tests/a.py::two"]))
    ]
    out = tmp_path / "out"
    assert run_eval(tasks_file(tmp_path / "t.jsonl", rows), out, script(tmp_path, "idle", [])) == 0
    graded = rows_by_id(out)
    assert (graded["good"]["status"], graded["good"]["grade"]["verdict"]) == ("passed", "log-parser")
    assert graded["good"]["grade"]["required"]["tests/a.py::three[a"] == "passed"  # SWE-bench cuts ids at a space
    assert (graded["bad"]["status"], graded["bad"]["grade"]["required"]) == ("failed", {"tests/a.py::two": "failed"})


def test_a_python_version_this_host_lacks_is_an_error_row_naming_it(tmp_path):
    repo, _, _, _ = _calc(tmp_path)
    rows = [
        {
            "id": "old",
            "repo": str(repo),
            "instruction": "i",
            "test_command": "true",
            "environment": {"python_version": "3.1", "network": False},
        }
    ]
    out = tmp_path / "out"
    assert run_eval(tasks_file(tmp_path / "t.jsonl", rows), out, script(tmp_path, "idle", [])) == 1
    error = rows_by_id(out)["old"]["error"]
    assert "this task needs Python 3.1 (environment.python_version), which this host does not have" in error
    assert "or name an interpreter with environment.python" in error


def _marshmallow_clone() -> Path:
    """A directory holding a clone of marshmallow-code/marshmallow (SWEBENCH_REPOS,
    else ../shared/repos), as `--repos` takes it."""
    for place in (os.environ.get("SWEBENCH_REPOS"), str(ROOT.parent / "shared" / "repos")):
        if place and (Path(place) / "marshmallow-code__marshmallow").exists():
            return Path(place)
    pytest.skip(
        "no clone of marshmallow-code/marshmallow: set SWEBENCH_REPOS to a directory holding "
        "marshmallow-code__marshmallow (git clone https://github.com/marshmallow-code/marshmallow)"
    )


def test_the_real_marshmallow_rows_pass_with_the_gold_patch_and_fail_unpatched(tmp_path):
    repos = _marshmallow_clone()
    if find_python("3.9") is None:
        pytest.skip("SWE-bench's spec for these rows needs Python 3.9, which this host does not have")
    rows = [r for r in _lite_rows() if r["repo"] == "marshmallow-code/marshmallow"]
    tasks = tasks_file(tmp_path / "mm.jsonl", rows)
    out = tmp_path / "out"
    for label, patch_of in (("gold", lambda r: r["patch"]), ("base", lambda r: "")):
        predictions = tmp_path / f"{label}.jsonl"
        predictions.write_text(
            "".join(
                json.dumps({"instance_id": r["instance_id"], "model_name_or_path": label, "model_patch": patch_of(r)})
                + "\n"
                for r in rows
            )
        )
        run_eval(
            tasks,
            out,
            tmp_path / "none",
            "--repos",
            str(repos),
            "--predictions",
            str(predictions),
            "--setup-network",
            "--redo",
        )
        graded = rows_by_id(out)
        for row in rows:
            grade = graded[row["instance_id"]]["grade"]
            f2p, p2p = grade["groups"]["FAIL_TO_PASS"], grade["groups"]["PASS_TO_PASS"]
            assert p2p["passing"] == p2p["total"] > 0, (label, grade)
            assert f2p["passing"] == (f2p["total"] if label == "gold" else 0), (label, grade)
            assert graded[row["instance_id"]]["status"] == ("passed" if label == "gold" else "failed")
    assert all(r["environment_reused"] for r in graded.values())  # the base run reused the gold run's builds


def test_a_test_needing_a_module_the_environment_lacks_is_an_error_row_naming_it(tmp_path):
    repo, base, _, gold = _calc(tmp_path)
    needs = (
        "diff --git a/tests/test_json.py b/tests/test_json.py\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/tests/test_json.py\n@@ -0,0 +1,5 @@\n+import simplejson_not_installed\n+\n+\n"
        "+def test_dumps():\n+    assert simplejson_not_installed\n"
    )
    row = {**_swe_row(repo, base, needs, "needs"), "FAIL_TO_PASS": ["tests/test_json.py::test_dumps"]}
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(json.dumps({"instance_id": "needs", "model_name_or_path": "m", "model_patch": gold}) + "\n")
    out = tmp_path / "out"
    run_eval(
        tasks_file(tmp_path / "swe.jsonl", [row]),
        out,
        tmp_path / "none",
        "--repos",
        str(repo.parent),
        "--predictions",
        str(predictions),
    )
    graded = rows_by_id(out)["needs"]
    assert graded["status"] == "error"
    assert graded["error"].startswith(
        "collecting tests/test_json.py failed: no module named 'simplejson_not_installed': "
        "the task's environment lacks it"
    )
