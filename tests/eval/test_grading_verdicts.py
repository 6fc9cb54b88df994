"""The per-test grader's pieces: which commands it takes, which configuration it uses,
and how a run's records become outcomes. The whole grade, attacked, is in
tests/eval/test_grading_attacks.py."""

from __future__ import annotations

import json

import pytest

from cluster.eval.tasks import Task
from cluster.eval.verdicts.command import PytestCommand
from cluster.eval.verdicts.config import base_config
from cluster.eval.verdicts.outcomes import read_run, reasons_for


@pytest.mark.parametrize(
    "command",
    [
        "python -m pytest -q tests",
        "python3 -m pytest",
        "python3.11 -W error -m pytest tests/a.py::t",
        "/opt/venv/bin/python -u -m pytest -x",
        "pytest -q",
        "py.test",
        "PYTHONPATH=src DJANGO=1 pytest tests",
        "python -m pytest 'tests/test_x.py::test_a[a b]'",
    ],
)
def test_a_single_pytest_command_is_graded_per_test(command):
    assert PytestCommand.parse(command) is not None


@pytest.mark.parametrize(
    "command",
    [
        "make test",
        "tox -e py311",
        "cd sub && pytest",
        "pytest | tee log",
        "pytest > log",
        "python -m unittest",
        "python run_tests.py",
        "python -c 'import pytest; pytest.main()'",
        "$PY -m pytest",
        "pytest $(cat ids)",
    ],
)
def test_anything_else_is_graded_by_its_exit_code(command):
    assert PytestCommand.parse(command) is None


def test_the_rewritten_line_keeps_the_tasks_words_and_starts_the_interpreter_isolated():
    command = PytestCommand.parse("PATH=$PWD/bin:$PATH PYTHONPATH=$PWD/src python3 -W error -m pytest -q 'a b.py'")
    assert command is not None
    line = command.line(bootstrap="BOOT", report="/w/r.jsonl", config=".workingset-grader.ini", root="/w")
    assert line == (
        "_WORKINGSET_GRADER_REPORT=/w/r.jsonl _WORKINGSET_GRADER_CWD=1 _WORKINGSET_GRADER_PYTHONPATH=$PWD/src "
        "PATH=$PWD/bin:$PATH python3 -I -S -W error -c BOOT -q 'a b.py' -c .workingset-grader.ini "
        "--rootdir=/w --confcutdir=/w"
    )


def test_the_pytest_script_runs_as_the_interpreter_beside_it_without_the_working_directory_on_its_path():
    command = PytestCommand.parse("/opt/venv/bin/pytest -q")
    assert command is not None and (command.interpreter, command.module_form) == ("/opt/venv/bin/python3", False)


def test_the_base_configuration_is_found_in_pytests_own_order():
    read = {
        "pyproject.toml": b"[tool.pytest.ini_options]\naddopts = '-q'\n",
        "tox.ini": b"[pytest]\n",
        "setup.cfg": b"[tool:pytest]\n",
    }.get
    config = base_config(read)
    assert (config.path, config.source) == (".workingset-grader.toml", "pyproject.toml of the base")
    assert config.data == read("pyproject.toml")


def test_a_file_without_a_pytest_section_is_passed_over():
    read = {"pyproject.toml": b"[tool.black]\n", "setup.cfg": b"[metadata]\nname = x\n[tool:pytest]\nx = 1\n"}.get
    assert base_config(read).path == ".workingset-grader.cfg"


def test_a_pytest_toml_keeps_its_name_and_no_configuration_is_an_empty_section():
    assert base_config({"pytest.toml": b"[pytest]\n"}.get).path == "pytest.toml"
    empty = base_config({}.get)
    assert (empty.path, empty.data) == (".workingset-grader.ini", b"[pytest]\n")


def test_the_file_the_command_names_is_read_from_the_base():
    config = base_config({"ci/pytest.ini": b"[pytest]\naddopts = -x\n"}.get, named="ci/pytest.ini")
    assert (config.path, config.data) == (".workingset-grader.ini", b"[pytest]\naddopts = -x\n")


def _records(*records: dict) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def _test(test_id: str, when: str, outcome: str, **extra) -> dict:
    return {"event": "test", "id": test_id, "when": when, "outcome": outcome, **extra}


def test_each_tests_phases_fold_into_one_outcome():
    run = read_run(
        _records(
            {"event": "boot", "python": "3.11"},
            {"event": "start", "pytest": "9"},
            _test("a", "setup", "passed"),
            _test("a", "call", "passed"),
            _test("a", "teardown", "passed"),
            _test("b", "setup", "failed"),
            _test("b", "teardown", "passed"),
            _test("c", "setup", "passed"),
            _test("c", "call", "failed"),
            _test("c", "teardown", "failed"),
            _test("d", "setup", "skipped"),
            _test("e", "setup", "passed"),
            _test("e", "call", "skipped", xfail=True),
            _test("f", "setup", "passed"),
            _test("f", "call", "passed", xfail=True),
            _test("g", "setup", "passed"),
            _test("g", "call", "passed"),
            _test("g", "teardown", "failed"),
            {"event": "finish", "exitstatus": 1},
        )
    )
    assert run.outcomes == {
        "a": "passed",
        "b": "error",
        "c": "failed",
        "d": "skipped",
        "e": "xfailed",
        "f": "xpassed",
        "g": "error",
    }
    assert run.outcome("h") == "missing" and run.finished and run.exit_status == 1


def test_required_tests_that_pass_with_a_finished_session_give_no_reason():
    run = read_run(
        _records(
            {"event": "boot"},
            {"event": "start"},
            _test("a", "call", "passed"),
            _test("b", "call", "skipped", xfail=True),
            {"event": "finish", "exitstatus": 1},
        )
    )
    assert reasons_for(run, ["a", "b"]) == []


def test_a_session_that_never_finished_fails_whatever_its_tests_said():
    run = read_run(_records({"event": "boot"}, {"event": "start"}, _test("a", "call", "passed")))
    assert reasons_for(run, ["a"]) == ["pytest did not finish its session (no end-of-session record)"]


def test_a_passing_report_after_the_call_raised_is_a_failure():
    run = read_run(_records({"event": "start"}, _test("a", "call", "passed", raised=True), {"event": "finish"}))
    assert run.outcome("a") == "failed" and run.overridden == ["a"]
    assert reasons_for(run, ["a"])[-1].startswith("reported passed although the test raised")


def test_lines_that_are_not_records_are_counted_and_skipped():
    run = read_run(b"not json\n[1, 2]\n" + _records({"event": "finish"}))
    assert (run.unreadable, run.finished) == (2, True)


def test_per_test_grading_of_a_command_that_is_not_pytest_is_refused_at_load():
    with pytest.raises(ValueError, match="grading.verdict is per-test, but the test command is not one pytest command"):
        Task(id="t", repo="r", instruction="i", test_command="make test", grading={"verdict": "per-test"})


def test_groups_must_name_required_tests():
    with pytest.raises(ValueError, match="test_groups name ids that are not in tests: b"):
        Task(
            id="t",
            repo="r",
            instruction="i",
            test_command="pytest",
            grading={"tests": ["a"], "test_groups": {"X": ["b"]}},
        )
