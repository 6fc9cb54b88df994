"""The eval task file: schema, clear per-line problems, SWE-bench rows, --strict."""

import json
import shlex
from pathlib import Path

import pytest

from agents.errors import ConfigError
from cluster.eval.swebench import DEFAULT_RUNNER
from cluster.eval.task_file import load_tasks
from cluster.eval.tasks import Task, absolute_spec, is_url
from cluster.terminal._cli import main
from tests.support import ROOT


def _write_lines(path: Path, rows: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def _task(**fields) -> dict:
    return {"id": "t1", "repo": "repo", "instruction": "Fix it.", "test_command": "pytest -q", **fields}


def test_a_full_task_line_loads_with_paths_made_absolute(tmp_path):
    (tmp_path / "repo").mkdir()
    path = _write_lines(
        tmp_path / "tasks.jsonl",
        [
            _task(
                ref="main",
                setup_command="pip list",
                test_patch="diff",
                timeouts={"setup_s": 30, "test_s": 60},
                budgets={"turns": 5, "tokens": 10_000, "cost_usd": 0.5, "wall_s": 120},
                model="scripted:s.yaml",
                strategy="raw",
                metadata={"source": "hand"},
            )
        ],
    )
    loaded = load_tasks(path)
    assert loaded.problems == []
    (task,) = loaded.tasks
    assert task.repo == str((tmp_path / "repo").resolve())
    assert task.model == f"scripted:{(tmp_path / 's.yaml').resolve()}"
    assert (task.ref, task.setup_command, task.test_command, task.strategy) == ("main", "pip list", "pytest -q", "raw")
    assert (task.timeouts.setup_s, task.timeouts.test_s) == (30, 60)
    assert task.budgets.model_dump() == {"turns": 5, "tokens": 10_000, "cost_usd": 0.5, "wall_s": 120}


def test_defaults_and_urls_stay_as_given(tmp_path):
    path = _write_lines(tmp_path / "t.jsonl", [_task(repo="https://example.invalid/acme/calc.git")])
    (task,) = load_tasks(path).tasks
    assert task.repo == "https://example.invalid/acme/calc.git"
    assert (task.ref, task.setup_command, task.model, task.test_patch) == (None, None, None, None)
    assert (task.timeouts.setup_s, task.timeouts.test_s) == (600, 600)
    assert task.budgets.turns is None and task.budgets.wall_s is None
    assert is_url("git@github.com:acme/calc.git") and not is_url("repos/calc")


def test_malformed_lines_name_the_line_and_field_and_the_other_lines_still_load(tmp_path):
    path = _write_lines(
        tmp_path / "tasks.jsonl",
        [
            _task(id="good-1"),
            "",
            '{"id": "no-comma" "repo": "r"}',
            _task(id="missing-test", test_command=None),
            _task(id="typo", tset_command="x"),
            _task(id="bad-budget", budgets={"turns": 0}),
            "[1, 2]",
            _task(id="good-1"),
            _task(id="good-2"),
        ],
    )
    loaded = load_tasks(path)
    assert [t.id for t in loaded.tasks] == ["good-1", "good-2"]
    problems = {(p.line, p.field): p.message for p in loaded.problems}
    assert problems[(3, None)].startswith("not valid JSON (Expecting ',' delimiter at column")
    assert problems[(4, "test_command")] == "Input should be a valid string"
    assert problems[(5, "tset_command")].startswith("unknown field (known: id, repo, ref, instruction")
    assert problems[(6, "budgets.turns")] == "Input should be greater than or equal to 1"
    assert problems[(7, None)] == "expected a JSON object, got list"
    assert problems[(8, "id")] == "duplicate task id 'good-1' (first on line 1)"
    lines = loaded.problem_lines()
    assert lines[0] == f"{path} line 3: {problems[(3, None)]}"
    assert f"{path} line 6: field 'budgets.turns': Input should be greater than or equal to 1" in lines


def test_a_missing_field_and_bad_utf8_are_named(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(json.dumps({"id": "x", "repo": "r", "test_command": "t"}).encode() + b"\n\xff\xfe\n")
    loaded = load_tasks(path)
    assert [(p.line, p.field, p.message) for p in loaded.problems] == [
        (1, "instruction", "Field required"),
        (2, None, "not valid UTF-8"),
    ]


def test_an_unreadable_task_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="task file .*nope.jsonl cannot be read"):
        load_tasks(tmp_path / "nope.jsonl")


def test_absolute_spec_leaves_other_providers_alone(tmp_path):
    assert absolute_spec("anthropic:claude-sonnet-4-5", tmp_path) == "anthropic:claude-sonnet-4-5"
    assert absolute_spec("scripted:/abs/s.yaml", tmp_path) == "scripted:/abs/s.yaml"
    assert absolute_spec(None, tmp_path) is None


# -- SWE-bench rows ----------------------------------------------------------------------


def _swebench_row(**fields) -> dict:
    row = {
        "repo": "acme/calc",
        "instance_id": "acme__calc-1",
        "base_commit": "abc123",
        "patch": "GOLD PATCH -- never shown",
        "test_patch": "diff --git a/t.py b/t.py\n",
        "problem_statement": "add() subtracts.\n",
        "hints_text": "",
        "created_at": "2024-01-01",
        "version": "1.0",
        "FAIL_TO_PASS": json.dumps(["tests/test_calc.py::test_add"]),
        "PASS_TO_PASS": json.dumps(["tests/test_calc.py::test_sub[a b]"]),
        "environment_setup_commit": "abc123",
    }
    row.update(fields)
    return row


def test_swebench_rows_become_tasks_with_the_local_clone_and_a_pytest_grader(tmp_path):
    repos = tmp_path / "repos"
    (repos / "acme__calc").mkdir(parents=True)
    (repos / "other").mkdir()
    path = _write_lines(
        tmp_path / "swe.jsonl",
        [
            _swebench_row(),
            _swebench_row(
                instance_id="acme__other-2",
                repo="acme/other",
                FAIL_TO_PASS=["t.py::a"],
                PASS_TO_PASS=[],
                budgets={"turns": 7},
                test_command="make test",
            ),
        ],
    )
    loaded = load_tasks(path, repos_dir=repos)
    assert loaded.problems == []
    first, second = loaded.tasks
    assert first.id == "acme__calc-1" and first.repo == str((repos / "acme__calc").resolve())
    assert first.ref == "abc123" and first.test_patch == "diff --git a/t.py b/t.py\n"
    assert "add() subtracts." in first.instruction and "acme/calc" in first.instruction
    assert "GOLD PATCH" not in first.model_dump_json()
    assert shlex.split(first.test_command) == [
        *shlex.split(DEFAULT_RUNNER),
        "tests/test_calc.py::test_add",
        "tests/test_calc.py::test_sub[a b]",
    ]
    # owner/name falls back to DIR/name; eval fields in the row override the built ones
    assert second.repo == str((repos / "other").resolve())
    assert second.test_command == "make test" and second.budgets.turns == 7


def test_swebench_row_with_the_repo_missing_locally_loads_and_says_where_it_looked(tmp_path):
    path = _write_lines(tmp_path / "swe.jsonl", [_swebench_row()])
    (task,) = load_tasks(path, repos_dir=tmp_path / "clones").tasks
    assert task.metadata["swebench_repo"] == "acme/calc"
    assert task.metadata["looked_for"] == [str((tmp_path / "clones" / n).resolve()) for n in ("acme__calc", "calc")]


def test_malformed_swebench_rows_name_the_field(tmp_path):
    path = _write_lines(
        tmp_path / "swe.jsonl",
        [
            _swebench_row(FAIL_TO_PASS="[not json"),
            _swebench_row(instance_id="b", base_commit=None),
            _swebench_row(instance_id="c", FAIL_TO_PASS=[], PASS_TO_PASS=[]),
            _swebench_row(instance_id="d", FAIL_TO_PASS=[1, 2]),
            _swebench_row(instance_id="e", budgets={"wall_s": -1}),
        ],
    )
    problems = [(p.line, p.field, p.message) for p in load_tasks(path).problems]
    assert problems == [
        (1, "FAIL_TO_PASS", "a JSON string that does not parse (Expecting value)"),
        (2, "base_commit", "field required (a non-empty string)"),
        (3, "FAIL_TO_PASS", "names no test; the grader would have nothing to run"),
        (4, "FAIL_TO_PASS", "must be a list of test ids (or a JSON string of one)"),
        (5, "budgets.wall_s", "Input should be greater than 0"),
    ]


def test_a_json_array_file_like_the_swebench_dumps_loads_with_item_numbers(tmp_path):
    (tmp_path / "calc").mkdir()
    path = tmp_path / "dump.json"
    path.write_text(json.dumps([_swebench_row(), {"instance_id": "broken"}]))
    loaded = load_tasks(path)
    assert [t.id for t in loaded.tasks] == ["acme__calc-1"]
    assert loaded.problem_lines() == [f"{path} item 2: field 'repo': field required (a non-empty string)"]


def test_the_shared_swebench_lite_dev_rows_all_load():
    # ../shared/traces beside the repository, as the trace-loader tests use it
    dump = ROOT.parent / "shared" / "traces" / "tasks" / "princeton-nlp-SWE-bench_Lite-dev.json"
    assert dump.is_file(), f"SWE-bench Lite dev rows not found at {dump}: this test needs ../shared/traces"
    loaded = load_tasks(dump, repos_dir=Path("/nonexistent"))
    assert loaded.problems == [] and len(loaded.tasks) == len(json.loads(dump.read_text()))
    assert all(isinstance(t, Task) and t.test_patch and t.ref for t in loaded.tasks)


# -- --strict ----------------------------------------------------------------------------


def test_strict_refuses_to_start_when_any_line_is_invalid(tmp_path, capsys):
    (tmp_path / "repo").mkdir()
    path = _write_lines(tmp_path / "tasks.jsonl", [_task(), _task(id="t2", instruction="")])
    out = tmp_path / "out"
    code = main(["eval", str(path), "--model", "scripted:none.yaml", "--out", str(out), "--local", "--strict"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "1 invalid task line(s), nothing was run (--strict)" in err
    assert "line 2: field 'instruction': String should have at least 1 character" in err
    assert not out.exists()


def test_a_file_without_any_valid_task_is_a_usage_error(tmp_path, capsys):
    path = _write_lines(tmp_path / "tasks.jsonl", ["nope"])
    assert main(["eval", str(path), "--out", str(tmp_path / "out"), "--local"]) == 2
    assert "no valid task in" in capsys.readouterr().err
