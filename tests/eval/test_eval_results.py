"""results.jsonl (append, latest row, torn lines, skip and retry), the summary figures,
the markdown report and the SWE-bench predictions."""

import json

import pytest

from cluster.eval.report import percentile, summarize, write_report
from cluster.eval.results import ResultRow, ResultsFile, plan_run, write_predictions
from cluster.eval.tasks import Task


def _row(task_id: str, status: str = "passed", **fields) -> ResultRow:
    return ResultRow(task_id=task_id, status=status, model="scripted:m.yaml", **fields)


def _task(task_id: str) -> Task:
    return Task(id=task_id, repo="/r", instruction="i", test_command="t")


def test_append_then_latest_row_per_task_and_counts(tmp_path):
    results = ResultsFile(tmp_path / "out" / "results.jsonl")
    results.append(_row("a", "failed"))
    results.append(_row("b", "passed"))
    results.append(_row("a", "passed", attempt=2))
    latest, counts = results.latest()
    assert {k: (r.status, r.attempt) for k, r in latest.items()} == {"a": ("passed", 2), "b": ("passed", 1)}
    assert counts == {"a": 2, "b": 1}
    assert results.problems == []


def test_a_torn_last_line_is_skipped_with_a_warning_and_the_next_row_starts_a_new_line(tmp_path):
    path = tmp_path / "results.jsonl"
    results = ResultsFile(path)
    results.append(_row("a"))
    with path.open("a") as f:
        f.write('{"task_id": "b", "sta')  # the process died mid-write
    results.append(_row("c", "error", error="boom"))
    latest, _ = results.latest()
    assert sorted(latest) == ["a", "c"]
    assert results.problems == [f"{path} line 2 is not a result row (a write was cut short?); ignored"]
    assert path.read_text().splitlines()[2].startswith('{"task_id":"c"')


def test_plan_skips_finished_tasks_and_retry_failed_reruns_every_non_passed_one():
    tasks = [_task(i) for i in ("new", "ok", "bad", "err", "slow", "costly")]
    latest = {
        "ok": _row("ok"),
        "bad": _row("bad", "failed"),
        "err": _row("err", "error"),
        "slow": _row("slow", "timeout"),
        "costly": _row("costly", "budget"),
    }
    plan = plan_run(tasks, latest, retry_failed=False)
    assert [t.id for t in plan.run] == ["new"]
    assert [t.id for t in plan.skipped] == ["ok", "bad", "err", "slow", "costly"]
    plan = plan_run(tasks, latest, retry_failed=True)
    assert [t.id for t in plan.run] == ["new", "bad", "err", "slow", "costly"]
    assert [t.id for t in plan.skipped] == ["ok"]


def test_percentile_interpolates():
    assert percentile([], 0.5) is None
    assert percentile([3.0], 0.95) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert percentile(list(map(float, range(1, 101))), 0.95) == pytest.approx(95.05)


def _rows() -> list[ResultRow]:
    return [
        _row(
            "a",
            "passed",
            cost_usd=0.30,
            input_tokens=1000,
            output_tokens=100,
            cache_read_tokens=50,
            cache_creation_tokens=20,
            wall_s=10.0,
            turns=4,
            compactions=1,
            patch_path="patches/a.diff",
        ),
        _row("b", "failed", cost_usd=0.20, input_tokens=500, output_tokens=50, wall_s=20.0, turns=3),
        _row("c", "error", cost_usd=0.0, wall_s=1.0, error="setup failed (exit code 3): boom | bang"),
        _row("d", "timeout", cost_usd=0.10, wall_s=30.0, turns=2, tests_passed=True),
    ]


def test_summary_pass_rate_costs_tokens_and_wall_percentiles():
    summary = summarize(_rows(), tasks_total=6, invalid=["t.jsonl line 9: not valid JSON"], model="scripted:m.yaml")
    assert (summary["tasks"], summary["finished"], summary["pending"], summary["invalid_lines"]) == (6, 4, 2, 1)
    assert summary["statuses"] == {
        "passed": 1,
        "failed": 1,
        "error": 1,
        "timeout": 1,
        "budget": 0,
        "truncated": 0,
        "refused": 0,
        "infra_error": 0,
    }
    assert summary["pass_rate"] == 0.25
    assert summary["cost_usd"] == pytest.approx(0.6)
    assert summary["cost_per_task_usd"] == pytest.approx(0.15)
    assert summary["cost_per_solved_usd"] == pytest.approx(0.6)
    assert summary["tokens"] == {"input": 1500, "output": 150, "cache_read": 50, "cache_creation": 20, "total": 1720}
    assert summary["wall_s"]["p50"] == pytest.approx(15.0)
    assert summary["wall_s"]["p95"] == pytest.approx(28.5)
    assert summary["wall_s"]["max"] == 30.0
    assert summary["turns_per_task"] == 2.25 and summary["compactions"] == 1
    assert summary["interrupted"] is False


