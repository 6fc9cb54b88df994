"""Trace loaders against the real public trajectories in ../shared/traces (never copied into
the repo): every listed file loads, protocol complete, with the counts SOURCES.md gives.
Small hand-written files for the layouts that corpus lacks are in
test_trace_loaders_handwritten.py."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from agents.messages import Message, TextBlock, ToolResultBlock, is_protocol_complete
from benchmarks.traces import (
    NO_OBSERVATION,
    Trace,
    detect_format,
    find_trace_files,
    load_mini_swe_agent,
    load_moatless,
    load_openhands,
    load_swe_agent,
    load_trace_file,
    model_calls,
)
from benchmarks.traces.corpus import corpus_dir

TRACES = corpus_dir()

# Top-level folder of the corpus -> the format its files are in.
FORMAT_OF_FOLDER = {
    "mini-swe-agent-pr816-deepseek": "mini-swe-agent",
    "mini-swe-agent-pr854-deepseek": "mini-swe-agent",
    "openhands": "openhands",
    "mini-swe-agent-gemini-3-pro": "mini-swe-agent",
    "moatless-tools": "moatless",
    "swe-agent": "swe-agent",
}
LOADER_OF_FORMAT = {
    "mini-swe-agent": load_mini_swe_agent,
    "openhands": load_openhands,
    "moatless": load_moatless,
    "swe-agent": load_swe_agent,
}

MINI_ASTROID = (
    "mini-swe-agent-pr816-deepseek/output/deepseek_chat_dev/pylint-dev__astroid-1333/pylint-dev__astroid-1333.traj.json"
)
MINI_REASONER = "mini-swe-agent-pr816-deepseek/output/deepseek_reasoner_dev/sqlfluff__sqlfluff-2419/sqlfluff__sqlfluff-2419.traj.json"
MINI_PR854 = "mini-swe-agent-pr854-deepseek/eval/example_trajectories/astropy__astropy-12907.traj.json"
MINI_GEMINI = "mini-swe-agent-gemini-3-pro/swebench_results/20251118_gemini-3-pro-74pct/trajs/sympy__sympy-19040/sympy__sympy-19040.traj.json"
OPENHANDS = "openhands/evaluation/benchmarks/multi_swe_bench/examples/output.jsonl"
MOATLESS = "moatless-tools/evaluations/20241117_moatless_claude_3_5_sonnet_20241022/{}/trajectory.json"
SWE_TOY = "swe-agent/tests/test_data/trajectories/gpt4__swe-agent__test-repo__default_from_url__t-0.00__p-0.95__c-3.00__install-1/swe-agent__test-repo-i1.traj"
SWE_PYDICOM = "swe-agent/tests/test_data/trajectories/gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1/pydicom__pydicom-1458.traj"
SWE_DEMO = "swe-agent/trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__function_calling_replace_from_source/marshmallow-code__marshmallow-1867.traj"


@dataclass(frozen=True)
class Row:
    """One line of SOURCES.md's per-trajectory table."""

    file: str
    task: str
    model: str
    turns: int
    tool_calls: int
    end_state: str

    @property
    def format(self) -> str:
        return FORMAT_OF_FOLDER[self.file.split("/", 1)[0]]


@pytest.fixture(scope="module")
def root() -> Path:
    if not (TRACES / "SOURCES.md").is_file():
        pytest.fail(
            f"trace corpus not found at {TRACES}: these tests need ../shared/traces "
            "(with SOURCES.md) beside the repository clone",
            pytrace=False,
        )
    return TRACES


@pytest.fixture(scope="module")
def table(root: Path) -> list[Row]:
    text = (root / "SOURCES.md").read_text(encoding="utf-8")
    section = text.split("## Per-trajectory stats", 1)[1]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 10 and cells[0].isdigit():
            num = lambda s: int(s.replace(",", ""))  # noqa: E731
            rows.append(Row(cells[1].strip("`"), cells[2], cells[3], num(cells[4]), num(cells[5]), cells[9]))
    assert len(rows) >= 25, "SOURCES.md's per-trajectory table could not be read"
    return rows


@pytest.fixture(scope="module")
def loaded(root: Path, table: list[Row]) -> dict[str, list[Trace]]:
    """Each listed file loaded once, by auto-detection."""
    return {row.file: load_trace_file(root / row.file) for row in table}


def trace_for(loaded: dict[str, list[Trace]], row: Row) -> Trace:
    found = [t for t in loaded[row.file] if t.task_id == row.task]
    assert len(found) == 1, f"{row.file}: expected one run of {row.task}, got {len(found)}"
    return found[0]


def all_traces(loaded: dict[str, list[Trace]]) -> list[Trace]:
    return [t for traces in loaded.values() for t in traces]


