"""The offline `extractive` summarizer: deterministic, keeps identifiers with provenance."""

import pytest

from agents.compaction.extractive import ExtractiveSummarizer
from agents.compaction.summary import HANDOFF_SECTIONS, summarized_conversation
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock


def _call(tool_id: str, name: str, args: dict, output: str, *, error: bool = False) -> list[Message]:
    return [
        Message.assistant(ToolUseBlock(id=tool_id, name=name, input=args)),
        Message.tool_results([ToolResultBlock(tool_use_id=tool_id, content=output, is_error=error)]),
    ]


def _history() -> list[Message]:
    pytest_out = (
        "============ test session starts ============\n"
        "tests/test_x.py .F.\n"
        "FAILED tests/test_x.py::test_y - ValueError: bad value\n"
        "========= 1 failed, 2 passed in 0.12s =========\n"
    )
    traceback = 'Traceback (most recent call last):\n  File "pkg/parse.py", line 3, in parse\nValueError: bad value\n'
    return [
        Message.user("Make the parser accept empty input."),
        *_call("toolu_read1", "Read", {"path": "pkg/parse.py"}, "def parse(text):\n    ..."),
        *_call(
            "toolu_bash1",
            "Bash",
            {"command": "pytest -q tests/test_x.py"},
            pytest_out + "exit code: 1",
            error=True,
        ),
        *_call(
            "toolu_bash2",
            "Bash",
            {"command": "python -m pkg.parse ''"},
            traceback + "exit code: 2",
            error=True,
        ),
        Message.user("Do not change the public API."),
        Message.assistant(TextBlock(text="The parser rejects empty strings in pkg/parse.py line 3.")),
    ]


def _lines_with(summary: str, needle: str) -> list[str]:
    return [line for line in summary.splitlines() if needle in line]


def test_same_input_gives_the_same_summary():
    history = _history()
    first = ExtractiveSummarizer().summarize_sync(history)
    assert ExtractiveSummarizer().summarize_sync(list(history)) == first


async def test_async_summarize_equals_summarize_sync():
    history = _history()
    summarizer = ExtractiveSummarizer()
    assert await summarizer.summarize(history) == summarizer.summarize_sync(history)


def test_all_six_handoff_sections_appear_in_order():
    summary = ExtractiveSummarizer().summarize_sync(_history())
    positions = [summary.index(f"## {name}") for name in HANDOFF_SECTIONS]
    assert len(positions) == 6
    assert positions == sorted(positions)


def test_empty_history_still_has_every_section():
    summary = ExtractiveSummarizer().summarize_sync([])
    for name in HANDOFF_SECTIONS:
        assert f"## {name}" in summary


def test_paths_are_kept_as_active_artifacts():
    summary = ExtractiveSummarizer().summarize_sync(_history())
    artifacts = summary.split("## Active artifacts", 1)[1].split("## Remaining work", 1)[0]
    assert "pkg/parse.py" in artifacts
    assert "tests/test_x.py" in artifacts


def test_commands_are_kept_with_exit_codes_and_provenance():
    summary = ExtractiveSummarizer().summarize_sync(_history())
    [line] = _lines_with(summary, "$ pytest -q tests/test_x.py")
    assert "exit 1" in line
    assert "[Bash toolu_bash1, error]" in line
    [line] = _lines_with(summary, "$ python -m pkg.parse")
    assert "exit 2" in line
    assert "toolu_bash2" in line


def test_failing_test_names_are_kept_with_provenance():
    summary = ExtractiveSummarizer().summarize_sync(_history())
    lines = _lines_with(summary, "tests/test_x.py::test_y")
    assert lines
    assert all("Bash toolu_bash1" in line for line in lines)
    assert "1 failed, 2 passed" in lines[0]


def test_error_lines_are_kept_with_provenance():
    summary = ExtractiveSummarizer().summarize_sync(_history())
    lines = _lines_with(summary, "ValueError: bad value")
    assert any("Bash toolu_bash2" in line for line in lines)


def test_read_call_is_described_with_its_arguments_and_provenance():
    summary = ExtractiveSummarizer().summarize_sync(_history())
    [line] = _lines_with(summary, "toolu_read1")
    assert "[Read toolu_read1, ok]" in line
    assert "path=pkg/parse.py" in line


def test_user_texts_become_objective_and_constraints():
    summary = ExtractiveSummarizer().summarize_sync(_history())
    objective = summary.split("## Objective", 1)[1].split("## Current state", 1)[0]
    assert "Make the parser accept empty input." in objective
    decisions = summary.split("## Decisions and constraints", 1)[1]
    decisions = decisions.split("## Active artifacts", 1)[0]
    assert "Do not change the public API." in decisions


def test_last_assistant_text_is_the_current_state():
    summary = ExtractiveSummarizer().summarize_sync(_history())
    state = summary.split("## Current state", 1)[1].split("## Verified evidence", 1)[0]
    assert "The parser rejects empty strings" in state


def test_earlier_summary_boundary_is_carried_over():
    earlier = "## Objective\nPort the CLI to click; keep flag --frobnicate."
    history = summarized_conversation(earlier, _history()[1:], summarized_count=40)
    summary = ExtractiveSummarizer().summarize_sync(history)
    objective = summary.split("## Objective", 1)[1].split("## Current state", 1)[0]
    assert "Carried over from an earlier summary" in objective
    assert "keep flag --frobnicate" in objective


def test_focus_moves_matching_evidence_first():
    summary = ExtractiveSummarizer().summarize_sync(_history(), focus="pkg.parse")
    evidence = summary.split("## Verified evidence", 1)[1].splitlines()[1]
    assert "toolu_bash2" in evidence


def _long_history(n: int = 80) -> list[Message]:
    history = [Message.user("objective " * 100)]
    for i in range(n):
        history += _call(
            f"u{i}",
            "Bash",
            {"command": f"pytest tests/test_{i}.py"},
            f"FAILED tests/test_{i}.py::test_y\nValueError: bad value {i}\nexit code: 1",
        )
        history.append(Message.user(f"decision {i} " * 20))
    return history


def test_long_history_is_shortened_and_says_what_was_left_out():
    summary = ExtractiveSummarizer(max_chars=2_000).summarize_sync(_long_history())
    assert len(summary) < 2_600
    assert "more not shown)" in summary


@pytest.mark.parametrize("max_chars", [500, 1_000, 3_000])
def test_summary_never_exceeds_max_chars(max_chars):
    summary = ExtractiveSummarizer(max_chars=max_chars).summarize_sync(_long_history())
    assert len(summary) <= max_chars
