"""Goals and the independent judge: evidence window, continue/stop, errors, limits, prompt, compaction."""

import pytest

from agents.errors import Overloaded
from agents.goal import JUDGE_SYSTEM
from agents.messages import TextBlock, ToolUseBlock
from agents.modes import Mode
from agents.session._loop import Session
from agents.settings._config import AgentSettings, SessionSettings
from tests.support.builders import judge_verdict
from tests.support.fakes import RecordingModel, local_session


def _session(
    tmp_path, model, judge, *, max_goal_auto_turns=10, mode=Mode.DEFAULT, stable_prefix=True
) -> tuple[Session, list]:
    settings = SessionSettings(
        agent=AgentSettings(max_goal_auto_turns=max_goal_auto_turns, stable_prefix=stable_prefix)
    )
    return local_session(tmp_path, model, settings=settings, mode=mode, judge=judge)


def _judge_prompt(judge: RecordingModel, n: int = 0) -> str:
    (message,) = judge.requests[n].messages
    return message.text


def _verdicts(events) -> list[str]:
    return [e.verdict for e in events if e.type == "goal_verdict"]


async def test_judge_sees_only_evidence_after_the_goal_was_set(tmp_path):
    model = RecordingModel([[TextBlock(text="PRE-GOAL reply")], [TextBlock(text="POST-GOAL reply")]])
    judge = RecordingModel([judge_verdict("met", "shown")])
    session, _ = _session(tmp_path, model, judge)
    await session.run_turn("PRE-GOAL question")
    session.set_goal("the answer is given")
    await session.run_turn("POST-GOAL question")
    prompt = _judge_prompt(judge)
    assert "POST-GOAL question" in prompt and "POST-GOAL reply" in prompt
    assert "PRE-GOAL" not in prompt
    assert "the answer is given" in prompt


async def test_judge_is_an_independent_call_without_tools(tmp_path):
    model = RecordingModel([[TextBlock(text="done")]])
    judge = RecordingModel([judge_verdict("met", "ok")])
    session, _ = _session(tmp_path, model, judge)
    session.set_goal("tests pass")
    await session.run_turn("go")
    (request,) = judge.requests
    assert request.system == JUDGE_SYSTEM and request.tools == ()
    assert len(model.requests) == 1  # the judge did not use the main model


async def test_judge_evidence_includes_tool_calls_and_results(tmp_path):
    (tmp_path / "a.txt").write_text("RESULT-LINE\n")
    model = RecordingModel([[ToolUseBlock(id="r1", name="Read", input={"path": "a.txt"})], [TextBlock(text="read it")]])
    judge = RecordingModel([judge_verdict("met", "ok")])
    session, _ = _session(tmp_path, model, judge)
    session.set_goal("a.txt was read")
    await session.run_turn("read a.txt")
    prompt = _judge_prompt(judge)
    assert "TOOL CALL Read" in prompt and "RESULT-LINE" in prompt


async def test_not_met_continues_with_the_reason_then_met_ends_the_turn(tmp_path):
    model = RecordingModel([[TextBlock(text="first try")], [TextBlock(text="second try")]])
    judge = RecordingModel([judge_verdict("not_met", "no test output shown"), judge_verdict("met", "tests pass")])
    session, events = _session(tmp_path, model, judge)
    session.set_goal("pytest passes")
    outcome = await session.run_turn("make it pass")
    assert (outcome.reason, outcome.final_text) == ("end_turn", "second try")
    assert len(model.requests) == 2 and len(judge.requests) == 2
    follow_up = model.requests[1].messages[-1]
    assert follow_up.role == "user"
    assert "no test output shown" in follow_up.text and "pytest passes" in follow_up.text
    assert _verdicts(events) == ["not_met", "met"]
    assert events[-1].type == "goal_verdict" and events[-1].reason == "tests pass"
    assert session.goal.status == "met" and session.goal.auto_turns == 1


async def test_met_goal_leaves_the_system_prompt_without_a_stable_prefix(tmp_path):
    model = RecordingModel([[TextBlock(text="done")]])
    session, _ = _session(tmp_path, model, RecordingModel([judge_verdict("met", "ok")]), stable_prefix=False)
    session.set_goal("CONDITION-XYZ")
    await session.run_turn("go")
    assert "CONDITION-XYZ" in model.requests[0].system
    assert "CONDITION-XYZ" not in (await session.compile_working_set()).request.system