# --- the real corpus -----------------------------------------------------------------------


def test_every_file_in_the_sources_table_loads(loaded, table):
    for row in table:
        trace = trace_for(loaded, row)
        assert trace.source == row.format
        assert trace.messages


def test_find_trace_files_lists_exactly_the_table_files(root, table):
    # LICENSE, README, SOURCES.md, tasks/*.json and the SWE-bench summary JSONs are not traces.
    found = {p.relative_to(root).as_posix() for p in find_trace_files(root)}
    assert found == {row.file for row in table}


def test_every_conversation_is_protocol_complete(loaded):
    for trace in all_traces(loaded):
        assert is_protocol_complete(trace.messages), trace.path


def test_tool_use_ids_are_unique_within_each_trace(loaded):
    for trace in all_traces(loaded):
        ids = [u.id for u in trace.tool_uses]
        assert len(ids) == len(set(ids)), trace.path


def test_tool_call_counts_match_the_table(loaded, table):
    for row in table:
        # The table counts OpenHands' `finish` call as a tool call; here a finish with no
        # observation is the final assistant text (nothing was executed), so one fewer.
        finish_as_text = row.format == "openhands" and row.end_state == "finish"
        expected = row.tool_calls - 1 if finish_as_text else row.tool_calls
        assert len(trace_for(loaded, row).tool_uses) == expected, row.file


@pytest.mark.parametrize(
    ("file", "task", "in_table", "loaded_count"),
    [
        (MINI_ASTROID, "pylint-dev__astroid-1333", 176, 176),
        (MINI_REASONER, "sqlfluff__sqlfluff-2419", 55, 55),
        (MINI_PR854, "astropy__astropy-12907", 64, 64),
        # mini-swe-agent v1: 132 turns, 10 of them format errors that ran nothing.
        (MINI_GEMINI, "sympy__sympy-19040", 122, 122),
        # 23 in the table includes the closing `finish` call, which becomes assistant text.
        (OPENHANDS, "ponylang__ponyc-4595", 23, 22),
        (OPENHANDS, "ponylang__ponyc-4593", 33, 32),
        (OPENHANDS, "ponylang__ponyc-4588", 49, 49),  # hit the iteration limit: no finish
        (MOATLESS.format("astropy__astropy-14182"), "astropy__astropy-14182", 19, 19),
        (MOATLESS.format("django__django-12747"), "django__django-12747", 22, 22),
        (SWE_TOY, "swe-agent__test-repo-i1", 5, 5),
        (SWE_PYDICOM, "pydicom__pydicom-1458", 12, 12),
        (SWE_DEMO, "marshmallow-code__marshmallow-1867", 13, 13),
    ],
)
def test_representative_tool_call_counts(loaded, table, file, task, in_table, loaded_count):
    row = next(r for r in table if r.file == file and r.task == task)
    assert row.tool_calls == in_table
    assert len(trace_for(loaded, row).tool_uses) == loaded_count


def test_model_calls_match_the_turns_column(loaded, table):
    for row in table:
        assert len(model_calls(trace_for(loaded, row))) == row.turns, row.file


def test_model_calls_are_the_assistant_messages(loaded):
    for trace in all_traces(loaded):
        calls = model_calls(trace)
        assert calls and calls[0] >= 1  # the model always had at least the task
        assert all(trace.messages[i].role == "assistant" for i in calls)
        assert len(calls) == sum(m.role == "assistant" for m in trace.messages)


def _raw_tasks(path: Path, fmt: str) -> list[str]:
    """The task text as the source file records it, read independently of the loaders."""
    if fmt == "openhands":
        runs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
        return [
            next(e["args"]["content"] for e in r["history"] if e.get("action") == "message" and e["source"] == "user")
            for r in runs
        ]
    raw = json.loads(path.read_text(encoding="utf-8"))
    if fmt == "mini-swe-agent":
        return [next(m["content"] for m in raw["messages"] if m["role"] == "user")]
    if fmt == "moatless":
        return [raw["nodes"][0]["message"]]
    return [next(m["content"] for m in raw["history"] if m["role"] == "user" and not m.get("is_demo"))]


def test_task_text_is_the_first_user_message(root, loaded, table):
    for file in {row.file for row in table}:
        fmt = FORMAT_OF_FOLDER[file.split("/", 1)[0]]
        traces = loaded[file]
        assert [t.messages[0] for t in traces] == [Message.user(task) for task in _raw_tasks(root / file, fmt)]


def test_auto_detection_picks_the_format_of_each_folder(root, table):
    for file in {row.file for row in table}:
        assert detect_format(root / file) == FORMAT_OF_FOLDER[file.split("/", 1)[0]], file


