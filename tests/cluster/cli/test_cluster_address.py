"""`--address` where no Ray cluster answers, through the real CLI: one line on stderr naming
what is there instead and the fix, exit 2, and nothing of a batch written (not even its
--out directory). Each wrong
address is a real listener (tests/support/not_ray.py); none of these tests starts Ray."""

from __future__ import annotations

import pytest

from cluster.terminal._cli import main
from tests.support.eval_support import calc_repo, fix_turns, script, task, tasks_file
from tests.support.not_ray import NOT_RAY, not_ray

# What the one line says for each: the cause, then the fix.
SAID = {
    "refused": ("nothing listens there (connection refused)", "ray start --head"),
    "silent": ("did not answer Ray's greeting", "HEAD_HOST:6379"),
    "banner": ("a service that is not Ray answers there (it said 'SSH-2.0-OpenSSH_9.6", "HEAD_HOST:6379"),
    "http": ("a web server (HTTP/1) answers there", "is for `ray job submit`"),
    "grpc": ("a gRPC server that is not a GCS answers there", "HEAD_HOST:6379"),
}


@pytest.fixture
def on_ray(monkeypatch):
    monkeypatch.setenv("WORKINGSET_RUNTIME", "ray")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)


def _eval(tmp_path, address: str | None) -> int:
    tasks = tasks_file(tmp_path / "tasks.jsonl", [task("a", calc_repo(tmp_path))])
    model = script(tmp_path, "fix", fix_turns())
    joining = ["--address", address] if address is not None else []
    return main(["eval", str(tasks), "--model", f"scripted:{model}", "--out", str(tmp_path / "out"), *joining])


def _run(tmp_path, address: str) -> int:
    model = script(tmp_path, "fix", fix_turns())
    return main(
        ["run", "fix it", "--cwd", str(calc_repo(tmp_path)), "--model", f"scripted:{model}", "--address", address]
    )


@pytest.mark.parametrize("kind", NOT_RAY)
def test_an_eval_address_where_no_ray_cluster_answers_is_one_line_exit_2_and_nothing_written(
    kind, tmp_path, capsys, on_ray
):
    with not_ray(kind) as address:
        code = _eval(tmp_path, address)
    (line,) = capsys.readouterr().err.splitlines()
    cause, fix = SAID[kind]
    assert code == 2 and line.startswith(f"workingset: error: --address {address}: no Ray cluster there: ")
    assert cause in line and fix in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", ["refused", "http"])
def test_a_run_address_where_no_ray_cluster_answers_is_one_line_and_exit_2(kind, tmp_path, capsys, on_ray):
    with not_ray(kind) as address:
        code = _run(tmp_path, address)
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    cause, fix = SAID[kind]
    assert code == 2 and cause in line and fix in line and captured.out == ""


@pytest.mark.parametrize("command", [_eval, _run], ids=["eval", "run"])
def test_a_ray_client_address_is_refused_up_front_in_one_line_naming_the_ways_that_work(
    command, tmp_path, capsys, on_ray
):
    code = command(tmp_path, "ray://127.0.0.1:10001")
    (line,) = capsys.readouterr().err.splitlines()
    assert code == 2 and "ray:// addresses (Ray Client) are not supported" in line
    assert "--address auto" in line and "ray job submit" in line
    assert not (tmp_path / "out").exists()


def test_an_address_from_ray_address_is_named_as_such(tmp_path, capsys, on_ray, monkeypatch):
    with not_ray("refused") as address:
        monkeypatch.setenv("RAY_ADDRESS", address)
        code = _eval(tmp_path, None)
    (line,) = capsys.readouterr().err.splitlines()
    assert code == 2 and line.startswith(f"workingset: error: RAY_ADDRESS {address}: no Ray cluster there")


def test_a_url_is_not_taken_for_an_address(tmp_path, capsys, on_ray):
    code = _eval(tmp_path, "http://127.0.0.1:8265")
    (line,) = capsys.readouterr().err.splitlines()
    assert code == 2 and "is a URL, not a Ray address" in line and "HEAD_HOST:6379" in line