async def test_judge_model_error_pauses_with_judge_error(tmp_path):
    model = RecordingModel([[TextBlock(text="done")]])
    judge = RecordingModel([Overloaded("judge overloaded", status_code=529, attempts=3)])
    session, events = _session(tmp_path, model, judge)
    session.set_goal("tests pass")
    outcome = await session.run_turn("go")
    assert outcome.reason == "judge_error" and outcome.final_text == "done"
    assert "judge overloaded" in outcome.detail and "Overloaded" in outcome.detail
    assert len(model.requests) == 1 and _verdicts(events) == ["error"]


@pytest.mark.parametrize("answer", ["Looks good to me!", '{"verdict": "maybe"}', "{not json}"])
async def test_judge_answer_without_a_valid_verdict_pauses_with_judge_error(tmp_path, answer):
    model = RecordingModel([[TextBlock(text="done")]])
    session, _ = _session(tmp_path, model, RecordingModel([[TextBlock(text=answer)]]))
    session.set_goal("tests pass")
    outcome = await session.run_turn("go")
    assert outcome.reason == "judge_error" and "verdict" in outcome.detail
    assert len(model.requests) == 1
    assert session.goal.status == "active"


async def test_plan_mode_never_runs_the_judge(tmp_path):
    model = RecordingModel([[TextBlock(text="here is the plan")]])
    judge = RecordingModel([judge_verdict("not_met", "should not be asked")])
    session, events = _session(tmp_path, model, judge, mode=Mode.PLAN)
    session.set_goal("tests pass")
    outcome = await session.run_turn("plan it")
    assert outcome.reason == "end_turn" and judge.requests == []
    assert _verdicts(events) == [] and len(model.requests) == 1


async def test_max_goal_auto_turns_bounds_automatic_continues(tmp_path):
    model = RecordingModel([[TextBlock(text=f"try {i}")] for i in range(10)])
    judge = RecordingModel([judge_verdict("not_met", f"still failing {i}") for i in range(10)])
    session, events = _session(tmp_path, model, judge, max_goal_auto_turns=2)
    session.set_goal("tests pass")
    outcome = await session.run_turn("go")
    assert outcome.reason == "goal_limit" and outcome.final_text == "try 2"
    assert len(model.requests) == 3 and len(judge.requests) == 3
    assert "2 automatic continuations" in outcome.detail and "still failing 2" in outcome.detail
    assert _verdicts(events) == ["not_met"] * 3


async def test_new_user_input_resets_the_count_of_automatic_continues(tmp_path):
    model = RecordingModel([[TextBlock(text=f"try {i}")] for i in range(10)])
    judge = RecordingModel([judge_verdict("not_met", f"still failing {i}") for i in range(10)])
    session, events = _session(tmp_path, model, judge, max_goal_auto_turns=1)
    session.set_goal("tests pass")
    first = await session.run_turn("go")
    assert first.reason == "goal_limit" and len(model.requests) == 2
    second = await session.run_turn("try another way")  # continues again, not stopped at its first "not met"
    assert second.reason == "goal_limit" and second.final_text == "try 3" and len(model.requests) == 4
    assert [e.auto_turns for e in events if e.type == "goal_verdict"] == [0, 1, 0, 1]


async def test_zero_auto_turns_stops_at_the_first_not_met(tmp_path):
    model = RecordingModel([[TextBlock(text="done")]])
    session, _ = _session(tmp_path, model, RecordingModel([judge_verdict("not_met", "no")]), max_goal_auto_turns=0)
    session.set_goal("tests pass")
    outcome = await session.run_turn("go")
    assert outcome.reason == "goal_limit" and len(model.requests) == 1


async def test_goal_condition_is_in_the_system_prompt_until_cleared_without_a_stable_prefix(tmp_path):
    session, _ = _session(tmp_path, RecordingModel([]), RecordingModel([]), stable_prefix=False)
    without = (await session.compile_working_set()).request.system
    session.set_goal("all tests in tests/ pass")
    with_goal = (await session.compile_working_set()).request.system
    assert "# Goal\nall tests in tests/ pass" in with_goal
    session.set_goal(None)
    cleared = (await session.compile_working_set()).request.system
    assert "all tests in tests/ pass" not in cleared and "# Goal" not in cleared
    assert cleared == without and session.goal is None


