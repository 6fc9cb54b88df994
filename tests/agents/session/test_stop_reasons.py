"""Stop reasons as the loop's contract: what each one does to the turn, the goal judge,
the conversation, the events, the CLI exit code, subagent results and eval statuses."""

from __future__ import annotations

import json

from agents.events import SessionEnded
from agents.messages import Message, TextBlock, ThinkingBlock, ToolUseBlock, protocol_problems
from agents.ports import ModelResponse, Usage
from agents.session._loop import Session
from agents.session._stop_reasons import CONTINUE_CUT_REPLY, next_step_for
from agents.settings._config import AgentSettings, SessionSettings
from cluster.eval.task_flow import status_for
from cluster.terminal._cli import main
from tests.support.builders import judge_verdict
from tests.support.fakes import RecordingModel, local_session


def _session(tmp_path, model, *, judge=None, max_cut=2, max_turns=10) -> tuple[Session, list]:
    settings = SessionSettings(agent=AgentSettings(max_turns=max_turns, max_truncated_replies=max_cut))
    return local_session(tmp_path, model, settings=settings, judge=judge)


def _reply(*blocks, stop="end_turn", details=None) -> ModelResponse:
    return ModelResponse(
        content=tuple(blocks), stop_reason=stop, usage=Usage(input_tokens=10, output_tokens=2), stop_details=details
    )


# ------------------------------------------------------------ the pure decision


def test_a_natural_end_and_a_stop_sequence_are_natural_ends():
    for stop in ("end_turn", "stop_sequence"):
        assert (
            next_step_for(_reply(TextBlock(text="x"), stop=stop), cut_in_a_row=0, max_cut_in_a_row=2).kind
            == "natural_end"
        )


def test_tool_calls_run_whatever_a_server_called_the_stop():
    use = ToolUseBlock(id="t", name="Read")
    for stop in ("tool_use", "end_turn"):
        assert next_step_for(_reply(use, stop=stop), cut_in_a_row=0, max_cut_in_a_row=2).kind == "run_tools"


def test_a_cut_reply_is_continued_until_the_limit_then_truncated():
    cut = _reply(TextBlock(text="half"), stop="max_tokens")
    assert next_step_for(cut, cut_in_a_row=1, max_cut_in_a_row=2).kind == "continue_cut"
    assert next_step_for(cut, cut_in_a_row=2, max_cut_in_a_row=2).kind == "truncated"


# ------------------------------------------------------------------- the loop


async def test_a_cut_text_reply_is_continued_with_a_request_to_go_on(tmp_path):
    model = RecordingModel(
        [_reply(TextBlock(text="The first half"), stop="max_tokens"), [TextBlock(text="and the rest.")]]
    )
    session, _ = _session(tmp_path, model)
    outcome = await session.run_turn("write it")
    assert (outcome.reason, outcome.model_calls) == ("end_turn", 2)
    assert model.requests[1].messages[-1] == Message.user(CONTINUE_CUT_REPLY)
    assert model.requests[1].messages[-2].text == "The first half"


async def test_calls_of_a_cut_reply_are_answered_with_errors_and_never_run(tmp_path):
    model = RecordingModel(
        [
            _reply(
                ToolUseBlock(id="w1", name="Write", input={"path": "big.txt", "content": "x" * 50}), stop="max_tokens"
            ),
            [TextBlock(text="I will write it in parts.")],
        ]
    )
    session, events = _session(tmp_path, model)
    outcome = await session.run_turn("write big.txt")
    assert outcome.reason == "end_turn" and not (tmp_path / "big.txt").exists()
    (result,) = model.requests[1].messages[-1].tool_results_in
    assert result.is_error and "cut off" in result.content
    assert protocol_problems(model.requests[1].messages) == []


async def test_replies_cut_again_and_again_end_the_turn_truncated_and_are_never_judged(tmp_path):
    cut = _reply(ToolUseBlock(id="c", name="Read", input={"path": "a"}), stop="max_tokens")
    model = RecordingModel(
        [
            cut,
            cut.model_copy(update={"content": (ToolUseBlock(id="d", name="Read"),)}),
            cut.model_copy(update={"content": (ToolUseBlock(id="e", name="Read"),)}),
        ]
    )
    judge = RecordingModel([judge_verdict("met")])
    session, events = _session(tmp_path, model, judge=judge, max_cut=2)
    session.set_goal("done")
    outcome = await session.run_turn("go")
    assert outcome.reason == "truncated" and "3 times in a row" in outcome.detail
    assert judge.requests == []
    assert protocol_problems(session.conversation, allow_trailing_uses=False) == []


