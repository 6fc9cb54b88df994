"""A turn's progress survives kill -9. A session is saved before each tool call that can
change something starts and after each tool batch, so a session process killed between or
inside tool batches, then resumed, goes on with the interrupted turn and never runs such a
call twice; a call that was running when the process died gets a result saying its outcome
is unknown. The sessions are real `workingset run` processes, killed with SIGKILL."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from agents.messages import Message, TextBlock, ToolUseBlock
from agents.opening._lifecycle import OpenSpec, SessionRuntime, open_or_resume
from agents.session._state import PendingState
from agents.settings._config import load_settings
from agents.snapshots._store import DiskSnapshotStore
from cluster.terminal._cli import main
from tests.support import ROOT
from tests.support.builders import bash_call, json_events
from tests.support.eval_support import script
from tests.support.fakes import trust_workspace
from tests.support.sandbox_support import alive_with, unique_sleep


def _configured_workspace(tmp_path: Path) -> Path:
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    trust_workspace(ws)
    (ws / ".workingset").mkdir()
    (ws / ".workingset" / "config.toml").write_text(
        f'model = "scripted:{tmp_path / "script.json"}"\nhome = "{tmp_path / "home"}"\nruntime = "local"\n\n'
        '[permissions]\nmode = "bypass"\n'
    )
    return ws


def _run_until_killed(tmp_path: Path, ws: Path, ready) -> str:
    """`workingset run` in its own process, killed with SIGKILL once `ready(events)` holds;
    returns the session's id."""
    out = tmp_path / "run.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with out.open("w") as stdout:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cluster.terminal._cli", "run", "go", "--cwd", str(ws), "--json"],
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
            env=env,
        )
    try:
        deadline = time.monotonic() + 120
        while not ready(json_events(out.read_text())):
            assert proc.poll() is None, f"the session ended before the kill: {out.read_text()[-2000:]}"
            assert time.monotonic() < deadline, "the session never reached the moment to kill it"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(30)
    return json_events(out.read_text())[0]["session_id"]


def _resume(ws: Path, session_id: str, capsys) -> list[dict]:
    capsys.readouterr()
    assert main(["run", "carry on", "--resume", session_id, "--cwd", str(ws), "--json"]) == 0
    return json_events(capsys.readouterr().out)


def _saved_conversation(tmp_path: Path, session_id: str) -> list[Message]:
    store = DiskSnapshotStore(tmp_path / "home" / "snapshots")
    try:
        return store.load(session_id).state.conversation
    finally:
        store.close()


def _results(conversation: list[Message]) -> dict[str, str]:
    return {r.tool_use_id: r.content for m in conversation for r in m.tool_results_in}


def _saved_after(events: list[dict], use_id: str) -> bool:
    """The batch holding `use_id` completed and was saved."""
    types = [(e["type"], e.get("tool_use_id"), e.get("reason")) for e in events]
    done = [i for i, t in enumerate(types) if t[:2] == ("tool_result", use_id)]
    return bool(done) and ("snapshot", None, "tool_batch") in types[done[0] :]


def test_a_session_killed_between_tool_batches_goes_on_after_the_last_one_and_repeats_none(tmp_path, capsys):
    ws = _configured_workspace(tmp_path)
    script(
        tmp_path,
        "script",
        [
            {"text": "Appending a.", "tool_calls": [bash_call("echo a >> log.txt", "toolu_a")]},
            {"text": "Thinking.", "sleep_ms": 60_000},  # killed while the model thinks
        ],
    )
    session_id = _run_until_killed(tmp_path, ws, lambda events: _saved_after(events, "toolu_a"))
    assert (ws / "log.txt").read_text() == "a\n"

    # The resumed turn asks the model again from just after the saved batch.
    script(tmp_path, "script", [{"text": "Appending b.", "tool_calls": [bash_call("echo b >> log.txt", "toolu_b")]}])
    events = _resume(ws, session_id, capsys)
    assert any("the turn goes on from its last saved tool batch" in e["text"] for e in events if e["type"] == "notice")
    assert (ws / "log.txt").read_text() == "a\nb\n"
    conversation = _saved_conversation(tmp_path, session_id)
    assert [m.text for m in conversation if m.role == "user" and not m.tool_results_in] == ["go", "carry on"]
    assert list(_results(conversation)) == ["toolu_a", "toolu_b"]