async def test_cleared_goal_runs_no_judge(tmp_path):
    model = RecordingModel([[TextBlock(text="done")]])
    judge = RecordingModel([])
    session, _ = _session(tmp_path, model, judge)
    session.set_goal("tests pass")
    session.set_goal(None)
    outcome = await session.run_turn("go")
    assert outcome.reason == "end_turn" and judge.requests == []


async def test_goal_evidence_anchor_follows_its_message_through_compaction(tmp_path):
    model = RecordingModel([[TextBlock(text=f"reply {i}")] for i in range(5)])
    judge = RecordingModel([judge_verdict("not_met", "not yet")])
    session, _ = _session(tmp_path, model, judge, max_goal_auto_turns=0)
    for i in range(4):
        await session.run_turn(f"old input {i}")
    session.set_goal("tests pass")
    await session.run_turn("goal input")  # conversation: (u a) x 4, [u] a: anchor at 8
    assert session.goal.since_index == 8
    result = await session.compact_now()
    assert result.changed and result.failure is None
    assert len(session.conversation) < 10  # the default keeps the task, a summary, the last two
    assert session.conversation[session.goal.since_index].content[-1].text == "goal input"
    assert session.goal.since_index > 0


async def test_goal_evidence_starts_at_the_summary_when_its_message_is_summarized_away(tmp_path):
    model = RecordingModel([[TextBlock(text=f"reply {i}")] for i in range(4)])
    judge = RecordingModel([judge_verdict("not_met", "not yet")] * 3)
    session, _ = _session(tmp_path, model, judge, max_goal_auto_turns=0)
    await session.run_turn("old input")
    session.set_goal("tests pass")
    for i in range(3):
        await session.run_turn(f"goal input {i}")
    assert session.goal.since_index == 2
    result = await session.compact_now()
    assert result.changed
    assert session.goal.since_index == 0
    assert "goal input 0" not in [m.text for m in session.conversation]


async def test_judge_after_compaction_sees_the_kept_goal_evidence(tmp_path):
    model = RecordingModel([[TextBlock(text=f"reply {i}")] for i in range(4)])
    judge = RecordingModel([judge_verdict("not_met", "not yet"), judge_verdict("met", "ok")])
    session, _ = _session(tmp_path, model, judge, max_goal_auto_turns=0)
    await session.run_turn("PRE-GOAL input")
    await session.run_turn("PRE-GOAL input 2")
    session.set_goal("tests pass")
    await session.run_turn("GOAL input A")
    await session.compact_now()
    await session.run_turn("GOAL input B")
    prompt = _judge_prompt(judge, 1)
    assert "GOAL input A" in prompt and "GOAL input B" in prompt
    assert "PRE-GOAL" not in prompt


async def test_goal_set_just_before_a_compaction_starts_with_the_next_message(tmp_path):
    model = RecordingModel([[TextBlock(text=f"reply {i}")] for i in range(3)] + [[TextBlock(text="NEW reply")]])
    judge = RecordingModel([judge_verdict("met", "ok")])
    session, _ = _session(tmp_path, model, judge)
    for i in range(3):
        await session.run_turn(f"OLD input {i}")
    session.set_goal("tests pass")
    await session.compact_now()
    assert session.goal.since_index == len(session.conversation)
    await session.run_turn("NEW input")
    prompt = _judge_prompt(judge)
    assert "NEW input" in prompt and "NEW reply" in prompt and "OLD input" not in prompt


def test_goal_anchor_follows_its_message_through_a_rewrite_or_falls_back_to_the_start():
    from agents.goal import anchor_after_rewrite
    from agents.messages import Message

    a, b, c = Message.user("a"), Message.user("b"), Message.user("c")
    summary = Message.user("[Conversation compacted] ...")
    assert anchor_after_rewrite(1, [a, b, c], [summary, b, c]) == 1
    assert anchor_after_rewrite(0, [a, b, c], [summary, c]) == 0
    assert anchor_after_rewrite(3, [a, b, c], [summary, c]) == 2  # set after the last message: stays at the end
