"""Workingset's own records as benchmark traces: session exports and trace dirs, written by
the real CLI (a scripted model, tools run for real), then loaded by auto-detection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, is_protocol_complete
from agents.session._state import SessionState
from benchmarks.replay import replay_trace
from benchmarks.traces import (
    NO_OBSERVATION,
    UnknownTraceFormat,
    detect_format,
    find_trace_files,
    load_trace_dir,
    load_trace_file,
)
from cluster.terminal._cli import main
from tests.support.fakes import trust_workspace

TURNS = [
    {"text": "Look around first.", "tool_calls": [{"name": "Glob", "input": {"pattern": "*.py"}}]},
    {"text": "Read the module.", "tool_calls": [{"name": "Read", "input": {"path": "calc.py"}}]},
    {"text": "calc.add returns a + b."},
]


@pytest.fixture
def recorded(tmp_path: Path, capsys) -> dict:
    """One real CLI run with --trace-dir, and its session exported as JSON."""
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": TURNS, "final_text": "Done."}))
    trust_workspace(ws)  # its model, home and permission mode apply only to a trusted workspace
    (ws / ".workingset").mkdir()
    (ws / ".workingset" / "config.toml").write_text(
        f'model = "scripted:{script}"\nhome = "{tmp_path / "home"}"\n\n[permissions]\nmode = "bypass"\n'
    )
    trace_dir = tmp_path / "trace"
    assert main(["run", "what does add do?", "--cwd", str(ws), "--json", "--trace-dir", str(trace_dir)]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    session_id = events[0]["session_id"]
    assert main(["sessions", "--cwd", str(ws), "export", session_id, "--format", "json"]) == 0
    export = tmp_path / "export.json"
    export.write_text(capsys.readouterr().out)
    return {"session_id": session_id, "export": export, "trace_dir": trace_dir}


def test_a_session_export_loads_as_its_conversation(recorded):
    export = recorded["export"]
    assert detect_format(export) == "workingset-session"
    [trace] = load_trace_file(export)
    state = SessionState.model_validate_json(export.read_text())
    assert trace.source == "workingset-session" and trace.task_id == recorded["session_id"]
    assert trace.model == state.model and trace.system == ""
    assert trace.messages == state.conversation
    assert trace.task == "what does add do?"
    assert [u.name for u in trace.tool_uses] == ["Glob", "Read"]
    assert trace.messages[-1].text == "calc.add returns a + b."


def test_a_trace_dir_loads_as_the_last_calls_messages(recorded):
    trace_dir = recorded["trace_dir"]
    files = sorted(trace_dir.glob("*.json"))
    assert len(files) == 3  # one record per model call
    assert detect_format(trace_dir) == "workingset-trace"
    [trace] = load_trace_file(trace_dir)
    last = json.loads(files[-1].read_text())
    assert trace.source == "workingset-trace" and trace.task_id == recorded["session_id"]
    assert trace.system == last["system"] and trace.system
    # The final reply is not in the records: the conversation is what the last call saw.
    assert [m.role for m in trace.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert trace.messages[0].text == "what does add do?"
    assert "return a + b" in trace.messages[-1].tool_results_in[0].content


def test_a_trace_record_with_the_reply_appends_it(recorded):
    trace_dir = recorded["trace_dir"]
    last = sorted(trace_dir.glob("*.json"))[-1]
    record = json.loads(last.read_text())
    record["response"] = [{"type": "text", "text": "calc.add returns a + b."}]
    last.write_text(json.dumps(record))
    [trace] = load_trace_dir(trace_dir)
    assert trace.messages[-1] == Message.assistant(TextBlock(text="calc.add returns a + b."))


def test_a_single_trace_record_is_not_taken_for_plain_anthropic_messages(recorded):
    first = sorted(recorded["trace_dir"].glob("*.json"))[0]
    assert detect_format(first) == "workingset-trace"
    [trace] = load_trace_file(first)
    assert trace.messages == [Message.user("what does add do?")]


def test_find_trace_files_lists_a_trace_dir_once(recorded, tmp_path):
    found = find_trace_files(tmp_path)
    assert recorded["trace_dir"] in found and recorded["export"] in found
    assert not any(p.parent == recorded["trace_dir"] for p in found)
    assert find_trace_files(recorded["trace_dir"]) == [recorded["trace_dir"]]


def test_a_trace_dir_with_two_sessions_gives_two_traces(recorded):
    trace_dir = recorded["trace_dir"]
    first = sorted(trace_dir.glob("*.json"))[0]
    record = json.loads(first.read_text())
    record["session_id"] = "other"
    (trace_dir / "other-call-0001.json").write_text(json.dumps(record))
    traces = load_trace_dir(trace_dir)
    assert sorted(t.task_id for t in traces) == sorted(["other", recorded["session_id"]])


async def test_a_session_export_replays_through_the_real_loop(recorded):
    [trace] = load_trace_file(recorded["export"])
    result = await replay_trace(trace, strategy="raw", context_window=100_000)
    assert len(result.requests) == 3 and result.answered == [1, 3, 5]
    assert result.requests[-1].messages == tuple(trace.messages[:5])


def test_a_paused_export_gets_its_open_tool_uses_answered(tmp_path):
    use = ToolUseBlock(id="toolu_1", name="Bash", input={"command": "rm -rf build"})
    state = SessionState(
        session_id="s1",
        cwd="/w",
        model="scripted:x",
        conversation=[Message.user("clean up"), Message.assistant(use)],
        reason="permission",
    )
    path = tmp_path / "paused.json"
    path.write_text(state.model_dump_json())
    [trace] = load_trace_file(path)
    assert trace.final_status == "permission"
    assert trace.messages[-1] == Message.tool_results([ToolResultBlock(tool_use_id="toolu_1", content=NO_OBSERVATION)])
    assert is_protocol_complete(trace.messages)


def test_a_broken_export_is_named_and_refused(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"schema_version": 1, "session_id": "s", "conversation": [{"role": "robot"}]}))
    with pytest.raises(UnknownTraceFormat, match="bad.json"):
        load_trace_file(path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UnknownTraceFormat, match="not a Workingset trace dir"):
        detect_format(empty)


async def test_a_multi_turn_export_replays_every_outer_turn(tmp_path):
    use = ToolUseBlock(id="toolu_9", name="Glob", input={"pattern": "*.py"})
    conversation = [
        Message.user("first question"),
        Message.assistant(TextBlock(text="first answer")),
        Message.user("now list the files"),
        Message.assistant(use),
        Message.tool_results([ToolResultBlock(tool_use_id="toolu_9", content="calc.py")]),
        Message.assistant(TextBlock(text="calc.py only")),
    ]
    path = tmp_path / "two-turns.json"
    path.write_text(SessionState(session_id="s2", cwd="/w", model="m", conversation=conversation).model_dump_json())
    [trace] = load_trace_file(path)
    result = await replay_trace(trace, strategy="raw")
    assert result.answered == [1, 3, 5]
    assert result.requests[-1].messages == tuple(conversation[:5])
