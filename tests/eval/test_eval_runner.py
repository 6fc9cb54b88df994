"""`workingset eval` end to end, in-process (`--local`): real git repositories in
tmp_path, scripted models, the sandboxed grader. Rows for every status, setup and
repository failures, rerun / --retry-failed, the report files, SWE-bench rows, the
--json stream, Ctrl-C and resume, and the retry after lost infrastructure."""

import asyncio
import io
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.settings._config import WorkingsetSettings
from cluster.connection._runtime import ClusterError
from cluster.eval.hosts import LocalHost
from cluster.eval.progress import JsonReporter
from cluster.eval.runner import EvalOptions, EvalRunner
from cluster.eval.task_file import load_tasks
from cluster.eval.task_flow import NodeLost
from cluster.terminal._cli import main
from tests.support.eval_support import ROOT
from tests.support.eval_support import calc_repo as _calc_repo
from tests.support.eval_support import fix_turns as _fix_turns
from tests.support.eval_support import git as _git
from tests.support.eval_support import result_rows as _rows
from tests.support.eval_support import rows_by_id as _by_id
from tests.support.eval_support import run_eval as _eval
from tests.support.eval_support import script as _script
from tests.support.eval_support import task as _task
from tests.support.eval_support import tasks_file as _tasks_file

# -- passed and failed, and what is kept -------------------------------------------------


def test_batch_grades_each_task_keeps_patches_and_never_touches_the_source(tmp_path, capsys):
    repo = _calc_repo(tmp_path)
    head = _git(repo, "rev-parse", "HEAD")
    fix = _script(tmp_path, "fix", _fix_turns())
    idle = _script(tmp_path, "idle", [{"text": "Looks fine to me."}])
    tasks = _tasks_file(
        tmp_path / "tasks.jsonl",
        [
            _task("fixed", repo),
            _task("unfixed", repo, model=f"scripted:{idle}"),
        ],
    )
    out = tmp_path / "out"
    assert _eval(tasks, out, fix, "--concurrency", "2") == 0

    rows = _by_id(out)
    fixed, unfixed = rows["fixed"], rows["unfixed"]
    assert (fixed["status"], fixed["stop_reason"], fixed["tests_passed"], fixed["test_exit_code"]) == (
        "passed",
        "end_turn",
        True,
        0,
    )
    assert fixed["turns"] == 4 and fixed["input_tokens"] > 0 and fixed["output_tokens"] > 0
    assert (fixed["cost_usd"], fixed["unpriced_calls"], fixed["pricing"]) == (0.0, 4, "scripted")  # no dollars
    assert fixed["wall_s"] >= fixed["agent_wall_s"] > 0
    assert fixed["base_commit"] == head and fixed["session_id"] and fixed["attempt"] == 1
    patch = (out / fixed["patch_path"]).read_text()
    assert fixed["patch_path"] == "patches/fixed.diff"
    assert "-    return a - b" in patch and "+    return a + b" in patch
    assert "ok" in (out / fixed["grade_log"]).read_text()
    events = [json.loads(line) for line in (out / fixed["events_path"]).read_text().splitlines()]
    assert [e["phase"] for e in events if e["type"] == "eval_phase"] == ["workspace", "agent", "patch", "grade"]
    assert [e["name"] for e in events if e["type"] == "tool_call"] == ["Read", "Edit", "Bash"]
    (ended,) = [e for e in events if e["type"] == "session_ended"]
    assert (ended["reason"], ended["final_text"], ended["turns"]) == ("end_turn", "Fixed add().", 4)
    bash = [e for e in events if e["type"] == "tool_result" and e["name"] == "Bash"]
    assert "exit code: 0" in bash[0]["content"]  # Bash was allowed headless (the eval's allow-list)

    assert (unfixed["status"], unfixed["tests_passed"], unfixed["test_exit_code"]) == ("failed", False, 1)
    assert unfixed["patch_path"] is None and unfixed["model"] == f"scripted:{idle}" and unfixed["turns"] == 1

    # the source repository is as it was; the workspaces are gone; sessions live in out/home
    assert _git(repo, "status", "--porcelain") == "" and _git(repo, "rev-parse", "HEAD") == head
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert list((out / "workspaces").iterdir()) == []
    assert (out / "home" / "snapshots" / fixed["session_id"]).is_dir()

    summary = json.loads((out / "summary.json").read_text())
    assert summary["statuses"]["passed"] == 1 and summary["statuses"]["failed"] == 1 and summary["pass_rate"] == 0.5
    assert (summary["cost_usd"], summary["cost_per_solved_usd"], summary["unpriced_tasks"]) == (None, None, 2)
    report = (out / "report.md").read_text()
    assert "| pass rate | 50.0 % (1 / 2) |" in report and "| fixed | passed | exit code 0 | 4 |" in report
    assert "2 tasks not priced (scripted)" in report and "| scripted |" in report
    predictions = {p["instance_id"]: p for p in map(json.loads, (out / "predictions.jsonl").read_text().splitlines())}
    assert predictions["fixed"]["model_patch"] == patch and predictions["unfixed"]["model_patch"] == ""
    assert predictions["fixed"]["model_name_or_path"] == f"scripted:{fix}"
    printed = capsys.readouterr().out
    assert "passed fixed" in printed and "failed unfixed" in printed and "done: 1/2 passed (50.0 %)" in printed