@pytest.mark.parametrize("file", [MINI_PR854, OPENHANDS, MOATLESS.format("django__django-12747"), SWE_DEMO])
def test_auto_detection_gives_what_the_format_loader_gives(root, loaded, file):
    loader = LOADER_OF_FORMAT[FORMAT_OF_FOLDER[file.split("/", 1)[0]]]
    assert loader(root / file) == loaded[file]


@pytest.mark.parametrize("file", [MINI_PR854, OPENHANDS, SWE_TOY])
def test_auto_detection_does_not_depend_on_the_file_name(root, tmp_path, file):
    renamed = tmp_path / "renamed.json"  # a copy in tmp only, for the duration of the test
    renamed.write_bytes((root / file).read_bytes())
    assert detect_format(renamed) == FORMAT_OF_FOLDER[file.split("/", 1)[0]]


def test_mini_swe_agent_submit_step_gets_a_synthetic_result_and_the_exit_diff(root, loaded):
    trace = loaded[MINI_REASONER][0]
    raw = json.loads((root / MINI_REASONER).read_text(encoding="utf-8"))
    last_use = trace.messages[-2].tool_uses[-1]
    assert "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in last_use.input["command"]
    assert trace.messages[-1].tool_results_in == [ToolResultBlock(tool_use_id=last_use.id, content=NO_OBSERVATION)]
    assert trace.final_patch == raw["messages"][-1]["content"]


def test_mini_swe_agent_keeps_the_recorded_tool_call_ids(root, loaded):
    raw = json.loads((root / MINI_ASTROID).read_text(encoding="utf-8"))
    recorded = [c["id"] for m in raw["messages"] if m["role"] == "assistant" for c in m["tool_calls"]]
    assert [u.id for u in loaded[MINI_ASTROID][0].tool_uses] == recorded


def test_mini_swe_agent_v1_format_error_is_assistant_text_then_user_feedback(loaded):
    trace = loaded[MINI_GEMINI][0]
    errors = [i for i, m in enumerate(trace.messages) if m.role == "assistant" and not m.tool_uses]
    assert len(errors) == 132 - 122
    first = errors[0]
    assert trace.messages[first].text.count("```bash") == 2  # two blocks: nothing was run
    feedback = trace.messages[first + 1]
    assert feedback.role == "user" and not feedback.tool_results_in
    assert feedback.text.startswith("Please always provide EXACTLY ONE action")


def test_mini_swe_agent_v1_takes_the_model_from_the_config(loaded, table):
    rows = [r for r in table if r.file.startswith("mini-swe-agent-gemini-3-pro/")]
    assert len(rows) == 26
    assert {trace_for(loaded, r).model for r in rows} == {"google/gemini-3-pro-preview"}


def test_openhands_finish_without_observation_is_final_assistant_text(loaded):
    trace = next(t for t in loaded[OPENHANDS] if t.task_id == "ponylang__ponyc-4595")
    last = trace.messages[-1]
    assert last.role == "assistant" and not last.tool_uses
    assert "has been addressed by modifying the `idseqsingle` rule" in last.text
    assert trace.final_status == "finish"


def test_openhands_error_for_an_unrecorded_call_reaches_the_model_as_user_text(loaded):
    trace = next(t for t in loaded[OPENHANDS] if t.task_id == "ponylang__ponyc-4593")
    texts = [b.text for m in trace.messages[1:] if m.role == "user" for b in m.content if isinstance(b, TextBlock)]
    assert texts == [
        "Parameter 'command' is expected to be one of ['view', 'create', 'str_replace', 'insert', 'undo_edit']."
    ]


def test_openhands_skips_recall_and_takes_the_system_prompt(loaded):
    for trace in loaded[OPENHANDS]:
        assert trace.system.startswith("You are OpenHands agent")
        assert all(u.name in {"execute_bash", "str_replace_editor", "think"} for u in trace.tool_uses)


def test_moatless_tool_names_and_thoughts_come_from_the_nodes(loaded):
    trace = loaded[MOATLESS.format("django__django-12747")][0]
    assert {u.name for u in trace.tool_uses} == {"SemanticSearch", "str_replace_editor", "Finish"}
    assert all("scratch_pad" not in u.input and "action_args_class" not in u.input for u in trace.tool_uses)
    assert trace.messages[1].text.startswith("1. First, I need to locate the QuerySet.delete()")
    assert trace.final_patch and "django/db/models/deletion.py" in trace.final_patch


def test_swe_agent_tool_name_is_the_first_word_of_the_action(loaded):
    trace = loaded[SWE_TOY][0]
    assert [u.name for u in trace.tool_uses] == ["find_file", "open", "edit", "python", "submit"]
    assert trace.system.startswith("SETTING: You are an autonomous programmer")
