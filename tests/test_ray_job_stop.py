"""`ray job stop` on a batch submitted as a Ray job stops it as Ctrl-C does — running
sessions closed, finished rows and the summary kept — and submitting the same command
again finishes it (the README's "As a Ray job" paragraph)."""

import json
import os
import re
import shlex
import subprocess
import time
from pathlib import Path

from tests.eval_support import calc_repo, fix_turns, result_rows, script, task, tasks_file
from tests.ray_head import private_head

ROOT = Path(__file__).resolve().parents[1]


def _submit(head, job_dir: Path, out: Path, env: dict[str, str]) -> str:
    command = (f"ray job submit --address {head.dashboard_url} --working-dir . --no-wait -- "
               f"workingset eval tasks.jsonl --concurrency 2 --out {out} --json")
    done = subprocess.run(shlex.split(command), cwd=job_dir, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return re.search(r"Job '([^']+)' submitted successfully", done.stdout + done.stderr).group(1)


def _ray_job(head, env: dict[str, str], *args: str, timeout: float = 60) -> str:
    done = subprocess.run(["ray", "job", *args[:1], "--address", head.dashboard_url, *args[1:]], env=env,
                          capture_output=True, text=True, timeout=timeout)
    return done.stdout + done.stderr


def _wait_for(check, what: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def test_ray_job_stop_ends_the_batch_as_ctrl_c_does_and_resubmitting_finishes_it(tmp_path):
    repo = calc_repo(tmp_path)
    fix = script(tmp_path, "fix", fix_turns())
    slow = script(tmp_path, "slow", fix_turns(sleep_ms=120_000))
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    tasks = tasks_file(job_dir / "tasks.jsonl", [task("quick", repo, model=f"scripted:{fix}"),
                                                 task("stuck", repo, model=f"scripted:{slow}")])
    out = tmp_path / "eval-run"
    head_env = {**{k: v for k, v in os.environ.items() if not k.startswith("WORKINGSET_")}, "PYTHONPATH": str(ROOT)}
    with private_head(dashboard=True, env=head_env) as head:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("RAY_")}, **head.env}
        job_id = _submit(head, job_dir, out, env)
        _wait_for(lambda: [r["task_id"] for r in result_rows(out)] == ["quick"] if (out / "results.jsonl").exists()
                  else False, "the quick task's row")
        time.sleep(2)  # the stuck task is in its agent phase (its model sleeps for two minutes)
        _ray_job(head, env, "stop", job_id, timeout=120)
        _wait_for(lambda: f"Job '{job_id}' was stopped" in _ray_job(head, env, "status", job_id), "the job to stop", timeout=120)
        logs = _ray_job(head, env, "logs", job_id)
        summary = json.loads((out / "summary.json").read_text())

        tasks.write_text(tasks.read_text().replace(str(slow), str(fix)))
        again = _submit(head, job_dir, out, env)
        _wait_for(lambda: f"Job '{again}' succeeded" in _ray_job(head, env, "status", again), "the resubmitted job", timeout=240)

    assert "Traceback" not in logs, logs[-3000:]
    assert summary["interrupted"] is True, summary
    assert "run the same command again to resume" in logs, logs[-3000:]
    rows = result_rows(out)
    assert [(r["task_id"], r["status"], r["attempt"]) for r in rows] == [("quick", "passed", 1), ("stuck", "passed", 1)]
