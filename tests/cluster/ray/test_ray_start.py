"""Starting Ray under `cluster.start_timeout_s`, once more after a failure: an embedded
cluster that cannot start is one line on stderr (both tries' causes and the fix), exit 1,
and no summary of a batch that never ran; a start that fails once ends what it left
running and says why once the second try has worked."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cluster.connection._errors import ClusterError
from cluster.connection._start import GCS_WAIT_VARIABLE, start_once_more
from tests.support.eval_support import ROOT, calc_repo, fix_turns, script, task, tasks_file

# A deadline Ray cannot meet: it reads whole seconds, so its GCS gets no time at all.
MISSED = "0.001"


def _cli(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update({"WORKINGSET_RUNTIME": "ray", "WORKINGSET_CLUSTER__START_TIMEOUT_S": MISSED, "PYTHONPATH": str(ROOT)})
    return subprocess.run(
        [sys.executable, "-m", "cluster.terminal._cli", *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.own_ray_cluster
@pytest.mark.parametrize("command", ["eval", "run"])
def test_an_embedded_cluster_that_misses_its_start_deadline_is_tried_once_more_then_one_line_and_exit_1(
    command, tmp_path
):
    model = script(tmp_path, "fix", fix_turns())
    if command == "eval":
        tasks = tasks_file(tmp_path / "tasks.jsonl", [task("a", calc_repo(tmp_path))])
        done = _cli(tmp_path, "eval", str(tasks), "--model", f"scripted:{model}", "--out", str(tmp_path / "out"))
    else:
        done = _cli(tmp_path, "run", "fix it", "--cwd", str(calc_repo(tmp_path)), "--model", f"scripted:{model}")
    (line,) = done.stderr.splitlines()
    assert done.returncode == 1, done.stderr
    assert line == (
        "workingset: error: the embedded Ray cluster did not start, twice: its GCS did not come up "
        f"within {MISSED} s (cluster.start_timeout_s); then the same again. Raise cluster.start_timeout_s "
        "(WORKINGSET_CLUSTER__START_TIMEOUT_S) on a loaded machine, check free memory and /tmp space, or "
        "run in this process with --local"
    )
    assert not (tmp_path / "out" / "summary.json").exists() and not (tmp_path / "out" / "report.md").exists()
    assert "done:" not in done.stdout


def test_a_start_that_fails_once_ends_what_it_left_running_and_says_why_after_the_second_try():
    started: list[subprocess.Popen] = []
    deadlines: list[str | None] = []
    told: list[str] = []
    outside = os.environ.get(GCS_WAIT_VARIABLE)

    def start() -> subprocess.Popen:
        # Each try starts a process of its own, as Ray's start leaves its GCS up when a later step fails.
        started.append(subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE))
        deadlines.append(os.environ.get(GCS_WAIT_VARIABLE))
        if len(started) == 1:
            raise RuntimeError("Timed out waiting for file /tmp/ray/session_x/gcs_server_port_0123")
        return started[-1]

    try:
        running = start_once_more(start, timeout_s=42, what="a test start", notify=told.append)
        assert running is started[1] and running.poll() is None
        assert started[0].poll() is not None  # ended before the second try
        assert deadlines == ["42", "42"] and os.environ.get(GCS_WAIT_VARIABLE) == outside
        assert told == [
            "a test start started at the second try; the first failed: its GCS did not come up within "
            "42 s (cluster.start_timeout_s)"
        ]
    finally:
        for proc in started:
            proc.kill()
            proc.wait()


def test_a_start_that_fails_twice_names_both_causes_in_one_error():
    causes = iter(
        [
            RuntimeError("Timed out waiting for file /x/gcs_server_port_1"),
            Exception("The current node timed out during startup. This could happen because ..."),
        ]
    )

    def start() -> None:
        raise next(causes)

    with pytest.raises(ClusterError) as failed:
        start_once_more(start, timeout_s=5, what="a test start", notify=lambda text: None)
    assert str(failed.value).startswith(
        "a test start did not start, twice: its GCS did not come up within 5 s (cluster.start_timeout_s); then its "
        "raylet did not register with the GCS within Ray's fixed 30 s. Raise cluster.start_timeout_s"
    )