def test_a_call_running_when_the_session_was_killed_is_not_run_again_and_its_outcome_is_said_unknown(tmp_path, capsys):
    ws = _configured_workspace(tmp_path)
    slow = unique_sleep()
    script(
        tmp_path,
        "script",
        [
            {"text": "Appending a.", "tool_calls": [bash_call("echo a >> log.txt", "toolu_a")]},
            {"text": "Appending b, slowly.", "tool_calls": [bash_call(f"echo b >> log.txt; sleep {slow}", "toolu_b")]},
        ],
    )
    # Killed while the call runs: its process is there (it has appended b, to its own layer).
    session_id = _run_until_killed(tmp_path, ws, lambda _: bool(alive_with(f"sleep {slow}")))

    script(tmp_path, "script", [{"text": "I will check log.txt before appending again."}])
    events = _resume(ws, session_id, capsys)
    notices = [e["text"] for e in events if e["type"] == "notice"]
    assert any("the call Bash was running when the session was lost; it is not run again" in t for t in notices)
    # A call's writes land when it ends; one that never ended (its harness was killed)
    # left none — and it was not run again, so b is not there twice either.
    assert (ws / "log.txt").read_text() == "a\n"
    results = _results(_saved_conversation(tmp_path, session_id))
    assert results["toolu_a"].endswith("exit code: 0")
    assert "interrupted when the session was lost; it may or may not have taken effect" in results["toolu_b"]
    replies = [e["text"] for e in events if e["type"] == "assistant_text"]
    assert replies[0] == "I will check log.txt before appending again."


async def test_a_read_running_when_the_session_was_lost_runs_again_and_a_write_does_not(tmp_path):
    ws = _configured_workspace(tmp_path)
    (ws / "notes.txt").write_text("alpha\n")
    script(tmp_path, "script", [])
    settings = load_settings(ws, {})
    events: list = []
    session = await open_or_resume(OpenSpec(settings, ws), SessionRuntime(emit=events.append))
    read = ToolUseBlock(id="toolu_read", name="Read", input={"path": "notes.txt"})
    write = ToolUseBlock(id="toolu_write", name="Write", input={"path": "out.txt", "content": "x"})
    # As a version saved inside a wave of a read and a write looks (a write runs alone, so
    # this is the most a wave can hold of each kind).
    session.state.conversation = [Message.user("go"), Message.assistant(TextBlock(text="Both."), read, write)]
    session.state.pending = PendingState(
        order=[read.id, write.id], allowed=[read.id, write.id], running=[read.id, write.id]
    )
    session.state.in_turn = True
    await session.save_snapshot("tool_batch")

    resumed = await open_or_resume(
        OpenSpec(settings, ws, session_id=session.session_id, resume=True), SessionRuntime(emit=events.append)
    )
    outcome = await resumed.settle_resumed()
    assert outcome is not None and outcome.reason == "end_turn"
    results = _results(resumed.conversation)
    assert "alpha" in results["toolu_read"]
    assert "may or may not have taken effect" in results["toolu_write"]
    assert not (ws / "out.txt").exists()
    await session.aclose()
    await resumed.aclose()


async def _resume_with_an_edit_running(tmp_path: Path, calc: str) -> tuple[dict[str, str], list, Path]:
    """A version saved while an Edit of calc.py ran, resumed with calc.py holding `calc`."""
    ws = _configured_workspace(tmp_path)
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    script(tmp_path, "script", [])
    settings = load_settings(ws, {})
    events: list = []
    session = await open_or_resume(OpenSpec(settings, ws), SessionRuntime(emit=events.append))
    edit = ToolUseBlock(
        id="toolu_edit", name="Edit", input={"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
    )
    session.state.conversation = [Message.user("go"), Message.assistant(TextBlock(text="Fixing."), edit)]
    session.state.pending = PendingState(order=[edit.id], allowed=[edit.id], running=[edit.id])
    session.state.in_turn = True
    await session.save_snapshot("tool_batch")
    (ws / "calc.py").write_text(calc)  # what the lost session left on disk
    resumed = await open_or_resume(
        OpenSpec(settings, ws, session_id=session.session_id, resume=True), SessionRuntime(emit=events.append)
    )
    await resumed.settle_resumed()
    results = _results(resumed.conversation)
    await session.aclose()
    await resumed.aclose()
    return results, [getattr(e, "text", "") for e in events if e.type == "notice"], ws


async def test_an_edit_running_when_the_session_was_lost_whose_change_is_not_in_the_file_runs_once(tmp_path):
    results, notices, ws = await _resume_with_an_edit_running(tmp_path, "def add(a, b):\n    return a - b\n")
    assert any(
        "the call Edit was running when the session was lost; its change is not in the file, so it runs now" in t
        for t in notices
    )
    assert (ws / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert results["toolu_edit"] == "Edited calc.py: 1 replacement."


async def test_an_edit_running_when_the_session_was_lost_whose_change_is_in_the_file_is_not_run_again(tmp_path):
    results, notices, ws = await _resume_with_an_edit_running(tmp_path, "def add(a, b):\n    return a + b\n")
    assert any("its change is in the file, so it is not run again" in t for t in notices)
    assert (ws / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert "had taken effect when the session was lost" in results["toolu_edit"]