def test_keep_workspaces_keeps_them_with_the_agents_edits(tmp_path):
    repo = _calc_repo(tmp_path)
    tasks = _tasks_file(tmp_path / "tasks.jsonl", [_task("fixed", repo)])
    out = tmp_path / "out"
    assert _eval(tasks, out, _script(tmp_path, "fix", _fix_turns()), "--keep-workspaces") == 0
    (row,) = _rows(out)
    assert row["workspace"] == str(out / "workspaces" / "fixed")
    assert "a + b" in (out / "workspaces" / "fixed" / "calc.py").read_text()


# -- timeout, budget and error rows ------------------------------------------------------


def test_timeout_budget_and_error_rows_and_the_batch_goes_on(tmp_path):
    repo = _calc_repo(tmp_path)
    fix = _script(tmp_path, "fix", _fix_turns())
    slow = _script(tmp_path, "slow", _fix_turns(sleep_ms=60_000))
    overloaded = _script(tmp_path, "overloaded", [{"error": "overloaded"}])
    tasks = _tasks_file(
        tmp_path / "tasks.jsonl",
        [
            _task("slow", repo, model=f"scripted:{slow}", budgets={"wall_s": 1}),
            _task("few-turns", repo, budgets={"turns": 1}),
            _task("few-tokens", repo, budgets={"tokens": 100}),
            _task("overloaded", repo, model=f"scripted:{overloaded}"),
            _task("no-repo", tmp_path / "nowhere"),
            _task("bad-setup", repo, setup_command="echo installing; echo no such package >&2; exit 3"),
            _task("slow-setup", repo, setup_command="sleep 30", timeouts={"setup_s": 0.5}),
            _task("slow-grader", repo, test_command="sleep 30", timeouts={"test_s": 0.5}),
            _task("bad-strategy", repo, strategy="no-such-strategy"),
            _task("fine", repo),
        ],
    )
    out = tmp_path / "out"
    assert _eval(tasks, out, fix, "--concurrency", "4") == 1  # error rows: exit 1, every task ran

    rows = _by_id(out)
    assert len(rows) == 10
    slow_row = rows["slow"]
    assert (slow_row["status"], slow_row["stop_reason"], slow_row["tests_passed"]) == ("timeout", "timeout", False)
    assert 1.0 <= slow_row["agent_wall_s"] < 30  # stopped at its budget, not after its 60 s turn
    assert "stopped at the wall-clock budget of 1 s" in slow_row["notes"]
    assert (rows["few-turns"]["status"], rows["few-turns"]["stop_reason"], rows["few-turns"]["turns"]) == (
        "budget",
        "turn_limit",
        1,
    )
    assert (rows["few-tokens"]["status"], rows["few-tokens"]["stop_reason"]) == ("budget", "budget")
    assert rows["overloaded"]["status"] == "error"
    assert rows["overloaded"]["error"] == "the agent failed: Overloaded: scripted: overloaded"
    assert (
        rows["no-repo"]["error"] == f"workspace: repository {tmp_path / 'nowhere'} does not exist or is not a directory"
    )
    assert rows["bad-setup"]["error"] == (
        "setup failed (exit code 3): installing\nno such package (log: logs/bad-setup/setup.log)"
    )
    assert "no such package" in (out / "logs" / "bad-setup" / "setup.log").read_text()
    assert rows["slow-setup"]["error"] == "setup timed out after 0.5 s (log: logs/slow-setup/setup.log)"
    assert rows["slow-grader"]["status"] == "error"
    assert rows["slow-grader"]["error"] == "the test command timed out after 0.5 s (log: logs/slow-grader/grade.log)"
    assert rows["slow-grader"]["patch_path"] == "patches/slow-grader.diff"  # the agent's work is kept anyway
    assert rows["bad-strategy"]["status"] == "error" and "no-such-strategy" in rows["bad-strategy"]["error"]
    assert rows["fine"]["status"] == "passed"
    assert all(r["turns"] == 0 for k, r in rows.items() if k in ("no-repo", "bad-setup", "slow-setup"))
    assert list((out / "workspaces").iterdir()) == []
    summary = json.loads((out / "summary.json").read_text())
    assert summary["statuses"] == {
        "passed": 1,
        "failed": 0,
        "error": 6,
        "timeout": 1,
        "budget": 2,
        "truncated": 0,
        "refused": 0,
        "infra_error": 0,
    }


