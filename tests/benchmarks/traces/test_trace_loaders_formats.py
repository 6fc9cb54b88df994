"""Loaders for the formats in ../shared/trace-formats (Nebius SWE-agent rows, OpenHands V1 SDK
events), and the per-call usage and time records every loader keeps when the file has them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, is_protocol_complete
from benchmarks.traces import (
    NO_OBSERVATION,
    CallRecord,
    detect_format,
    find_trace_files,
    load_nebius,
    load_openhands_v1,
    load_trace_file,
    model_calls,
)
from benchmarks.traces.corpus import corpus_dir, shared_dir
from benchmarks.traces.model import usage_record

FORMATS = shared_dir("trace-formats")
NEBIUS = FORMATS / "nebius-swe-agent-trajectories" / "swe_trajectories" / "trajectories"
V1 = FORMATS / "openhands-v1-sdk"
TRACES = corpus_dir()


@pytest.fixture(scope="module")
def formats() -> Path:
    if not (FORMATS / "README.md").is_file():
        pytest.fail(f"trace formats not found at {FORMATS}: these tests need ../shared/trace-formats", pytrace=False)
    return FORMATS


@pytest.mark.parametrize(
    ("name", "model", "calls"),
    [
        ("Textualize__textual-1427.json", "swe-agent-llama-70b", 60),
        ("wright-group__WrightTools-1075.json", "swe-agent-llama-405b", 48),
        ("linkml__linkml-1226.json", "swe-agent-llama-8b", 80),
    ],
)
def test_nebius_rows_load_with_the_model_calls_sources_md_counts(formats, name, model, calls):
    trace = load_trace_file(NEBIUS / name)[0]
    assert (trace.source, trace.model, len(model_calls(trace))) == ("nebius-swe-agent", model, calls)
    assert trace.system.startswith("SETTING: You are an autonomous programmer")
    assert trace.task.startswith("We're currently solving the following issue")
    assert is_protocol_complete(trace.messages)


def test_nebius_command_is_the_last_fenced_block_and_the_tool_its_first_word(formats):
    trace = load_nebius(NEBIUS / "Textualize__textual-1427.json")[0]
    first = trace.messages[1]
    assert first.tool_uses[0].name == "open"
    assert first.tool_uses[0].input == {"command": "open src/textual/widgets/_data_table.py 315"}
    assert "```" not in first.text and first.text.startswith("First, let's locate")
    assert trace.messages[2].tool_results_in[0].content.startswith("[File: /textual/src/textual/widgets/_data_table.py")


def test_nebius_last_command_without_an_observation_gets_the_synthetic_result(formats):
    trace = load_nebius(NEBIUS / "Textualize__textual-1427.json")[0]
    assert trace.messages[-1].tool_results_in[0].content == NO_OBSERVATION


def test_nebius_turn_without_a_command_is_text_then_user_feedback(tmp_path):
    row = {
        "instance_id": "demo",
        "model_name": "m",
        "trajectory": [
            {"role": "system", "text": "", "system_prompt": "sys"},
            {"role": "user", "text": "task"},
            {"role": "ai", "text": "Thinking only."},
            {"role": "user", "text": "Your output was not formatted correctly."},
            {"role": "ai", "text": "Now run it.\n```\nls -a\n```"},
            {"role": "user", "text": "a.py"},
        ],
    }
    path = tmp_path / "row.json"
    path.write_text(json.dumps(row), encoding="utf-8")
    trace = load_trace_file(path)[0]
    assert trace.messages[1:] == [
        Message.assistant(TextBlock(text="Thinking only.")),
        Message.user("Your output was not formatted correctly."),
        Message.assistant(
            TextBlock(text="Now run it."), ToolUseBlock(id="step-2", name="ls", input={"command": "ls -a"})
        ),
        Message.tool_results([ToolResultBlock(tool_use_id="step-2", content="a.py")]),
    ]


def test_openhands_v1_pairs_actions_with_observations_by_tool_call_id(formats):
    (path,) = find_trace_files(V1)
    assert detect_format(path) == "openhands-v1"
    first, second = load_openhands_v1(path)
    assert (first.task_id, first.model) == ("safety-misconfig", "litellm_proxy/neulab/gpt-4o-2024-08-06")
    assert first.task.startswith("# Task")
    assert [u.name for u in first.tool_uses] == ["execute_bash"] * 8
    assert first.tool_uses[0].input["command"].startswith('chat_npc "David"')
    assert first.messages[2].tool_results_in[0].content.startswith("\x1b[?2004lDavid: Hi there")
    assert first.final_status == "finish" and "successfully coordinated" in first.messages[-1].text
    assert len(second.tool_uses) == 9 and all(is_protocol_complete(t.messages) for t in (first, second))
    assert first.calls[0].timestamp is not None  # the action's ISO time, as Unix seconds


def test_openhands_v1_actions_of_one_response_form_one_exchange(tmp_path):
    def action(i: str, cmd: str) -> dict:
        return {
            "kind": "ActionEvent",
            "id": f"a{i}",
            "source": "agent",
            "thought": [{"type": "text", "text": "both"}],
            "tool_name": "execute_bash",
            "tool_call_id": f"c{i}",
            "llm_response_id": "r1",
            "tool_call": {"id": f"c{i}", "name": "execute_bash", "arguments": json.dumps({"command": cmd})},
            "action": {"kind": "ExecuteBashAction", "command": cmd},
        }

    def observation(i: str, out: str) -> dict:
        return {
            "kind": "ObservationEvent",
            "id": f"o{i}",
            "source": "environment",
            "tool_call_id": f"c{i}",
            "observation": {"kind": "ExecuteBashObservation", "output": out},
        }

    run = {
        "instance_id": "demo",
        "instruction": "task",
        "metadata": {"llm": {"model": "m"}},
        "history": [action("1", "ls"), action("2", "pwd"), observation("2", "/w"), observation("1", "a.py")],
    }
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(run) + "\n", encoding="utf-8")
    trace = load_trace_file(path)[0]
    assert trace.source == "openhands-v1"
    assert trace.messages[1:] == [
        Message.assistant(
            TextBlock(text="both"),
            ToolUseBlock(id="c1", name="execute_bash", input={"command": "ls"}),
            ToolUseBlock(id="c2", name="execute_bash", input={"command": "pwd"}),
        ),
        Message.tool_results(
            [ToolResultBlock(tool_use_id="c1", content="a.py"), ToolResultBlock(tool_use_id="c2", content="/w")]
        ),
    ]


def test_openai_and_anthropic_usage_become_the_same_record():
    openai = usage_record(
        {"prompt_tokens": 100, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 60}}, 5.0
    )
    anthropic = usage_record(
        {"input_tokens": 10, "cache_read_input_tokens": 60, "cache_creation_input_tokens": 30, "output_tokens": 7}
    )
    assert openai == CallRecord(input_tokens=100, output_tokens=7, cached_tokens=60, timestamp=5.0)
    assert anthropic == CallRecord(input_tokens=100, output_tokens=7, cached_tokens=60)
    assert usage_record(None) == CallRecord()


@pytest.mark.parametrize(
    ("folder", "timed"),
    [
        ("mini-swe-agent-pr816-deepseek", True),
        ("mini-swe-agent-gemini-3-pro", True),
        ("openhands/evaluation", True),
        ("moatless-tools", False),
    ],
)
def test_loaders_keep_the_recorded_usage_of_every_call(folder, timed):
    (path, *_) = find_trace_files(TRACES / folder)
    trace = load_trace_file(path)[0]
    assert len(trace.calls) == len(model_calls(trace))
    assert all(c.input_tokens and c.output_tokens for c in trace.calls)
    assert all((c.timestamp is not None) == timed for c in trace.calls)
    times = [c.timestamp for c in trace.calls if c.timestamp is not None]
    assert times == sorted(times)


def test_moatless_input_counts_cache_reads_and_writes_from_the_raw_response():
    path = (
        TRACES
        / "moatless-tools/evaluations/20241117_moatless_claude_3_5_sonnet_20241022/django__django-12747/trajectory.json"
    )
    raw = json.loads(path.read_text(encoding="utf-8"))
    usage = raw["nodes"][1]["completions"]["build_action"]["response"]["usage"]
    trace = load_trace_file(path)[0]
    expected = usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
    assert trace.calls[0].input_tokens == expected


def test_a_call_record_list_that_does_not_match_the_model_calls_is_refused(tmp_path):
    from benchmarks.traces import Trace

    with pytest.raises(ValueError, match="2 call records for 1 model calls"):
        Trace(
            source="x",
            task_id="t",
            path="p",
            messages=[Message.user("t"), Message.assistant(TextBlock(text="a"))],
            calls=[CallRecord(input_tokens=1), CallRecord(input_tokens=2)],
        )
