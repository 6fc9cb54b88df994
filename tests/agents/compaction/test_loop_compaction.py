"""The compiler inside the loop: per-result budget, auto compaction, prompt-too-long, Recall, traces."""

import json

import pytest

from agents.compaction.ledger import CompactionEvent
from agents.errors import AuthError, ConfigError, PromptTooLong
from agents.messages import Message, TextBlock, ToolResultBlock, protocol_problems
from agents.settings._config import AgentSettings, CompactSettings, SessionSettings
from cluster.terminal._cli import main
from tests.support.builders import tool_use
from tests.support.fakes import RecordingModel, recall_session


def _session(tmp_path, model, *, result_max_tokens=8_000, compact=None, max_turns=10, summarizer=None):
    settings = SessionSettings(
        agent=AgentSettings(max_turns=max_turns),
        compact=compact or CompactSettings(),
        result_max_tokens=result_max_tokens,
    )
    return recall_session(tmp_path, model, settings=settings, summarizer=summarizer)


def _history(pairs: int, body_chars: int) -> list[Message]:
    messages = [Message.user("investigate")]
    for n in range(pairs):
        messages.append(Message.assistant(TextBlock(text=f"step {n}"), tool_use(f"h{n}", "Read", path=f"f{n}.py")))
        messages.append(
            Message.tool_results([ToolResultBlock(tool_use_id=f"h{n}", content=f"{n}:" + "x" * body_chars)])
        )
    return messages


async def test_long_tool_result_is_clipped_at_entry_and_recall_returns_the_original(tmp_path):
    original = "".join(f"line {i}\n" for i in range(3_000)) + "=== 3 failed, 10 passed ==="
    (tmp_path / "big.txt").write_text(original)
    model = RecordingModel(
        [
            [tool_use("b1", "Bash", command="cat big.txt")],
            [tool_use("r1", "Recall", id="b1", offset=0, limit=100_000)],
            [TextBlock(text="ok")],
        ]
    )
    session, _ = _session(tmp_path, model, result_max_tokens=500)
    await session.run_turn("go")
    seen = session.conversation[2].tool_results_in[0].content
    assert "[truncated" in seen and 'Recall(id="b1"' in seen and "3 failed, 10 passed" in seen
    assert len(seen) < len(original) // 5
    stored = session.kit.artifacts.get("b1")
    assert stored.startswith(original)  # Bash adds its exit-code line after the output
    recalled = session.conversation[4].tool_results_in[0].content
    assert stored.startswith(recalled.split("\n[")[0][:1_000])


async def test_prompt_too_long_once_recompiles_and_retries_without_counting_a_turn(tmp_path):
    model = RecordingModel(
        [PromptTooLong("prompt is too long: 250000 tokens > 200000 maximum"), [TextBlock(text="fine")]]
    )
    session, events = _session(tmp_path, model)
    session.conversation = _history(20, 2_000)
    outcome = await session.run_turn("continue")
    assert (outcome.reason, outcome.model_calls) == ("end_turn", 1)
    kinds = [e.kind for e in events if isinstance(e, CompactionEvent)]
    assert kinds == ["prompt_too_long"]
    retried = model.requests[1].messages
    assert len(retried) < len(model.requests[0].messages)
    assert protocol_problems(retried) == []


async def test_prompt_too_long_twice_is_a_clear_error_with_estimate_and_budget(tmp_path):
    model = RecordingModel([PromptTooLong("too long"), PromptTooLong("too long")])
    session, _ = _session(tmp_path, model)
    session.conversation = _history(20, 2_000)
    with pytest.raises(PromptTooLong, match=r"refused the request twice .*estimate \d+ tokens, compact budget \d+"):
        await session.run_turn("continue")
    assert len(model.requests) == 2  # no third attempt, no further deletion


async def test_auth_error_never_triggers_a_recompile(tmp_path):
    model = RecordingModel([AuthError("bad key")])
    session, events = _session(tmp_path, model)
    session.conversation = _history(5, 100)
    with pytest.raises(AuthError):
        await session.run_turn("go")
    assert len(model.requests) == 1
    assert not [e for e in events if isinstance(e, CompactionEvent)]