def test_a_patch_that_breaks_the_setup_fails_in_the_grading_copy(tmp_path):
    repo = _calc_repo(tmp_path)
    breaks = _script(
        tmp_path,
        "breaks",
        [
            {
                "text": "Fixing.",
                "tool_calls": [
                    _fix_turns()[1]["tool_calls"][0],
                    {"name": "Write", "input": {"path": "broken", "content": "x\n"}},
                ],
            },
            {"text": "Done."},
        ],
    )
    tasks = _tasks_file(tmp_path / "tasks.jsonl", [_task("a", repo, setup_command="test ! -e broken")])
    out = tmp_path / "out"
    assert _eval(tasks, out, breaks) == 0
    (row,) = _rows(out)
    assert (row["status"], row["tests_passed"], row["grade_log"]) == ("failed", None, None)
    assert row["error"] == (
        "the setup command failed (exit code 1) in the grading copy, with the agent's patch "
        "applied: (no output) (log: logs/a/grade-setup.log)"
    )
    assert (out / "logs" / "a" / "setup.log").is_file() and list((out / "grading").iterdir()) == []


def test_default_budgets_come_from_the_flags(tmp_path):
    repo = _calc_repo(tmp_path)
    tasks = _tasks_file(tmp_path / "tasks.jsonl", [_task("a", repo), _task("b", repo, budgets={"turns": 10})])
    out = tmp_path / "out"
    _eval(tasks, out, _script(tmp_path, "fix", _fix_turns()), "--max-turns", "2")
    rows = _by_id(out)
    assert (rows["a"]["status"], rows["a"]["turns"]) == ("budget", 2)
    assert rows["b"]["status"] == "passed"


# -- rerun and --retry-failed ------------------------------------------------------------


def test_rerun_skips_finished_tasks_and_retry_failed_runs_the_others_again(tmp_path):
    repo = _calc_repo(tmp_path)
    fix = _script(tmp_path, "fix", _fix_turns())
    rows = [_task("good", repo), _task("broken-setup", repo, setup_command="exit 1")]
    tasks = _tasks_file(tmp_path / "tasks.jsonl", rows)
    out = tmp_path / "out"
    assert _eval(tasks, out, fix) == 1
    assert sorted((r["task_id"], r["status"]) for r in _rows(out)) == [("broken-setup", "error"), ("good", "passed")]

    assert _eval(tasks, out, fix, "--json") == 1  # the same command: nothing runs again
    assert len(_rows(out)) == 2

    rows[1]["setup_command"] = "true"  # the setup is fixed; the failed task runs again
    _tasks_file(tasks, rows)
    assert _eval(tasks, out, fix, "--retry-failed") == 0
    history = _rows(out)
    assert len(history) == 3
    assert (history[-1]["task_id"], history[-1]["status"], history[-1]["attempt"]) == ("broken-setup", "passed", 2)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["statuses"]["passed"] == 2 and summary["finished"] == 2

    assert _eval(tasks, out, fix, "--retry-failed") == 0  # every task passed: nothing to retry
    assert len(_rows(out)) == 3


