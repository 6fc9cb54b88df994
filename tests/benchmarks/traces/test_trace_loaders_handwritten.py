"""Trace loaders on small hand-written files in tmp_path: files that are no trace get a clear
error naming them, and the layouts the real corpus lacks (Anthropic message lists, several
tool calls in one mini-swe-agent step, old bash-block actions, OpenHands batches and flat
histories) load as the recorded conversation."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from benchmarks.traces import (
    NO_OBSERVATION,
    UnknownTraceFormat,
    load_anthropic_messages,
    load_mini_swe_agent,
    load_openhands,
    load_trace_file,
    to_anthropic_messages,
)

# --- errors ----------------------------------------------------------------------------------


def test_unknown_json_raises_unknown_trace_format_naming_the_file(tmp_path):
    path = tmp_path / "mystery.json"
    path.write_text(json.dumps({"hello": "world"}), encoding="utf-8")
    with pytest.raises(UnknownTraceFormat, match=re.escape(str(path))) as info:
        load_trace_file(path)
    assert "mini-swe-agent" in str(info.value) and "anthropic-messages" in str(info.value)


def test_non_json_file_raises_unknown_trace_format_naming_the_file(tmp_path):
    path = tmp_path / "notes.traj"
    path.write_text("this is\nnot json at all\n", encoding="utf-8")
    with pytest.raises(UnknownTraceFormat, match=re.escape(str(path))):
        load_trace_file(path)


def test_unknown_trace_format_is_a_value_error():
    assert issubclass(UnknownTraceFormat, ValueError)


# --- hand-written files for layouts the corpus does not contain ------------------------------


def _write_json(tmp_path: Path, name: str, doc: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


ANTHROPIC_EXAMPLE = {
    "system": "You are a careful engineer.",
    "model": "claude-test",
    "messages": [
        {"role": "user", "content": "Make the test pass."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading both files."},
                {"type": "tool_use", "id": "tu_1", "name": "Read", "input": {"path": "a.py"}},
                {"type": "tool_use", "id": "tu_2", "name": "Read", "input": {"path": "b.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "tu_1", "content": "x = 1"},
                {
                    "type": "tool_result",
                    "tool_use_id": "tu_2",
                    "content": [{"type": "text", "text": "missing"}],
                    "is_error": True,
                },
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ],
}


def test_anthropic_messages_round_trip(tmp_path):
    trace = load_trace_file(_write_json(tmp_path, "conversation.json", ANTHROPIC_EXAMPLE))[0]
    assert trace.source == "anthropic-messages"
    assert (trace.system, trace.model, trace.task) == (
        "You are a careful engineer.",
        "claude-test",
        "Make the test pass.",
    )
    assert trace.messages == [
        Message.user("Make the test pass."),
        Message.assistant(
            TextBlock(text="Reading both files."),
            ToolUseBlock(id="tu_1", name="Read", input={"path": "a.py"}),
            ToolUseBlock(id="tu_2", name="Read", input={"path": "b.py"}),
        ),
        Message.tool_results(
            [
                ToolResultBlock(tool_use_id="tu_1", content="x = 1"),
                ToolResultBlock(tool_use_id="tu_2", content="missing", is_error=True),
            ]
        ),
        Message.assistant(TextBlock(text="Done.")),
    ]
    again = load_anthropic_messages(_write_json(tmp_path, "again.json", to_anthropic_messages(trace)))[0]
    assert again.messages == trace.messages
    assert (again.system, again.model, again.task_id) == (trace.system, trace.model, trace.task_id)


def test_anthropic_message_list_with_a_trailing_use_gets_a_synthetic_result(tmp_path):
    messages = ANTHROPIC_EXAMPLE["messages"][:2]
    trace = load_trace_file(_write_json(tmp_path, "cut.json", messages))[0]
    assert trace.messages[-1] == Message.tool_results(
        [
            ToolResultBlock(tool_use_id="tu_1", content=NO_OBSERVATION),
            ToolResultBlock(tool_use_id="tu_2", content=NO_OBSERVATION),
        ]
    )


def test_mini_swe_agent_step_with_several_tool_calls_is_one_exchange(tmp_path):
    def call(i: str, cmd: str) -> dict[str, Any]:
        return {
            "id": i,
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": cmd})},
        }

    doc = {
        "trajectory_format": "mini-swe-agent-1.1",
        "instance_id": "demo-1",
        "info": {"exit_status": "Submitted", "submission": ""},
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "task"},
            {
                "role": "assistant",
                "content": "two at once",
                "tool_calls": [call("c1", "ls"), call("c2", "pwd")],
                "extra": {},
            },
            {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
            {"role": "tool", "tool_call_id": "c2", "content": "/repo"},
        ],
    }
    trace = load_trace_file(_write_json(tmp_path, "multi.traj.json", doc))[0]
    assert trace.messages[1:] == [
        Message.assistant(
            TextBlock(text="two at once"),
            ToolUseBlock(id="c1", name="bash", input={"command": "ls"}),
            ToolUseBlock(id="c2", name="bash", input={"command": "pwd"}),
        ),
        Message.tool_results(
            [
                ToolResultBlock(tool_use_id="c1", content="a.py"),
                ToolResultBlock(tool_use_id="c2", content="/repo"),
            ]
        ),
    ]


def test_old_mini_swe_agent_reads_the_bash_block_as_the_action(tmp_path):
    doc = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "Look first.\n\n```bash\nls -la\n```"},
        {"role": "user", "content": "<returncode>0</returncode>"},
        {"role": "assistant", "content": "No block here."},
        {"role": "user", "content": "Please always provide EXACTLY ONE action."},
    ]
    trace = load_mini_swe_agent(_write_json(tmp_path, "old.traj.json", doc))[0]
    assert trace.messages[1:] == [
        Message.assistant(
            TextBlock(text="Look first."),
            ToolUseBlock(id="step-1", name="bash", input={"command": "ls -la"}),
        ),
        Message.tool_results([ToolResultBlock(tool_use_id="step-1", content="<returncode>0</returncode>")]),
        Message.assistant(TextBlock(text="No block here.")),
        Message.user("Please always provide EXACTLY ONE action."),
    ]


def test_openhands_actions_from_one_response_form_one_exchange(tmp_path):
    def meta(call_id: str) -> dict[str, Any]:
        return {
            "function_name": "execute_bash",
            "tool_call_id": call_id,
            "total_calls_in_response": 2,
            "model_response": {"id": "resp-1"},
        }

    history = [
        {"id": 0, "source": "agent", "action": "system", "args": {"content": "sys"}},
        {"id": 1, "source": "user", "action": "message", "args": {"content": "task"}},
        {
            "id": 2,
            "source": "agent",
            "action": "run",
            "args": {"command": "ls", "thought": "both"},
            "tool_call_metadata": meta("t1"),
        },
        {
            "id": 3,
            "source": "agent",
            "action": "run",
            "args": {"command": "pwd", "thought": "both"},
            "tool_call_metadata": meta("t2"),
        },
        {"id": 4, "source": "agent", "observation": "run", "cause": 2, "content": "a.py"},
        {"id": 5, "source": "agent", "observation": "run", "cause": 3, "content": "/w"},
    ]
    run = {
        "instance_id": "demo",
        "instruction": "task",
        "metadata": {},
        "history": history,
        "test_result": {},
    }
    trace = load_openhands(_write_json(tmp_path, "output.jsonl", run))[0]
    assert trace.system == "sys"
    assert trace.messages[1:] == [
        Message.assistant(
            TextBlock(text="both"),
            ToolUseBlock(id="t1", name="execute_bash", input={"command": "ls"}),
            ToolUseBlock(id="t2", name="execute_bash", input={"command": "pwd"}),
        ),
        Message.tool_results(
            [
                ToolResultBlock(tool_use_id="t1", content="a.py"),
                ToolResultBlock(tool_use_id="t2", content="/w"),
            ]
        ),
    ]


def test_openhands_flat_history_pairs_each_action_with_the_next_observation(tmp_path):
    history = [
        {"action": "message", "content": "task"},
        {"action": "run", "command": "ls", "thought": "look", "is_confirmed": "confirmed"},
        {"observation": "run", "content": "a.py", "command": "ls", "exit_code": 0},
        {"action": "run_ipython", "code": "print(1)", "thought": "", "kernel_init_code": "x"},
        {"observation": "run_ipython", "content": "1", "code": "print(1)"},
        {"action": "finish", "thought": "all done", "outputs": {}},
    ]
    runs = [
        {"instruction": "task", "history": history, "git_patch": "diff"},
        {"instruction": "t2", "history": history[:3]},
    ]
    path = tmp_path / "output.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in runs) + "\n", encoding="utf-8")
    first, second = load_trace_file(path)
    assert first.messages[1:] == [
        Message.assistant(TextBlock(text="look"), ToolUseBlock(id="step-1-0", name="run", input={"command": "ls"})),
        Message.tool_results([ToolResultBlock(tool_use_id="step-1-0", content="a.py")]),
        Message.assistant(ToolUseBlock(id="step-3-0", name="run_ipython", input={"code": "print(1)"})),
        Message.tool_results([ToolResultBlock(tool_use_id="step-3-0", content="1")]),
        Message.assistant(TextBlock(text="all done")),
    ]
    assert (first.final_patch, first.final_status, second.final_status) == (
        "diff",
        "finish",
        "no finish",
    )