async def test_with_no_continuations_allowed_one_cut_reply_is_truncated(tmp_path):
    session, _ = _session(tmp_path, RecordingModel([_reply(TextBlock(text="half"), stop="max_tokens")]), max_cut=0)
    assert (await session.run_turn("go")).reason == "truncated"


async def test_a_refusal_is_its_own_outcome_the_reply_is_dropped_and_nothing_is_judged(tmp_path):
    model = RecordingModel([_reply(TextBlock(text="I will not"), stop="refusal", details="cyber: could enable harm")])
    judge = RecordingModel([judge_verdict("met")])
    session, events = _session(tmp_path, model, judge=judge)
    session.set_goal("done")
    outcome = await session.run_turn("do the bad thing")
    assert outcome.reason == "refusal" and "cyber: could enable harm" in outcome.detail
    [kept] = session.conversation  # the user's message (behind the goal's state block); the reply is not kept
    assert kept.role == "user" and kept.content[-1] == TextBlock(text="do the bad thing")
    assert judge.requests == []
    assert [e.text for e in events if e.type == "assistant_text"] == ["I will not"]  # the record keeps it


async def test_a_paused_turn_is_continued_as_it_is_and_joins_one_message(tmp_path):
    model = RecordingModel(
        [
            _reply(ThinkingBlock(thinking="t", signature="s"), TextBlock(text="Part one."), stop="pause_turn"),
            [TextBlock(text="Part two.")],
        ]
    )
    session, _ = _session(tmp_path, model)
    outcome = await session.run_turn("go")
    assert (outcome.reason, outcome.model_calls) == ("end_turn", 2)
    assert model.requests[1].messages[-1].role == "assistant"  # sent back as it was, no input added
    assert session.conversation[-1].content == (
        ThinkingBlock(thinking="t", signature="s"),
        TextBlock(text="Part one."),
        TextBlock(text="Part two."),
    )
    assert len(session.conversation) == 2


async def test_arguments_that_are_not_json_are_an_error_result_the_model_can_fix(tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    model = RecordingModel(
        [
            [ToolUseBlock(id="b1", name="Read", raw_input='{"path": "a.txt"')],
            [ToolUseBlock(id="b2", name="Read", input={"path": "a.txt"})],
            [TextBlock(text="read it")],
        ]
    )
    session, _ = _session(tmp_path, model)
    outcome = await session.run_turn("read a.txt")
    assert outcome.reason == "end_turn"
    first, second = (m.tool_results_in[0] for m in session.conversation if m.tool_results_in)
    assert first.is_error and "not valid JSON" in first.content and '{"path": "a.txt"' in first.content
    assert not second.is_error and "hello" in second.content


async def test_only_a_natural_end_runs_the_judge(tmp_path):
    judge = RecordingModel([judge_verdict("met")])
    session, _ = _session(tmp_path, RecordingModel([[TextBlock(text="done")]]), judge=judge)
    session.set_goal("done")
    assert (await session.run_turn("go")).reason == "end_turn"
    assert len(judge.requests) == 1


# ----------------------------------------------- the end reason flows outward


def _script(tmp_path, body: str):
    path = tmp_path / "s.yaml"
    path.write_text(body)
    return path


def _ended(capsys) -> SessionEnded:
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    return SessionEnded.model_validate(next(e for e in lines if e["type"] == "session_ended"))


def test_a_truncated_run_exits_1_and_says_truncated(tmp_path, capsys):
    script = _script(tmp_path, "turns:\n" + "  - {text: half, stop_reason: max_tokens}\n" * 3)
    code = main(["run", "go", "--cwd", str(tmp_path), "--model", f"scripted:{script}", "--json"])
    assert code == 1 and _ended(capsys).reason == "truncated"


def test_a_refused_run_exits_1_and_says_refusal(tmp_path, capsys):
    script = _script(tmp_path, "turns:\n  - {text: 'I cannot', stop_reason: refusal}\n")
    code = main(["run", "go", "--cwd", str(tmp_path), "--model", f"scripted:{script}", "--json"])
    assert code == 1 and _ended(capsys).reason == "refusal"


async def test_a_subagent_that_was_refused_reports_it_as_an_error_result(tmp_path):
    from agents.subagents._spawner import _run_child

    child, _ = _session(tmp_path, RecordingModel([_reply(TextBlock(text="no"), stop="refusal", details="bio")]))
    result = await _run_child(child, type("R", (), {"prompt": "p", "description": "d"})())
    assert result.is_error and result.reason == "refusal" and "refused by the provider" in result.text


def test_eval_rows_say_truncated_and_refused_not_passed():
    assert status_for("truncated", passed=True) == "truncated"
    assert status_for("refusal", passed=True) == "refused"
    assert status_for("end_turn", passed=True) == "passed"
    assert status_for("turn_limit", passed=True) == "budget"