# -- the --json stream -------------------------------------------------------------------


def test_json_streams_per_task_events(tmp_path, capsys):
    repo = _calc_repo(tmp_path)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        json.dumps(_task("a", repo)) + "\n{broken\n" + json.dumps(_task("b", repo, setup_command="true")) + "\n"
    )
    out = tmp_path / "out"
    assert _eval(tasks, out, _script(tmp_path, "fix", _fix_turns()), "--json", "--concurrency", "1") == 1
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "task_invalid" and events[0]["line"] == 2 and "not valid JSON" in events[0]["message"]
    assert kinds[1] == "eval_started" and events[1]["to_run"] == 2 and events[1]["runtime"] == "local"
    assert kinds[-1] == "eval_finished" and events[-1]["summary"]["statuses"]["passed"] == 2
    for task_id, phases in (
        ("a", ["workspace", "agent", "patch", "grade"]),
        ("b", ["workspace", "setup", "agent", "patch", "grade"]),
    ):
        mine = [e for e in events if e.get("task_id") == task_id]
        assert [e["type"] for e in mine] == ["task_started", *["task_phase"] * len(phases), "task_finished"]
        assert [e["phase"] for e in mine if e["type"] == "task_phase"] == phases
        assert mine[-1]["status"] == "passed" and mine[-1]["result"]["turns"] == 4
    assert all("ts" in e for e in events)


# -- SWE-bench rows ----------------------------------------------------------------------


def test_swebench_rows_run_against_local_clones_with_hidden_tests(tmp_path):
    repos = tmp_path / "clones"
    repo = _calc_repo(repos, "acme__calc")
    (repo / "test_calc.py").unlink()
    _git(repo, "commit", "-qam", "no tests yet")
    base = _git(repo, "rev-parse", "HEAD")
    (repo / "calc.py").write_text("def add(a, b):\n    return 0\n")
    _git(repo, "commit", "-qam", "later commit the task must not start from")
    test_patch = (
        "diff --git a/tests/test_add.py b/tests/test_add.py\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/tests/test_add.py\n@@ -0,0 +1,5 @@\n+from calc import add\n+\n+\n"
        "+def test_add():\n+    assert add(2, 3) == 5\n"
    )
    row = {
        "repo": "acme/calc",
        "instance_id": "acme__calc-7",
        "base_commit": base,
        "patch": "gold",
        "test_patch": test_patch,
        "problem_statement": "add() subtracts instead of adding",
        "FAIL_TO_PASS": json.dumps(["tests/test_add.py::test_add"]),
        "PASS_TO_PASS": "[]",
    }
    missing = {**row, "instance_id": "elsewhere__lib-1", "repo": "elsewhere/lib"}
    tasks = _tasks_file(tmp_path / "swe.jsonl", [row, missing])
    fix = _script(tmp_path, "fix", _fix_turns()[:2] + [{"text": "Fixed."}])
    out = tmp_path / "out"
    code = main(
        [
            "eval",
            str(tasks),
            "--model",
            f"scripted:{fix}",
            "--out",
            str(out),
            "--local",
            "--repos",
            str(repos),
            "--swebench-runner",
            "python3 -m pytest -q -p no:cacheprovider --rootdir=.",
        ]
    )
    assert code == 1
    rows = _by_id(out)
    solved = rows["acme__calc-7"]
    assert solved["status"] == "passed" and solved["base_commit"] == base
    assert "1 passed" in (out / solved["grade_log"]).read_text()
    assert solved["grade"]["required"] == {"tests/test_add.py::test_add": "passed"}
    assert solved["grade"]["groups"] == {
        "FAIL_TO_PASS": {"passing": 1, "total": 1},
        "PASS_TO_PASS": {"passing": 0, "total": 0},
    }
    assert rows["elsewhere__lib-1"]["error"] == (
        f"workspace: repository elsewhere/lib is not available locally (looked for {repos / 'elsewhere__lib'}, "
        f"{repos / 'lib'}); pass --repos DIR holding a clone"
    )
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [p["instance_id"] for p in predictions] == ["acme__calc-7", "elsewhere__lib-1"]
    model_patch = predictions[0]["model_patch"]
    assert "+    return a + b" in model_patch and "tests/test_add.py" not in model_patch  # the agent's change only
    assert predictions[0]["model_name_or_path"] == f"scripted:{fix}"


