"""Reruns into the same --out that tell the truth: the settings that produced the rows
are recorded and a rerun with others refuses (or --redo starts over, moving the old
rows aside); an edited task runs again; several task files share one out directory
without dropping each other's rows; results.jsonl stays valid after a torn line or a
kill -9 of the driver at any moment."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cluster.eval.layout import OutDir
from tests.support.eval_support import (
    ROOT,
    calc_repo,
    fix_turns,
    result_rows,
    rows_by_id,
    run_eval,
    script,
    task,
    tasks_file,
)


def _setup(tmp_path: Path, ids=("a",)) -> tuple[Path, Path, Path]:
    repo = calc_repo(tmp_path)
    fix = script(tmp_path, "fix", fix_turns())
    tasks = tasks_file(tmp_path / "tasks.jsonl", [task(i, repo) for i in ids])
    return tasks, fix, tmp_path / "out"


def test_a_rerun_with_another_strategy_refuses_in_one_line_naming_it(tmp_path, capsys):
    tasks, fix, out = _setup(tmp_path)
    assert run_eval(tasks, out, fix) == 0
    recorded = json.loads((out / "run.json").read_text())["settings"]["compact.strategy"]
    capsys.readouterr()

    assert run_eval(tasks, out, fix, "--strategy", "raw") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"compact.strategy (--strategy): {recorded!r} → 'raw'" in err
    assert "--redo" in err and "a different --out" in err and "already finished" not in err
    assert len(result_rows(out)) == 1


def test_every_differing_setting_is_named_old_to_new(tmp_path, capsys):
    tasks, fix, out = _setup(tmp_path)
    assert run_eval(tasks, out, fix, "--max-turns", "20") == 0
    capsys.readouterr()
    assert run_eval(tasks, out, fix, "--max-turns", "30", "--wall-s", "100") == 2
    err = capsys.readouterr().err
    assert "agent.max_turns (--max-turns): 20 → 30" in err and "eval.wall_s (--wall-s): null → 100.0" in err


def test_settings_that_do_not_change_results_do_not_refuse(tmp_path):
    tasks, fix, out = _setup(tmp_path)
    assert run_eval(tasks, out, fix, "--concurrency", "1") == 0
    assert run_eval(tasks, out, fix, "--concurrency", "3", "--json", "--keep-workspaces", "--batch-max-cost", "5") == 0
    assert len(result_rows(out)) == 1


def test_redo_moves_the_old_rows_aside_and_starts_over(tmp_path):
    tasks, fix, out = _setup(tmp_path)
    assert run_eval(tasks, out, fix) == 0
    old_rows = (out / "results.jsonl").read_text()

    assert run_eval(tasks, out, fix, "--strategy", "raw", "--redo") == 0
    [previous] = list((out / "previous").iterdir())
    assert (previous / "results.jsonl").read_text() == old_rows  # kept, never deleted
    assert {"run.json", "report.md", "summary.json", "patches", "events"} <= {p.name for p in previous.iterdir()}
    [row] = result_rows(out)
    assert (row["strategy"], row["attempt"]) == ("raw", 1)
    assert json.loads((out / "run.json").read_text())["settings"]["compact.strategy"] == "raw"


def test_each_row_records_the_settings_fingerprint_and_its_task(tmp_path):
    tasks, fix, out = _setup(tmp_path)
    assert run_eval(tasks, out, fix) == 0
    [row] = result_rows(out)
    record = json.loads((out / "run.json").read_text())
    assert row["run"] == record["fingerprint"]
    assert row["task_file"] == str(tasks.resolve()) and len(row["task_digest"]) == 16
    assert "concurrency" not in json.dumps(record["settings"]) and "home" not in record["settings"]
    assert {"model", "compact.strategy", "agent.max_turns", "permissions.allow", "workingset.version"} <= record[
        "settings"
    ].keys()


def test_a_task_edited_in_the_task_file_runs_again_and_only_that_task(tmp_path, capsys):
    repo = calc_repo(tmp_path)
    fix = script(tmp_path, "fix", fix_turns())
    rows = [task("a", repo), task("b", repo)]
    tasks = tasks_file(tmp_path / "tasks.jsonl", rows)
    out = tmp_path / "out"
    assert run_eval(tasks, out, fix) == 0
    capsys.readouterr()

    rows[1]["instruction"] = "add() subtracts; make it add."
    tasks_file(tasks, rows)
    assert run_eval(tasks, out, fix, "--json") == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["task_id"] for e in events if e["type"] == "task_changed"] == ["b"]
    assert [e["task_id"] for e in events if e["type"] == "task_started"] == ["b"]
    history = result_rows(out)
    assert sorted(r["task_id"] for r in history) == ["a", "b", "b"]
    first_b, last = [r for r in history if r["task_id"] == "b"]
    assert last is history[-1] and last["attempt"] == 2 and "changed since its last result" in last["notes"][0]
    assert last["task_digest"] != first_b["task_digest"]


def test_spacing_or_key_order_of_a_task_line_is_not_an_edit(tmp_path):
    tasks, fix, out = _setup(tmp_path)
    assert run_eval(tasks, out, fix) == 0
    row = json.loads(tasks.read_text())
    tasks.write_text(json.dumps(dict(reversed(list(row.items()))), indent=None, separators=(" , ", " : ")) + "\n")
    assert run_eval(tasks, out, fix) == 0
    assert len(result_rows(out)) == 1


def test_a_second_task_file_adds_its_rows_and_the_report_covers_both(tmp_path):
    repo = calc_repo(tmp_path)
    fix = script(tmp_path, "fix", fix_turns())
    first = tasks_file(tmp_path / "first.jsonl", [task("a", repo), task("b", repo)])
    second = tasks_file(tmp_path / "second.jsonl", [task("c", repo)])
    out = tmp_path / "out"
    assert run_eval(first, out, fix) == 0
    assert run_eval(second, out, fix) == 0

    assert sorted(rows_by_id(out)) == ["a", "b", "c"]
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["tasks"], summary["finished"], summary["statuses"]["passed"]) == (3, 3, 3)
    assert [(g["task_file"], g["finished"]) for g in summary["task_files"]] == [
        (str(first.resolve()), 2),
        (str(second.resolve()), 1),
    ]
    report = (out / "report.md").read_text()
    assert f"### {first.resolve()}" in report and f"### {second.resolve()}" in report
    assert all(f"| {i} | passed |" in report for i in "abc")
    assert report.index("| a | passed") < report.index(f"### {second.resolve()}") < report.index("| c | passed")
    predictions = [json.loads(line)["instance_id"] for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert predictions == ["a", "b", "c"]


def test_a_task_id_in_two_task_files_with_other_content_is_refused_naming_both(tmp_path, capsys):
    repo = calc_repo(tmp_path)
    fix = script(tmp_path, "fix", fix_turns())
    first = tasks_file(tmp_path / "first.jsonl", [task("a", repo)])
    second = tasks_file(tmp_path / "second.jsonl", [task("a", repo, instruction="something else")])
    out = tmp_path / "out"
    assert run_eval(first, out, fix) == 0
    capsys.readouterr()
    assert run_eval(second, out, fix) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"task id 'a' in {second.resolve()} also in {first.resolve()} with other content" in err
    assert len(result_rows(out)) == 1


def test_the_same_task_in_two_task_files_is_one_task(tmp_path):
    repo = calc_repo(tmp_path)
    fix = script(tmp_path, "fix", fix_turns())
    first = tasks_file(tmp_path / "first.jsonl", [task("a", repo)])
    second = tasks_file(tmp_path / "second.jsonl", [task("a", repo), task("b", repo)])
    out = tmp_path / "out"
    assert run_eval(first, out, fix) == 0
    assert run_eval(second, out, fix) == 0
    assert [r["task_id"] for r in result_rows(out)] == ["a", "b"]


def test_rows_without_a_record_of_their_settings_are_refused(tmp_path, capsys):
    tasks, fix, out = _setup(tmp_path)
    assert run_eval(tasks, out, fix) == 0
    rows = [{k: v for k, v in r.items() if k not in ("run", "task_digest", "task_file")} for r in result_rows(out)]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))  # as an older version wrote
    (out / "run.json").unlink()
    capsys.readouterr()
    assert run_eval(tasks, out, fix) == 2
    assert "no run.json saying which settings produced them" in capsys.readouterr().err


def test_a_second_batch_on_the_same_out_is_refused_while_one_runs(tmp_path, capsys):
    tasks, fix, out = _setup(tmp_path)
    held = OutDir(out)
    held.lock()
    try:
        assert run_eval(tasks, out, fix) == 2
    finally:
        held.unlock()
    assert f"another `workingset eval` (pid {os.getpid()}) is running on {out}" in capsys.readouterr().err
    assert not (out / "results.jsonl").exists()


def test_a_torn_last_line_is_moved_aside_and_the_file_is_valid_again(tmp_path, capsys):
    tasks, fix, out = _setup(tmp_path, ids=("a", "b"))
    assert run_eval(tasks, out, fix) == 0
    results = out / "results.jsonl"
    whole = results.read_text()
    with results.open("a") as f:
        f.write('{"task_id": "b", "status": "pass')  # a crash in the middle of a write
    capsys.readouterr()

    assert run_eval(tasks, out, fix, "--json") == 0
    notices = [
        json.loads(line)["text"]
        for line in capsys.readouterr().out.splitlines()
        if json.loads(line)["type"] == "notice"
    ]
    [torn] = list(out.glob("results.jsonl.torn-*"))
    assert notices == [
        f"results.jsonl: moved a torn last line (a write cut short by a crash) to {torn.name}; the file is valid again"
    ]
    assert results.read_text() == whole  # every line a row again, none lost
    assert torn.read_text() == '{"task_id": "b", "status": "pass\n'


# -- kill -9 of the driver, then the same command -----------------------------------------


def _killed_then_rerun(tmp_path: Path, moment: str) -> list[dict]:
    repo = calc_repo(tmp_path)
    ids = ["t1", "t2", "t3", "t4"]
    models = {i: script(tmp_path, i, fix_turns(sleep_ms=400 * n)) for n, i in enumerate(ids, start=1)}
    tasks = tasks_file(tmp_path / "tasks.jsonl", [task(i, repo, model=f"scripted:{models[i]}") for i in ids])
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "cluster.terminal._cli",
        "eval",
        str(tasks),
        "--out",
        str(out),
        "--local",
        "--json",
        "--concurrency",
        "2",
    ]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    wanted = {"started": ("task_started", 1), "one row": ("task_finished", 1), "last row": ("task_finished", 4)}[moment]
    seen = 0
    deadline = time.monotonic() + 120
    for line in proc.stdout:
        seen += json.loads(line)["type"] == wanted[0]
        if seen == wanted[1] or time.monotonic() > deadline:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    before = result_rows(out) if (out / "results.jsonl").exists() else []

    rerun = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert rerun.returncode == 0, rerun.stderr
    after = result_rows(out)  # parses: every line a whole row
    assert after[: len(before)] == before  # no row lost or rewritten
    return after


@pytest.mark.parametrize("moment", ["started", "one row", "last row"])
def test_kill_9_of_the_driver_then_the_same_command_leaves_one_row_per_task(tmp_path, moment):
    rows = _killed_then_rerun(tmp_path, moment)
    assert sorted(r["task_id"] for r in rows) == ["t1", "t2", "t3", "t4"]  # none lost, none twice
    assert all(r["status"] == "passed" and r["attempt"] == 1 for r in rows)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["finished"], summary["statuses"]["passed"]) == (4, 4)
