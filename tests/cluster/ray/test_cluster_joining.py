"""Joining a Ray cluster: token authentication named (not blamed on the address), a
second node joining a head whose token file turned token authentication on (with that
token, and refused without it), and the model's credentials reaching session actors on
a node that is not the driver's (through their runtime environment), never written to
the results; `--address auto`, the `ray job submit` of docs/clusters.md, and `ray job stop` ending
a batch as Ctrl-C does."""

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.providers.testing import presented_key
from agents.settings._config import WorkingsetSettings
from cluster.eval.progress import JsonReporter
from cluster.eval.ray_host import RayHost
from cluster.eval.runner import EvalOptions, EvalRunner
from cluster.eval.task_file import load_tasks
from tests.support import ROOT
from tests.support.eval_support import calc_repo, fix_turns, result_rows, script, task, tasks_file
from tests.support.ray_head import PrivateHead, joining_node, private_head

pytestmark = pytest.mark.own_ray_cluster  # conftest: these run in the Ray group under xdist


def test_token_authentication_is_named_and_not_blamed_on_the_address(tmp_path):
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RAY_")}, "WORKINGSET_RUNTIME": "ray"}
    head = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "support" / "token_cluster.py"), "t" * 32],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        address = head.stdout.readline().strip()
        assert address, "the token cluster did not start"
        tasks = tasks_file(tmp_path / "tasks.jsonl", [task("a", calc_repo(tmp_path))])
        model = script(tmp_path, "fix", fix_turns())
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "cluster.terminal._cli",
                "eval",
                str(tasks),
                "--model",
                f"scripted:{model}",
                "--out",
                str(tmp_path / "out"),
                "--address",
                address,
            ],
            env={**env, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        head.stdin.close()
        head.wait(timeout=60)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1, run.stderr  # none of Ray's retry warnings
    assert not (tmp_path / "out" / "summary.json").exists()
    assert f"the Ray cluster at {address} uses token authentication and this process has no token" in lines[0]
    assert "check the address" not in lines[0]


async def test_the_models_credentials_reach_actors_on_other_nodes_and_are_never_written(
    ray_cluster, messages_server, tmp_path, monkeypatch
):
    secret = "sk-ant-test-" + "k" * 24
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)  # the driver's only: the raylets started before
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)
    messages_server.required_key = secret
    repo = calc_repo(tmp_path)
    tasks = tasks_file(tmp_path / "tasks.jsonl", [task(f"t{i}", repo) for i in range(3)])
    settings = WorkingsetSettings(
        model="anthropic:claude-x",
        home=tmp_path / "ignored",
        compact={"context_window": 200_000},
        permissions={"mode": "accept-edits", "allow": ["Bash"], "headless": "deny-asks"},
    )
    stream = io.StringIO()
    out = tmp_path / "out"
    await EvalRunner(
        settings,
        load_tasks(tasks).tasks,
        EvalOptions(out=out, concurrency=3),
        host=RayHost(actors=1),
        reporter=JsonReporter(stream),
    ).run()

    rows = result_rows(out)
    assert len(rows) == 3 and all(r["status"] != "error" and r["turns"] >= 1 for r in rows), [r["error"] for r in rows]
    assert ray_cluster.other_node_id in {r["node"] for r in rows}
    assert len(messages_server.requests) >= 3
    assert all(presented_key(r.headers) == secret for r in messages_server.requests)
    written = [p for p in out.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert written == [] and secret not in stream.getvalue()
    assert all(json.loads(line) for line in stream.getvalue().splitlines())


def _eval_env(head, **extra: str) -> dict[str, str]:
    """The environment of a `workingset eval` run on the head's machine: none of the test
    process's RAY_ variables, the head's token and RAY_TMPDIR, this worktree first."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    return {**base, **head.env, "PYTHONPATH": str(ROOT), "WORKINGSET_RUNTIME": "ray", **extra}


JOB_SECRET = "sk-ant-test-" + "j" * 24


@pytest.fixture(scope="module")
def head(_messages_server_session, tmp_path_factory) -> Iterator[PrivateHead]:
    """One head made with `ray start` (its dashboard, the job server, on) for the tests that
    join it: starting one costs many seconds, and none of them changes it. The model's key
    is in its environment when `ray start` runs, so a job's driver inherits it; so does the
    fake Messages API's address. No WORKINGSET_ variable of the test process's (a job's batch
    runs on Ray, as a user's does), none of the host's credentials, a $HOME of its own."""
    host = {k: v for k, v in os.environ.items() if not k.startswith(("WORKINGSET_", "ANTHROPIC_", "OPENAI_"))}
    head_env = {
        **host,
        "HOME": str(tmp_path_factory.mktemp("head-home")),
        "PYTHONPATH": str(ROOT),
        "ANTHROPIC_API_KEY": JOB_SECRET,
        "ANTHROPIC_BASE_URL": _messages_server_session.url,
    }
    with private_head(dashboard=True, env=head_env) as started:
        yield started


def test_address_auto_runs_the_batch_on_the_cluster_ray_start_made(head, tmp_path):
    repo = calc_repo(tmp_path)
    tasks = tasks_file(tmp_path / "tasks.jsonl", [task(f"t{i}", repo) for i in range(2)])
    model = script(tmp_path, "fix", fix_turns())
    out = tmp_path / "out"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "cluster.terminal._cli",
            "eval",
            str(tasks),
            "--model",
            f"scripted:{model}",
            "--out",
            str(out),
            "--address",
            "auto",
            "--json",
        ],
        env=_eval_env(head),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    rows = result_rows(out)
    assert sorted(r["task_id"] for r in rows) == ["t0", "t1"]
    assert all(r["status"] == "passed" for r in rows), [(r["status"], r["error"]) for r in rows]
    assert {r["node"] for r in rows} == {head.node_id}  # not an embedded cluster, not another one


def _documented_job_commands() -> list[str]:
    """The `ray job submit` block of docs/clusters.md, its continued lines joined."""
    text = (ROOT / "docs" / "clusters.md").read_text()
    block = re.search(r"```bash\n(ray job submit .*?)```", text, re.S)
    assert block, "the ray job submit block of docs/clusters.md is gone"
    joined = block.group(1).replace("\\\n", " ")
    return [line.split("  #")[0].strip() for line in joined.splitlines() if line.strip()]


def test_the_documented_ray_job_submit_runs_the_batch_on_the_head(head, tmp_path, messages_server):
    secret = JOB_SECRET
    messages_server.required_key = secret
    messages_server.push_tool_use("Read", {"path": "calc.py"})
    messages_server.push_tool_use("Edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})
    messages_server.push_text("Fixed add().")
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    tasks_file(job_dir / "tasks.jsonl", [task("a", calc_repo(tmp_path))])
    out = tmp_path / "eval-run"
    submit, follow = _documented_job_commands()
    env = {**_eval_env(head), "RAY_ADDRESS": ""}  # the submitting shell's only link is --address
    submit = submit.replace("http://A_HOST:8265", head.dashboard_url).replace("/data/eval-runs/sonnet-run-1", str(out))
    submitted = subprocess.run(shlex.split(submit), cwd=job_dir, env=env, capture_output=True, text=True, timeout=120)
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    job_id = re.search(r"Job '([^']+)' submitted successfully", submitted.stdout + submitted.stderr).group(1)
    follow = follow.replace("http://A_HOST:8265", head.dashboard_url).replace("JOB_ID", job_id)
    logs = subprocess.run(shlex.split(follow), env=env, capture_output=True, text=True, timeout=180)
    status = subprocess.run(
        ["ray", "job", "status", "--address", head.dashboard_url, job_id],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert f"Job '{job_id}' succeeded" in status.stdout, logs.stdout[-3000:] + logs.stderr[-2000:]
    events = [json.loads(line) for line in logs.stdout.splitlines() if line.startswith("{")]
    assert any(e.get("task_id") == "a" for e in events), logs.stdout[-3000:]
    rows = result_rows(out)
    assert [(r["task_id"], r["status"], r["node"]) for r in rows] == [("a", "passed", head.node_id)], rows
    assert len(messages_server.requests) == 3
    written = [p for p in out.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert written == [] and secret not in logs.stdout + logs.stderr


def _submit_job(head, job_dir: Path, out: Path, env: dict[str, str]) -> str:
    command = (
        f"ray job submit --address {head.dashboard_url} --working-dir . --no-wait -- "
        f"workingset eval tasks.jsonl --concurrency 2 --out {out} --json"
    )
    done = subprocess.run(shlex.split(command), cwd=job_dir, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return re.search(r"Job '([^']+)' submitted successfully", done.stdout + done.stderr).group(1)


def _ray_job(head, env: dict[str, str], *args: str, timeout: float = 60) -> str:
    done = subprocess.run(
        ["ray", "job", *args[:1], "--address", head.dashboard_url, *args[1:]],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done.stdout + done.stderr


def _wait_for(check, what: str, timeout: float = 180, every: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every)


def _summary(out: Path) -> dict | None:
    try:
        return json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):  # not written yet, or being written
        return None


def _job_reached(head, env: dict[str, str], job_id: str, said: str, what: str) -> None:
    """Asked once the batch's own files say the job ended: each `ray job status` is a new
    Python process importing Ray, so it is asked seldom, never in a tight loop."""
    _wait_for(lambda: f"Job '{job_id}' {said}" in _ray_job(head, env, "status", job_id), what, 120, every=3)


def test_ray_job_stop_ends_the_batch_as_ctrl_c_does_and_resubmitting_finishes_it(head, tmp_path):
    repo = calc_repo(tmp_path)
    fix = script(tmp_path, "fix", fix_turns())
    slow = script(tmp_path, "slow", fix_turns(sleep_ms=120_000))
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    tasks = tasks_file(
        job_dir / "tasks.jsonl",
        [task("quick", repo, model=f"scripted:{fix}"), task("stuck", repo, model=f"scripted:{slow}")],
    )
    out = tmp_path / "eval-run"
    env = {**_eval_env(head), "RAY_ADDRESS": ""}
    job_id = _submit_job(head, job_dir, out, env)
    _wait_for(
        lambda: (out / "results.jsonl").exists() and [r["task_id"] for r in result_rows(out)] == ["quick"],
        "the quick task's row",
    )
    time.sleep(2)  # the stuck task is in its agent phase (its model sleeps for two minutes)
    _ray_job(head, env, "stop", job_id, timeout=120)
    _wait_for(lambda: _summary(out) is not None, "the stopped batch's summary", 120)
    _job_reached(head, env, job_id, "was stopped", "the job to stop")
    logs = _ray_job(head, env, "logs", job_id)
    summary = _summary(out)

    tasks.write_text(tasks.read_text().replace(str(slow), str(fix)))
    again = _submit_job(head, job_dir, out, env)
    _wait_for(lambda: (_summary(out) or {}).get("interrupted") is False, "the resubmitted batch's summary", 240)
    _job_reached(head, env, again, "succeeded", "the resubmitted job")

    assert "Traceback" not in logs, logs[-3000:]
    assert summary["interrupted"] is True, summary
    assert "run the same command again to resume" in logs, logs[-3000:]
    rows = result_rows(out)
    assert [(r["task_id"], r["status"], r["attempt"]) for r in rows] == [("quick", "passed", 1), ("stuck", "passed", 1)]


@pytest.fixture(scope="module")
def token_file_head():
    """One head for the joining tests, its token only in its own ~/.ray/auth_token."""
    with private_head(token_file=True) as head:
        yield head


def _machine_b_env(tmp_path, *, token: str | None, mode: bool) -> dict[str, str]:
    """Machine B's environment: a HOME of its own, holding `token` as ~/.ray/auth_token."""
    home = tmp_path / "home-b"
    (home / ".ray").mkdir(parents=True)
    if token is not None:
        (home / ".ray" / "auth_token").write_text(token)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    return {**env, "HOME": str(home), **({"RAY_AUTH_MODE": "token"} if mode else {})}


_TASK_ON_NEW_NODE = """
import json, sys, time, ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
ray.init(address=sys.argv[1], logging_level="ERROR")
deadline = time.monotonic() + 150
while time.monotonic() < deadline:
    others = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n["NodeID"] != sys.argv[2]]
    if others:
        break
    time.sleep(1)
else:
    sys.exit("no second node in the head's node list")
ran_on = ray.get(ray.remote(lambda: ray.get_runtime_context().get_node_id()).options(
    scheduling_strategy=NodeAffinitySchedulingStrategy(others[0], soft=False)).remote())
print(json.dumps({"joined": others, "ran_on": ran_on}))
"""


def test_a_second_node_with_the_heads_token_joins_and_runs_tasks(token_file_head, tmp_path):
    head = token_file_head
    # The head found the token file and said it turned token authentication on.
    assert "Token authentication is enabled for this Ray cluster" in head.start_log()
    # `ray get-auth-token` on A prints it; B keeps it in its ~/.ray/auth_token, with token mode on.
    env_a = {**{k: v for k, v in os.environ.items() if not k.startswith("RAY_")}, "HOME": str(head.temp_root / "home")}
    printed = subprocess.run(["ray", "get-auth-token"], env=env_a, capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0 and printed.stdout == head.env["RAY_AUTH_TOKEN"], printed.stderr
    env_b = _machine_b_env(tmp_path, token=printed.stdout, mode=True)
    for _attempt in range(2):
        with joining_node(head, env_b) as node:
            check = subprocess.run(
                [sys.executable, "-c", _TASK_ON_NEW_NODE, head.gcs_address, head.node_id],
                env={**os.environ, **head.env},
                capture_output=True,
                text=True,
                timeout=240,
            )
            up_to_the_end, log = node.poll() is None, node.log()  # it joined, it was not refused
            if not node.timed_out_starting():
                break
    assert up_to_the_end, log[-3000:]
    assert check.returncode == 0, check.stderr[-3000:] + log[-2000:]
    found = json.loads(check.stdout.strip().splitlines()[-1])
    assert found["ran_on"] in found["joined"] and found["ran_on"] != head.node_id


@pytest.mark.parametrize("token", ["none", "file without token mode"])
def test_a_second_node_without_the_token_is_refused_naming_it(token_file_head, tmp_path, token):
    """The token file alone is not enough on B: `ray start --address` does not turn token
    mode on from it (only a head does), so B needs RAY_AUTH_MODE=token too (docs/clusters.md)."""
    head = token_file_head
    given = head.env["RAY_AUTH_TOKEN"] if token == "file without token mode" else None
    started = time.monotonic()
    with joining_node(head, _machine_b_env(tmp_path, token=given, mode=False)) as node:
        with contextlib.suppress(subprocess.TimeoutExpired):
            node.process.wait(180)
        code, log = node.poll(), node.log()  # refused before its raylet starts: no startup timeout here
    assert code not in (None, 0), log[-3000:]
    last = log.strip().splitlines()[-1]
    assert last.startswith("ray.exceptions.AuthenticationError:"), log[-3000:]
    assert "Authentication token is missing or incorrect" in last and "RAY_AUTH_MODE" in last
    assert time.monotonic() - started < 180
