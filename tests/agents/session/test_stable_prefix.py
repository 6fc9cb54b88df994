"""Stable sections: a mode or goal change reaches the model after the cached prefix, not as
an edit of the tool list or the system prompt (`agents.session._reminders`)."""

from agents.messages import Message, StateReminder, TextBlock, ToolResultBlock, ToolUseBlock
from agents.modes import Mode
from agents.session._reminders import PromptDelivery, told_state
from agents.settings._config import AgentSettings, CompactSettings, SessionSettings
from tests.support.fakes import RecordingModel, local_session
from tools import default_registry


def _replies(n: int) -> RecordingModel:
    return RecordingModel([[TextBlock(text=f"reply {i}")] for i in range(n)])


def _no_auto_turns() -> SessionSettings:
    return SessionSettings(agent=AgentSettings(max_goal_auto_turns=0))


def _state_block(message: Message) -> StateReminder | None:
    first = message.content[0]
    return first.marker if isinstance(first, TextBlock) and isinstance(first.marker, StateReminder) else None


async def test_a_mode_change_leaves_the_system_prompt_and_the_tool_list_byte_identical(tmp_path):
    model = _replies(3)
    session, _ = local_session(tmp_path, model)
    await session.run_turn("one")
    session.set_mode(Mode.PLAN)
    await session.run_turn("two")
    session.set_mode(Mode.DEFAULT)
    await session.run_turn("three")
    first = model.requests[0]
    assert all(r.system == first.system and r.tools == first.tools for r in model.requests)


async def test_a_mode_change_keeps_every_earlier_message_of_the_request_as_it_was(tmp_path):
    model = _replies(2)
    session, _ = local_session(tmp_path, model)
    await session.run_turn("one")
    session.set_mode(Mode.PLAN)
    await session.run_turn("two")
    before, after = model.requests
    assert after.messages[: len(before.messages)] == before.messages


async def test_plan_mode_is_told_at_the_head_of_the_next_user_message_with_the_tools_that_run(tmp_path):
    model = _replies(2)
    session, _ = local_session(tmp_path, model)
    await session.run_turn("one")
    session.set_mode(Mode.PLAN)
    await session.run_turn("two")
    last = model.requests[1].messages[-1]
    told = _state_block(last)
    assert told is not None and told.mode == "plan" and last.content[-1].text == "two"
    assert "Read" in told.plan_tools and "Edit" not in told.plan_tools and "Bash" not in told.plan_tools
    assert "Only these tools run now: " in last.content[0].text


async def test_a_call_to_a_tool_plan_mode_hides_is_refused_though_the_request_lists_it(tmp_path):
    (tmp_path / "a.txt").write_text("old\n")
    edit = ToolUseBlock(id="e1", name="Edit", input={"path": "a.txt", "old_string": "old", "new_string": "new"})
    model = RecordingModel([[edit], [TextBlock(text="refused")]])
    session, _ = local_session(tmp_path, model, mode=Mode.PLAN)
    await session.run_turn("edit it")
    assert "Edit" in {t.name for t in model.requests[0].tools}
    (result,) = session.conversation[2].tool_results_in
    assert result.is_error and "Edit is unavailable in plan mode" in result.content
    assert (tmp_path / "a.txt").read_text() == "old\n"


async def test_a_goal_set_mid_session_leaves_the_system_prompt_and_is_told_in_the_next_user_message(tmp_path):
    model = _replies(2)
    session, _ = local_session(tmp_path, model)
    await session.run_turn("one")
    session.set_goal("all tests pass")
    await session.run_turn("two")
    assert model.requests[0].system == model.requests[1].system
    told = _state_block(model.requests[1].messages[-1])
    assert told is not None and told.goal == "all tests pass" and told.mode == "default"


async def test_a_goal_cleared_is_told_as_no_goal_at_the_next_user_message(tmp_path):
    judge = RecordingModel([[TextBlock(text='{"verdict": "not_met", "reason": "not yet"}')]])
    session, _ = local_session(tmp_path, _replies(2), judge=judge, settings=_no_auto_turns())
    session.set_goal("all tests pass")
    session.set_goal(None)
    session.set_goal("the build is green")
    await session.run_turn("one")
    session.set_goal(None)
    await session.run_turn("two")
    first, second = (m for m in session.conversation if m.role == "user")
    assert _state_block(first).goal == "the build is green"
    cleared = _state_block(second)
    assert cleared is not None and cleared.goal is None and "No goal is active." in cleared.render()


async def test_no_state_block_when_the_state_is_what_the_conversation_last_told(tmp_path):
    model = _replies(3)
    session, _ = local_session(tmp_path, model)
    await session.run_turn("one")
    session.set_mode(Mode.PLAN)
    session.set_mode(Mode.DEFAULT)  # back before the model saw it: nothing to tell
    await session.run_turn("two")
    session.set_mode(Mode.PLAN)
    await session.run_turn("three")
    await session.run_turn("four")
    users = [m for m in session.conversation if m.role == "user"]
    assert [_state_block(m) is not None for m in users] == [False, False, True, False]


def test_the_state_is_told_again_once_the_message_that_told_it_is_gone():
    registry = default_registry()
    delivery = PromptDelivery()
    told = delivery.user_message("plan it", [], registry, Mode.PLAN, None)
    assert told_state([told]).mode == "plan"
    compacted = [Message.user("a digest standing for the turn that told plan mode")]
    again = delivery.user_message("go on", compacted, registry, Mode.PLAN, None)
    assert _state_block(again) is not None and _state_block(again).mode == "plan"


# On every call this window keeps the first message and the last two, so a state told at
# a later user message is folded away inside a long turn.
_WINDOW = SessionSettings(compact=CompactSettings(strategy="window:first=1,last=2"))


def _a_reply_then_reads(tmp_path, reads: int) -> RecordingModel:
    (tmp_path / "a.txt").write_text("a\n")
    return RecordingModel(
        [[TextBlock(text="reply 0")]]
        + [[ToolUseBlock(id=f"r{i}", name="Read", input={"path": "a.txt"})] for i in range(reads)]
        + [[TextBlock(text="done")]]
    )


async def test_a_state_a_compaction_folded_away_mid_turn_is_told_after_the_latest_tool_results(tmp_path):
    model = _a_reply_then_reads(tmp_path, reads=3)
    session, _ = local_session(tmp_path, model, settings=_WINDOW)
    await session.run_turn("one")
    session.set_mode(Mode.PLAN)
    await session.run_turn("read it a few times")
    last = model.requests[-1].messages[-1]
    assert last.tool_results_in and isinstance(last.content[0], ToolResultBlock)
    told = last.content[-1]
    assert isinstance(told, TextBlock) and isinstance(told.marker, StateReminder) and told.marker.mode == "plan"


async def test_no_state_is_retold_after_a_compaction_that_kept_the_message_telling_it(tmp_path):
    model = _a_reply_then_reads(tmp_path, reads=3)
    session, _ = local_session(tmp_path, model, settings=_WINDOW, mode=Mode.PLAN)  # told in the first message, kept
    await session.run_turn("one")
    await session.run_turn("read it a few times")
    reminders = [
        b
        for m in model.requests[-1].messages
        for b in m.content
        if isinstance(b, TextBlock) and isinstance(b.marker, StateReminder)
    ]
    assert len(reminders) == 1 and model.requests[-1].messages[0].content[0] is reminders[0]
