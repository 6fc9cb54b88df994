import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from agents.snapshots._store import DiskSnapshotStore
from cluster.terminal._cli import main
from tests.support import ROOT

DEMO = ROOT / "benchmarks" / "demo"


def _events(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _demo_workspace(tmp_path) -> Path:
    import shutil

    ws = tmp_path / "ws"
    shutil.copytree(DEMO / "workspace", ws)
    return ws


def test_run_with_scripted_model_prints_json_events_and_edits_the_file(tmp_path, capsys):
    ws = _demo_workspace(tmp_path)
    code = main(
        [
            "run",
            "fix it",
            "--cwd",
            str(ws),
            "--model",
            f"scripted:{DEMO / 'script.yaml'}",
            "--json",
            "--permission-mode",
            "accept-edits",
            "--allow",
            "Bash(python test_greeting.py:*)",
        ]
    )
    events = _events(capsys.readouterr().out)
    assert code == 0
    assert events[0]["type"] == "session_started" and events[0]["schema_version"] == 1
    assert [e["name"] for e in events if e["type"] == "tool_call"] == ["Read", "Edit", "Bash"]
    bash = [e for e in events if e["type"] == "tool_result"][-1]
    assert "1 passed" in bash["content"] and "exit code: 0" in bash["content"]
    assert events[-1]["type"] == "session_ended" and events[-1]["reason"] == "end_turn"
    assert "Verified" in events[-1]["final_text"]
    assert '"Hello, "' in (ws / "greeting.py").read_text()


def test_human_output_shows_tool_calls(tmp_path, capsys):
    ws = _demo_workspace(tmp_path)
    assert (
        main(
            [
                "run",
                "fix it",
                "--cwd",
                str(ws),
                "--model",
                f"scripted:{DEMO / 'script.yaml'}",
                "--permission-mode",
                "bypass",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "▸ Edit" in out and "ended (end_turn)" in out


def test_unknown_model_spec_is_one_clear_line_and_exit_2(tmp_path, capsys):
    assert main(["run", "x", "--cwd", str(tmp_path), "--model", "gpt:4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown model provider 'gpt'" in err


def test_missing_api_key_is_a_clear_error(tmp_path, capsys):
    assert main(["run", "x", "--cwd", str(tmp_path), "--model", "anthropic:claude-sonnet-4-5"]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_missing_cwd_is_a_clear_error(tmp_path, capsys):
    assert main(["run", "x", "--cwd", str(tmp_path / "nope"), "--model", "scripted:x.yaml"]) == 2
    assert "is not an existing directory" in capsys.readouterr().err


def test_bad_config_value_is_a_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("WORKINGSET_AGENT__MAX_TURNS", "zero")
    assert main(["run", "x", "--cwd", str(tmp_path)]) == 2
    assert "WORKINGSET_AGENT__MAX_TURNS" in capsys.readouterr().err


def test_console_script_runs_the_repl_help_and_exit(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("turns: []\n")
    proc = subprocess.run(
        [sys.executable, "-m", "cluster.terminal._cli", "run", "--cwd", str(tmp_path), "--model", f"scripted:{script}"],
        input="/help\nhello\n/exit\n",
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "/exit" in proc.stdout and "Done." in proc.stdout and "Traceback" not in proc.stderr


def test_turn_limit_exits_nonzero(tmp_path, capsys):
    script = tmp_path / "loop.yaml"
    script.write_text("turns:\n" + "  - tool_calls: [{name: Glob, input: {pattern: '*'}}]\n" * 5)
    code = main(["run", "x", "--cwd", str(tmp_path), "--model", f"scripted:{script}", "--max-turns", "2", "--json"])
    assert code == 1 and _events(capsys.readouterr().out)[-1]["reason"] == "turn_limit"


def test_a_headless_run_whose_calls_were_denied_ends_permission_denied_exit_3_and_says_so(tmp_path, capsys):
    ws = _demo_workspace(tmp_path)  # no terminal, no rule allowing Edit or Bash: nobody can answer their asks
    code = main(["run", "fix it", "--cwd", str(ws), "--model", f"scripted:{DEMO / 'script.yaml'}", "--json", "--local"])
    captured = capsys.readouterr()
    ended = _events(captured.out)[-1]
    assert code == 3
    assert (ended["type"], ended["reason"]) == ("session_ended", "permission_denied")
    assert ended["error"].startswith("2 tool calls (Edit, Bash) were denied because nobody could answer")
    assert captured.err.count("\n") == 1 and "the task may be unfinished" in captured.err and "--allow" in captured.err
    assert '"Helo, "' in (ws / "greeting.py").read_text()  # the final text claims a fix; the file is unchanged


def test_the_docs_offline_run_example_runs_as_written(tmp_path, capsys, monkeypatch):
    page = (ROOT / "docs" / "running-agents.md").read_text()
    copy, run = [line for line in page.splitlines() if "/tmp/demo" in line][:2]
    assert copy.startswith("cp -r benchmarks/demo/workspace /tmp/demo") and run.startswith("workingset run ")
    monkeypatch.chdir(ROOT)  # the example's paths are the repository's
    ws = _demo_workspace(tmp_path)
    argv = [str(ws) if word == "/tmp/demo" else word for word in shlex.split(run.split("#")[0])[1:]]
    assert main([*argv, "--local"]) == 0
    assert _events(capsys.readouterr().out)[-1]["reason"] == "end_turn"
    assert '"Hello, "' in (ws / "greeting.py").read_text()


def test_ctrl_c_in_the_repl_cancels_the_running_turn_and_keeps_the_conversation(tmp_path):
    script = tmp_path / "s.json"
    script.write_text(
        json.dumps(
            {
                "turns": [
                    {
                        "text": "Sleeping.",
                        "tool_calls": [{"name": "Bash", "input": {"command": "sleep 60"}, "id": "toolu_sleep"}],
                    },
                    {"text": "Still here."},
                ]
            }
        )
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WORKINGSET_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cluster.terminal._cli",
            "run",
            "--cwd",
            str(tmp_path),
            "--model",
            f"scripted:{script}",
            "--permission-mode",
            "bypass",
            "--local",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        proc.stdin.write("sleep a minute\n")
        proc.stdin.flush()
        _wait_for(lambda: any("Bash" in line for line in lines), proc)
        time.sleep(0.5)  # the command is running
        proc.send_signal(signal.SIGINT)
        _wait_for(lambda: any("turn cancelled" in line for line in lines), proc)
        proc.stdin.write("are you there?\n/exit\n")
        proc.stdin.close()
        assert proc.wait(60) == 0
    finally:
        proc.kill()
    reader.join(10)
    assert "Still here." in "".join(lines) and "Traceback" not in proc.stderr.read()
    store = DiskSnapshotStore(tmp_path / "home" / "snapshots")
    try:
        (info,) = store.sessions()
        conversation = store.load(info.session_id).state.conversation
    finally:
        store.close()
    assert [m.text for m in conversation if m.text] == ["sleep a minute", "Sleeping.", "are you there?", "Still here."]
    (result,) = [r for m in conversation for r in m.tool_results_in]
    assert "interrupted when the turn was cancelled; it may or may not have taken effect" in result.content


def _wait_for(condition, proc, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if proc.poll() is not None:  # it ended: what it said is why
            raise AssertionError(
                f"the REPL ended with {proc.returncode} before getting there: {proc.stderr.read()[-3000:]}"
            )
        assert time.monotonic() < deadline, "the REPL never got there"
        time.sleep(0.05)


@pytest.mark.parametrize(
    "command",
    [
        ["run", "x", "--model", f"scripted:{DEMO / 'script.yaml'}", "--trace-dir", "{file}"],
        ["eval", str(ROOT / "benchmarks" / "eval_tasks" / "tasks.jsonl"), "--out", "{file}", "--local"],
        ["bench", "compaction", "--out", "{file}"],
    ],
)
def test_an_output_directory_that_is_a_file_is_one_clear_line_before_any_work(tmp_path, capsys, command):
    taken = tmp_path / "taken"
    taken.write_text("a file\n")
    argv = [str(taken) if word == "{file}" else word for word in command]
    assert main([*argv, *(["--cwd", str(tmp_path)] if argv[0] == "run" else [])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{taken} is a file, not a directory" in err
    assert taken.read_text() == "a file\n"


@pytest.mark.parametrize("runtime", ["local", "ray"])
def test_ctrl_c_at_the_repl_prompt_leaves_at_once_without_a_traceback(tmp_path, runtime):
    """On Ray too (the embedded cluster the CLI starts): it leaves, and takes the cluster's
    processes with it."""
    script = tmp_path / "s.json"
    script.write_text('{"turns": []}')
    proc = subprocess.Popen(
        [sys.executable, "-m", "cluster.terminal._cli", "run", "--cwd", str(tmp_path), "--model", f"scripted:{script}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "WORKINGSET_RUNTIME": runtime},
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    children: list[psutil.Process] = []
    try:
        _wait_for(lambda: any("REPL" in line for line in lines), proc, timeout_s=180)
        time.sleep(0.5)  # waiting at the prompt, stdin open
        children = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 130
    finally:
        proc.kill()
    err = proc.stderr.read()
    assert "workingset: interrupted" in err and "Traceback" not in err and "Fatal" not in err
    assert (runtime == "ray") == bool(children)  # on Ray, the session ran in a cluster of its own
    _, alive = psutil.wait_procs(children, timeout=30)
    for left in alive:
        left.kill()
    assert not alive, f"left running after Ctrl-C: {[p.pid for p in alive]}"