# -- Ctrl-C and resume -------------------------------------------------------------------


def _runner(tmp_path: Path, tasks: Path, model: Path, out: Path, host=None, reporter=None, **options) -> EvalRunner:
    settings = WorkingsetSettings(
        model=f"scripted:{model}",
        home=tmp_path / "ignored",
        permissions={"mode": "accept-edits", "allow": ["Bash"], "headless": "deny-asks"},
    )
    loaded = load_tasks(tasks)
    return EvalRunner(
        settings,
        loaded.tasks,
        EvalOptions(out=out, **options),
        host=host or LocalHost(),
        reporter=reporter or JsonReporter(stream=io.StringIO()),
    )


async def test_cancelling_the_run_keeps_finished_results_and_the_rerun_resumes(tmp_path):
    repo = _calc_repo(tmp_path)
    fix = _script(tmp_path, "fix", _fix_turns())
    slow = _script(tmp_path, "slow", _fix_turns(sleep_ms=60_000))
    tasks = _tasks_file(
        tmp_path / "tasks.jsonl",
        [_task("quick", repo), _task("stuck", repo, model=f"scripted:{slow}"), _task("later", repo)],
    )
    out = tmp_path / "out"
    runner = _runner(tmp_path, tasks, fix, out, concurrency=2)
    run = asyncio.ensure_future(runner.run())
    while not (out / "results.jsonl").exists() or not (out / "workspaces" / "stuck").exists():
        assert not run.done()
        await asyncio.sleep(0.05)
    run.cancel()  # what Ctrl-C does to asyncio.run's main task
    try:
        await run
        raise AssertionError("the run should end cancelled")
    except asyncio.CancelledError:
        pass

    kept = _rows(out)
    assert [r["task_id"] for r in kept] in (["quick"], ["quick", "later"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["pending"] == 3 - len(kept)
    assert "interrupted: rerun the same command to finish" in (out / "report.md").read_text()
    assert list((out / "workspaces").iterdir()) == []  # the interrupted task's workspace is gone

    # the rerun runs only what had no row; the stuck task now gets a quick model
    tasks.write_text(tasks.read_text().replace(str(slow), str(fix)))
    summary = await _runner(tmp_path, tasks, fix, out, concurrency=2).run()
    rows = _rows(out)
    assert sorted(r["task_id"] for r in rows) == ["later", "quick", "stuck"]
    assert all(r["attempt"] == 1 and r["status"] == "passed" for r in rows)
    assert summary["interrupted"] is False and summary["finished"] == 3


@pytest.mark.parametrize(("stop", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_on_the_command_stops_cleanly_and_the_same_command_resumes(tmp_path, stop, code):
    repo = _calc_repo(tmp_path)
    fix = _script(tmp_path, "fix", _fix_turns())
    slow = _script(tmp_path, "slow", _fix_turns(sleep_ms=60_000))
    tasks = _tasks_file(
        tmp_path / "tasks.jsonl", [_task("quick", repo), _task("stuck", repo, model=f"scripted:{slow}")]
    )
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "cluster.terminal._cli",
        "eval",
        str(tasks),
        "--model",
        f"scripted:{fix}",
        "--out",
        str(out),
        "--local",
        "--json",
        "--concurrency",
        "2",
    ]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not ((out / "results.jsonl").exists() and (out / "workspaces" / "stuck").exists()):
        assert proc.poll() is None and time.monotonic() < deadline, (
            proc.stderr.read() if proc.poll() is not None else "slow"
        )
        time.sleep(0.1)
    proc.send_signal(stop)
    stdout, stderr = proc.communicate(timeout=60)

    assert proc.returncode == code
    assert "Traceback" not in stderr
    assert stderr.strip().endswith(
        f"interrupted; the results so far are in {out}; run the same command again to resume"
    )
    events = [json.loads(line) for line in stdout.splitlines()]
    assert events[-1]["type"] == "eval_finished" and events[-1]["interrupted"] is True
    assert [r["task_id"] for r in _rows(out)] == ["quick"]
    assert list((out / "workspaces").iterdir()) == []

    tasks.write_text(tasks.read_text().replace(str(slow), str(fix)))
    rerun = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert [(r["task_id"], r["status"], r["attempt"]) for r in _rows(out)] == [
        ("quick", "passed", 1),
        ("stuck", "passed", 1),
    ]
    resumed = [json.loads(line) for line in rerun.stdout.splitlines()]
    assert resumed[0]["type"] == "eval_started" and (resumed[0]["to_run"], resumed[0]["skipped"]) == (1, 1)


def test_a_batch_model_strategy_or_summarizer_that_cannot_load_stops_before_anything_runs(tmp_path, capsys):
    repo = _calc_repo(tmp_path)
    tasks = _tasks_file(tmp_path / "tasks.jsonl", [_task("a", repo)])
    out = tmp_path / "out"
    fix = _script(tmp_path, "fix", _fix_turns())
    for flags, message in [
        (["--model", "gpt:4"], "unknown model provider 'gpt'"),
        (["--model", f"scripted:{tmp_path / 'missing.yaml'}"], "missing.yaml cannot be read"),
        (["--model", f"scripted:{fix}", "--strategy", "no-such"], "no-such"),
        (["--model", f"scripted:{fix}", "--summarizer", "gpt:4"], "unknown model provider 'gpt'"),
    ]:
        assert main(["eval", str(tasks), "--out", str(out), "--local", *flags]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
    assert not (out / "results.jsonl").exists()


# -- lost infrastructure: one retry ------------------------------------------------------


class FlakyHost(LocalHost):
    """A local host whose first `failures` session opens fail as a lost cluster would."""

    name = "flaky"

    def __init__(self, failures: int):
        super().__init__()
        self.failures = failures

    async def open(self, workspace, settings, emit, **where):
        if self.failures:
            self.failures -= 1
            raise ClusterError("the actor of session x did not come back within 120 s")
        return await super().open(workspace, settings, emit, **where)

    def retryable(self, exc: BaseException) -> bool:
        return isinstance(exc, ClusterError)


async def test_lost_infrastructure_runs_the_task_again_and_past_its_retries_is_an_infra_error_a_plain_rerun_runs(
    tmp_path,
):
    repo = _calc_repo(tmp_path)
    fix = _script(tmp_path, "fix", _fix_turns())
    tasks = _tasks_file(tmp_path / "tasks.jsonl", [_task("a", repo)])
    events: list[str] = []

    class Recorder(JsonReporter):
        def event(self, kind, **fields):
            events.append(kind)

    out = tmp_path / "out"
    await _runner(tmp_path, tasks, fix, out, host=FlakyHost(failures=1), reporter=Recorder()).run()
    (row,) = _rows(out)
    assert (row["status"], row["retries"]) == ("passed", 1)
    assert row["notes"] == [
        "run again after lost infrastructure: ClusterError: the actor of session x did not come back within 120 s"
    ]
    assert "task_retry" in events

    out2 = tmp_path / "out2"
    summary = await _runner(tmp_path, tasks, fix, out2, host=FlakyHost(failures=3)).run()
    (row,) = _rows(out2)
    assert (row["status"], row["retries"]) == ("infra_error", 2)
    assert row["error"].startswith("lost infrastructure 3 times; the last: ClusterError:")
    assert summary["infra_errors"] == 1 and summary["statuses"]["error"] == 0
    assert "| infrastructure errors | 1 " in (out2 / "report.md").read_text()

    await _runner(tmp_path, tasks, fix, out2, host=FlakyHost(failures=0)).run()  # the same command, no --retry-failed
    assert [(r["status"], r["attempt"]) for r in _rows(out2)] == [("infra_error", 1), ("passed", 2)]


class NodeLosingHost(LocalHost):
    """A local host whose first `losses` attempts lose their node as soon as the agent starts."""

    name = "node-losing"

    def __init__(self, losses: int):
        super().__init__()
        self.losses = losses

    async def open(self, workspace, settings, emit, **where):
        if self.losses:
            self.losses -= 1
            raise NodeLost("f" * 56, "agent")
        return await super().open(workspace, settings, emit, **where)


async def test_a_lost_node_reruns_the_task_without_using_its_retries_and_three_make_an_infra_error_row(tmp_path):
    repo = _calc_repo(tmp_path)
    fix = _script(tmp_path, "fix", _fix_turns())
    tasks = _tasks_file(tmp_path / "tasks.jsonl", [_task("a", repo)])
    await _runner(tmp_path, tasks, fix, tmp_path / "out", host=NodeLosingHost(losses=2)).run()
    (row,) = _rows(tmp_path / "out")
    assert (row["status"], row["node_losses"], row["retries"]) == ("passed", 2, 0)
    assert (
        row["notes"]
        == ["node ffffffffffff was lost during the agent phase: run again from its start on another node"] * 2
    )

    await _runner(tmp_path, tasks, fix, tmp_path / "out2", host=NodeLosingHost(losses=3)).run()
    (row,) = _rows(tmp_path / "out2")
    assert (row["status"], row["node_losses"], row["retries"]) == ("infra_error", 3, 0)
    assert row["error"] == "lost 3 nodes: node ffffffffffff was lost during the agent phase"


class LostMidTurnHost(LocalHost):
    """The first session works through its whole turn, then its runtime is lost (as when
    an actor dies after the model calls were paid for)."""

    name = "lost-mid-turn"

    def __init__(self):
        super().__init__()
        self.lost = False

    async def open(self, workspace, settings, emit, **where):
        session = await super().open(workspace, settings, emit, **where)
        if not self.lost:
            self.lost = True
            turn = session.run_turn

            async def run_turn(text):
                await turn(text)
                raise ClusterError("session x lost its actor three times in one turn; giving up")

            session.run_turn = run_turn
        return session

    def retryable(self, exc: BaseException) -> bool:
        return isinstance(exc, ClusterError)


async def test_the_retried_tasks_row_counts_what_the_lost_attempt_spent(tmp_path):
    repo = _calc_repo(tmp_path)
    fix = _script(tmp_path, "fix", _fix_turns())
    tasks = _tasks_file(tmp_path / "tasks.jsonl", [_task("a", repo)])
    await _runner(tmp_path, tasks, fix, tmp_path / "once").run()
    (once,) = _rows(tmp_path / "once")
    await _runner(tmp_path, tasks, fix, tmp_path / "twice", host=LostMidTurnHost()).run()
    (twice,) = _rows(tmp_path / "twice")
    assert (twice["status"], twice["retries"], twice["turns"]) == ("passed", 1, 4)
    assert twice["output_tokens"] == 2 * once["output_tokens"]
    assert twice["input_tokens"] >= 2 * once["input_tokens"] - 50  # the same turns, twice
    assert twice["unpriced_calls"] == 2 * once["unpriced_calls"]  # scripted: counted as calls, not dollars


def test_a_harness_failure_in_one_task_is_its_error_row_and_the_batch_goes_on(tmp_path):
    repo = _calc_repo(tmp_path)
    tasks = _tasks_file(tmp_path / "tasks.jsonl", [_task("a", repo), _task("b", repo)])
    out = tmp_path / "out"
    out.mkdir()
    (out / "patches").write_text("a file where the patches folder goes")
    assert _eval(tasks, out, _script(tmp_path, "fix", _fix_turns())) == 1
    rows = _by_id(out)
    for task_id in ("a", "b"):
        assert rows[task_id]["status"] == "error"
        assert rows[task_id]["error"].startswith("harness error: FileExistsError:")
        assert rows[task_id]["error"].endswith(f"(log: logs/{task_id}/harness-error.log)")
        assert "Traceback" in (out / "logs" / task_id / "harness-error.log").read_text()
    assert json.loads((out / "summary.json").read_text())["statuses"]["error"] == 2
    assert list((out / "workspaces").iterdir()) == []