def test_summary_without_a_solved_task_has_no_cost_per_solved():
    summary = summarize([_row("b", "failed", cost_usd=0.2)], tasks_total=1, invalid=[], model="m")
    assert summary["cost_per_solved_usd"] is None and summary["pass_rate"] == 0.0


def test_report_has_the_figures_one_row_per_task_and_the_invalid_lines(tmp_path):
    rows = _rows()
    invalid = ["t.jsonl line 9: not valid JSON"]
    summary = summarize(rows, tasks_total=6, invalid=invalid, model="scripted:m.yaml", interrupted=True)
    path = tmp_path / "report.md"
    write_report(path, summary, rows, invalid)
    text = path.read_text()
    assert "6 tasks: 4 finished, 2 pending, 1 invalid lines (interrupted: rerun the same command to finish)" in text
    assert "| pass rate | 25.0 % (1 / 4) |" in text
    assert (
        "| passed / failed / error / timeout / budget / truncated / refused / infra_error | 1 / 1 / 1 / 1 / 0 / 0 / 0 / 0 |"
        in text
    )
    assert "$0.6000 total · $0.1500 per task · $0.6000 per solved task" in text
    assert "| tokens | 1,720 (in 1,500 · out 150 · cache read 50 · cache write 20) |" in text
    assert "| wall per task | p50 15.0 s · p95 28.5 s · max 30.0 s |" in text
    assert "| a | passed | – | 4 | 1,170 | $0.3000 | 10.0 s | 1 | patches/a.diff |  |" in text
    assert "| c | error | – | 0 | 0 | $0.0000 | 1.0 s | 0 | – | setup failed (exit code 3): boom \\| bang |" in text
    assert "| d | timeout |" in text and "tests passed anyway" in text
    assert text.rstrip().endswith("- t.jsonl line 9: not valid JSON")


def test_predictions_hold_every_task_with_its_patch(tmp_path):
    (tmp_path / "patches").mkdir()
    (tmp_path / "patches" / "a.diff").write_text("diff --git a/x b/x\n+fix\n")
    path = tmp_path / "predictions.jsonl"
    assert write_predictions(path, [_row("b", "failed"), _row("a", patch_path="patches/a.diff")], tmp_path) == 2
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines == [
        {"instance_id": "a", "model_name_or_path": "scripted:m.yaml", "model_patch": "diff --git a/x b/x\n+fix\n"},
        {"instance_id": "b", "model_name_or_path": "scripted:m.yaml", "model_patch": ""},
    ]


def test_scripted_and_unknown_price_runs_are_reported_as_such_not_as_dollars(tmp_path):
    rows = [
        _row("s", "passed", unpriced_calls=3, pricing="scripted"),
        _row("u", "failed", unpriced_calls=2, pricing="unknown"),
    ]
    summary = summarize(rows, tasks_total=2, invalid=[], model="scripted:m.yaml")
    assert (summary["cost_usd"], summary["cost_per_task_usd"], summary["unpriced_tasks"]) == (None, None, 2)
    path = tmp_path / "report.md"
    write_report(path, summary, rows, [])
    text = path.read_text()
    assert "| s | passed | – | 0 | 0 | scripted |" in text and "| u | failed | – | 0 | 0 | unknown price |" in text
    assert "$0.0000" not in text and "2 tasks not priced (scripted, unknown price)" in text


def test_a_run_with_priced_and_unpriced_calls_shows_both():
    from cluster.eval.report import describe_cost

    assert describe_cost(0.25, 2, "mixed") == "$0.2500 + 2 unpriced calls"
    assert describe_cost(0.25, 0, "list") == "$0.2500"
