"""Batch controls: the total cost cap (--batch-max-cost) stops starting tasks, says so
in the summary and report, and says at start when the model has no price to cap;
--filter and --slice select tasks, and the report names the selection."""

import json
from pathlib import Path

import pytest

from tests.support.eval_support import (
    calc_repo,
    fix_turns,
    result_rows,
    run_eval,
    script,
    task,
    tasks_file,
)

# What one scripted fix costs at this price: about 4 calls of a few thousand tokens each,
# so a few dollars at $100 per million tokens; the cap below is under one task's cost.
PRICE = {"input_usd_per_mtok": 100.0, "output_usd_per_mtok": 100.0}


def _priced_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int = 3) -> tuple[Path, Path, Path]:
    repo = calc_repo(tmp_path)
    fix = script(tmp_path, "fix", fix_turns())
    monkeypatch.setenv("WORKINGSET_MODELS", json.dumps({f"scripted:{fix}": PRICE}))
    tasks = tasks_file(tmp_path / "tasks.jsonl", [task(f"t{i}", repo) for i in range(1, n + 1)])
    return tasks, fix, tmp_path / "out"


def test_the_batch_cost_cap_stops_starting_tasks_and_the_report_says_so(tmp_path, monkeypatch):
    tasks, fix, out = _priced_batch(tmp_path, monkeypatch)
    assert run_eval(tasks, out, fix, "--concurrency", "1", "--batch-max-cost", "0.01") == 1
    [row] = result_rows(out)  # the first task ran to its end; no other started
    assert row["status"] == "passed" and row["pricing"] == "configured" and row["cost_usd"] > 0.01
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped"] == {
        "reason": "batch_max_cost",
        "cap_usd": 0.01,
        "spent_usd": row["cost_usd"],
        "not_started": 2,
    }
    assert (summary["finished"], summary["pending"]) == (1, 2)
    assert "**Stopped by the batch cost cap** (--batch-max-cost $0.0100)" in (out / "report.md").read_text()


def test_tasks_running_when_the_cost_cap_is_reached_finish_with_their_rows(tmp_path, monkeypatch):
    tasks, fix, out = _priced_batch(tmp_path, monkeypatch)
    assert run_eval(tasks, out, fix, "--concurrency", "2", "--batch-max-cost", "0.01") == 1
    rows = result_rows(out)
    assert sorted(r["task_id"] for r in rows) == ["t1", "t2"] and all(r["status"] == "passed" for r in rows)
    assert json.loads((out / "summary.json").read_text())["stopped"]["not_started"] == 1


def test_a_batch_at_its_cost_cap_starts_nothing_when_run_again(tmp_path, monkeypatch):
    tasks, fix, out = _priced_batch(tmp_path, monkeypatch)
    assert run_eval(tasks, out, fix, "--concurrency", "1", "--batch-max-cost", "0.01") == 1
    assert run_eval(tasks, out, fix, "--concurrency", "1", "--batch-max-cost", "0.01") == 1
    assert len(result_rows(out)) == 1
    assert json.loads((out / "summary.json").read_text())["stopped"]["not_started"] == 2


def test_raising_the_cost_cap_lets_the_same_batch_go_on(tmp_path, monkeypatch):
    tasks, fix, out = _priced_batch(tmp_path, monkeypatch)
    assert run_eval(tasks, out, fix, "--concurrency", "1", "--batch-max-cost", "0.01") == 1
    assert run_eval(tasks, out, fix, "--concurrency", "1", "--batch-max-cost", "1000") == 0  # not a result setting
    assert sorted(r["task_id"] for r in result_rows(out)) == ["t1", "t2", "t3"]
    assert json.loads((out / "summary.json").read_text())["stopped"] is None


def test_a_cost_cap_on_an_unpriced_model_says_at_start_it_cannot_cap(tmp_path, capsys):
    repo = calc_repo(tmp_path)
    fix = script(tmp_path, "fix", fix_turns())
    tasks = tasks_file(tmp_path / "tasks.jsonl", [task("a", repo), task("b", repo)])
    assert run_eval(tasks, tmp_path / "out", fix, "--json", "--batch-max-cost", "0.01") == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    notices = [e["text"] for e in events if e["type"] == "notice"]
    assert notices == [
        f"--batch-max-cost cannot cap scripted:{fix}: no price is known, so its calls count $0 "
        "(give it prices in the `models` setting to cap it)"
    ]
    assert events.index(next(e for e in events if e["type"] == "notice")) < events.index(
        next(e for e in events if e["type"] == "task_started")
    )
    assert len(result_rows(tmp_path / "out")) == 2  # nothing was capped


def _many(tmp_path: Path) -> tuple[Path, Path, Path]:
    repo = calc_repo(tmp_path)
    fix = script(tmp_path, "fix", fix_turns())
    ids = ["api-1", "api-2", "cli-1", "api-3", "cli-2"]
    return tasks_file(tmp_path / "tasks.jsonl", [task(i, repo) for i in ids]), fix, tmp_path / "out"


def test_filter_selects_task_ids_by_glob_and_the_report_names_the_selection(tmp_path):
    tasks, fix, out = _many(tmp_path)
    assert run_eval(tasks, out, fix, "--filter", "cli-*", "--filter", "api-2") == 0
    assert sorted(r["task_id"] for r in result_rows(out)) == ["api-2", "cli-1", "cli-2"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["selection"] == {
        "task_file": str(tasks.resolve()),
        "filters": ["cli-*", "api-2"],
        "slice": None,
        "selected": 3,
        "in_file": 5,
    }
    assert (summary["tasks"], summary["pending"]) == (3, 0)
    assert (
        f"Selection of the last run: `{tasks.resolve()}`, --filter `cli-*`, --filter `api-2`: 3 of 5 tasks"
        in (out / "report.md").read_text()
    )


def test_slice_takes_a_range_of_the_filtered_tasks_in_file_order(tmp_path):
    tasks, fix, out = _many(tmp_path)
    assert run_eval(tasks, out, fix, "--filter", "api-*", "--slice", "1:") == 0
    assert sorted(r["task_id"] for r in result_rows(out)) == ["api-2", "api-3"]
    assert "--filter `api-*`, --slice `1:`: 2 of 5 tasks" in (out / "report.md").read_text()


def test_a_negative_slice_counts_from_the_end(tmp_path):
    tasks, fix, out = _many(tmp_path)
    assert run_eval(tasks, out, fix, "--slice=-2:") == 0  # "=": argparse reads a bare -2: as a flag
    assert sorted(r["task_id"] for r in result_rows(out)) == ["api-3", "cli-2"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--filter", "web-*"], "no task id in"),
        (["--slice", "7:9"], "--slice 7:9 selects none of the 5 tasks"),
    ],
    ids=["filter", "slice"],
)
def test_a_selection_of_no_task_is_a_usage_error(tmp_path, capsys, flags, message):
    tasks, fix, out = _many(tmp_path)
    assert run_eval(tasks, out, fix, *flags) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_a_malformed_slice_is_refused_by_the_parser(tmp_path, capsys):
    tasks, fix, out = _many(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        run_eval(tasks, out, fix, "--slice", "2")
    assert exit_info.value.code == 2
    assert "expected START:END" in capsys.readouterr().err
