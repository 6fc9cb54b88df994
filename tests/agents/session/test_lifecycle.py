"""One lifecycle: `workingset run` opens and resumes a session the same way in this
process (`--local`) and on Ray (a SessionActor runs agents.opening._lifecycle.open_or_resume),
and an error a user can cause while opening is one line on both paths."""

import json
from pathlib import Path

import pytest

from cluster.terminal._cli import main
from tests.support.builders import workspace


@pytest.fixture(params=["local", "ray"])
def runtime(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "ray":
        request.getfixturevalue("ray_cluster")  # the shared test cluster; connect() reuses it
    monkeypatch.setenv("WORKINGSET_RUNTIME", request.param)
    return request.param


def _script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    verdict = {"verdict": "met", "reason": "shown"}
    path.write_text(json.dumps({"turns": [{"text": "the work is done"}], "judge": [verdict, verdict]}))
    return path


def _ours(err: str) -> list[str]:
    """What stderr says, without the Ray core's own log lines (its actor-restart warning)."""
    return [line for line in err.splitlines() if not line.startswith("[")]


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict], str]:
    ws = workspace(tmp_path)
    argv = ["run", "--cwd", str(ws), "--model", f"scripted:{_script(tmp_path)}", "--json", *args]
    code = main(argv)
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines() if line.startswith("{")], err


def test_a_goal_given_with_resume_replaces_the_saved_goal_with_a_notice(runtime, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WORKINGSET_HOME", str(tmp_path / "home"))
    code, first, _ = _run(tmp_path, capsys, "start", "--goal", "the old goal holds")
    assert code == 0
    session_id = first[0]["session_id"]
    code, second, _ = _run(tmp_path, capsys, "go on", "--resume", session_id, "--goal", "the new goal holds")
    assert code == 0
    notices = [e["text"] for e in second if e["type"] == "notice"]
    assert notices == ["the goal given replaces the saved goal (the old goal holds)"]
    assert [e["condition"] for e in second if e["type"] == "goal_verdict"] == ["the new goal holds"]


def test_resuming_a_session_that_was_never_saved_is_one_error_line(runtime, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WORKINGSET_HOME", str(tmp_path / "home"))
    code, _, err = _run(tmp_path, capsys, "hello", "--resume", "nosuchsession")
    assert code == 2
    assert "Traceback" not in err
    assert len(_ours(err)) == 1, err
    (line,) = _ours(err)
    assert line.startswith("workingset: error: cannot resume nosuchsession: no snapshot of session nosuchsession")


def test_a_malformed_permission_rule_is_one_error_line(runtime, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WORKINGSET_HOME", str(tmp_path / "home"))
    code, _, err = _run(tmp_path, capsys, "hello", "--allow", "Edit(src")
    assert code == 2
    assert "Traceback" not in err
    assert len(_ours(err)) == 1, err
    (line,) = _ours(err)
    assert line.startswith("workingset: error: ") and "'Edit(src'" in line