async def test_auto_compaction_runs_before_the_call_that_would_pass_the_budget(tmp_path):
    compact = CompactSettings(context_window=20_000, ratio=0.5, min_gain_tokens=0)
    model = RecordingModel([[TextBlock(text="ok")]])
    session, events = _session(tmp_path, model, compact=compact)
    session.conversation = _history(30, 1_200)  # ~9k+ tokens against a ~6k budget
    await session.run_turn("go on")
    compactions = [e for e in events if isinstance(e, CompactionEvent)]
    assert compactions and compactions[0].kind == "clear"
    sent = model.requests[0]
    assert [e for e in events if e.type == "model_call"][0].estimated_input_tokens <= session.budget_tokens
    assert protocol_problems(sent.messages) == []


async def test_a_request_over_the_window_by_the_count_is_never_sent(tmp_path):
    compact = CompactSettings(strategy="raw", context_window=20_000)  # raw: nothing can shrink it
    model = RecordingModel([[TextBlock(text="ok")]])
    session, _ = _session(tmp_path, model, compact=compact)
    session.conversation = _history(30, 3_000)  # ~23k tokens against 20,000 − the output reserve
    with pytest.raises(PromptTooLong, match="over the .* the window leaves beside the output reserve; it was not sent"):
        await session.run_turn("go on")
    assert model.requests == []


def test_budget_smaller_than_the_system_prompt_fails_at_start(tmp_path):
    with pytest.raises(ConfigError, match="smaller than the system prompt"):
        _session(tmp_path, RecordingModel([]), compact=CompactSettings(context_window=9_000, ratio=0.01))


async def test_manual_compact_failure_leaves_history_unchanged(tmp_path):
    class FailingSummarizer:
        async def summarize(self, messages, *, focus=None):
            raise RuntimeError("summarizer down")

    session, _ = _session(tmp_path, RecordingModel([]), summarizer=FailingSummarizer())
    history = _history(10, 100)
    session.conversation = list(history)
    result = await session.compact_now("focus on tests")
    assert result.failure and "summarizer down" in result.failure
    assert session.conversation == history


async def test_manual_compact_keeps_the_last_two_messages(tmp_path):
    session, _ = _session(tmp_path, RecordingModel([]))
    history = _history(10, 100)
    session.conversation = list(history)
    result = await session.compact_now()
    assert result.failure is None
    assert session.conversation[-2:] == history[-2:] and session.conversation[-1] is history[-1]
    assert session.conversation[0] is history[0]  # the default strategy keeps the task too
    assert len(session.conversation) <= 5  # task, summary, acknowledgement, the last two


def test_traced_run_shows_every_sections_source(tmp_path, capsys):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("Run tests with `pytest -q`.\n")
    script = tmp_path / "s.yaml"
    script.write_text("turns:\n  - tool_calls: [{name: Glob, input: {pattern: '*'}}]\n  - text: done\n")
    trace_dir = tmp_path / "trace"
    code = main(
        ["run", "go", "--cwd", str(ws), "--model", f"scripted:{script}", "--trace-dir", str(trace_dir), "--json"]
    )
    assert code == 0
    files = sorted(trace_dir.glob("*.json"))
    assert len(files) == 2
    record = json.loads(files[0].read_text())
    sources = {s["name"]: s["source"] for s in record["sections"]}
    assert list(sources) == ["base", "tools", "environment", "project", "memory"]
    assert sources["project"].endswith("AGENTS.md") and sources["tools"] == "registry"
    assert "Recall" in record["visible_tools"] and record["budget_tokens"] > record["estimated_tokens"]
    assert record["messages"][0]["content"][0]["text"] == "go"


def test_stable_prefix_is_byte_identical_across_calls(tmp_path, capsys):
    script = tmp_path / "s.yaml"
    script.write_text("turns:\n  - tool_calls: [{name: Glob, input: {pattern: '*'}}]\n  - text: done\n")
    trace_dir = tmp_path / "trace"
    main(["run", "go", "--cwd", str(tmp_path), "--model", f"scripted:{script}", "--trace-dir", str(trace_dir)])
    first, second = (json.loads(p.read_text()) for p in sorted(trace_dir.glob("*.json")))
    assert first["system"] == second["system"]


def test_refusal_budget_aims_under_the_providers_own_counts_or_halves():
    from agents.compaction import refusal_budget

    counted = PromptTooLong("too long", actual_tokens=250_000, limit_tokens=200_000)
    assert refusal_budget(100_000, counted, 150_000) == int(100_000 * 200_000 / 250_000 * 0.9)
    assert refusal_budget(100_000, PromptTooLong("too long"), 150_000) == 50_000
    assert refusal_budget(400_000, PromptTooLong("too long"), 150_000) == 150_000  # never above the budget
