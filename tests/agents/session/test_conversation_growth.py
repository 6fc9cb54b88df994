"""Facts of a conversation kept as it grows (`agents.session._growth`): what they say
is what a reading of the whole conversation says, through appends, pops and rewrites."""

import random

from agents.events import Notice
from agents.messages import Message, StateReminder, TextBlock, ToolUseBlock, tool_uses_by_id
from agents.session._growth import GrowthCursor, ToolIdIndex
from agents.session._reminders import ToldState, told_state
from agents.sources._nested_instructions import ToldDirectories
from tests.support.fakes import RecordingModel, local_session, random_conversation


def test_a_cursor_reads_only_the_messages_appended_to_the_list_it_read():
    cursor = GrowthCursor()
    conversation = [Message.user("one")]
    cursor.unread(conversation)
    conversation += [Message.user("two"), Message.user("three")]
    rewritten, unread = cursor.unread(conversation)
    assert not rewritten and [m.text for m in unread] == ["two", "three"]


def test_a_cursor_reads_a_new_list_whole_though_it_begins_with_the_same_messages():
    cursor = GrowthCursor()
    conversation = [Message.user("one"), Message.user("two")]
    cursor.unread(conversation)
    rewritten, unread = cursor.unread([*conversation, Message.user("three")])
    assert rewritten and len(unread) == 3


def test_a_cursor_reads_the_list_whole_again_when_its_last_read_message_was_replaced():
    cursor = GrowthCursor()
    conversation = [Message.user("one"), Message.assistant(TextBlock(text="refused"))]
    cursor.unread(conversation)
    conversation.pop()
    conversation.append(Message.assistant(TextBlock(text="answer")))  # as long as before, another end
    rewritten, unread = cursor.unread(conversation)
    assert rewritten and [m.text for m in unread] == ["one", "answer"]


def _reply(rng: random.Random, n: int) -> Message:
    """A user message telling a state, or a reply with 0-2 calls whose ids may repeat."""
    if rng.random() < 0.2:
        state = StateReminder(mode=rng.choice(["default", "plan"]), goal=rng.choice([None, f"goal {n}"]))
        return Message(role="user", content=(TextBlock(text="told", marker=state), TextBlock(text=f"input {n}")))
    uses = [
        ToolUseBlock(id=f"toolu_{rng.randrange(40)}", name="Read", input={"n": n}) for _ in range(rng.randint(0, 2))
    ]
    return Message.assistant(TextBlock(text=f"reply {n}"), *uses)


def _grown_popped_and_replaced(seed: int):
    """A conversation as a session changes it, step by step: mostly appends, now and
    then its last message popped, a pop and another end, or a new list (a compaction)."""
    rng = random.Random(seed)
    conversation = random_conversation(rng, max_turns=6)
    for n in range(200):
        roll = rng.random()
        if roll < 0.05 and conversation:
            conversation.pop()
        elif roll < 0.1 and conversation:
            conversation.pop()
            conversation.append(_reply(rng, n))
        elif roll < 0.15:
            conversation = conversation[rng.randrange(len(conversation) + 1) :] + [_reply(rng, n)]
        else:
            conversation.append(_reply(rng, n))
        yield conversation


def test_the_tool_id_index_always_holds_the_ids_a_whole_reading_finds():
    for seed in range(5):
        index = ToolIdIndex()
        for conversation in _grown_popped_and_replaced(seed):
            assert index.ids(conversation) == set(tool_uses_by_id(conversation))


def test_the_told_directories_forget_a_telling_a_compaction_folded_away():
    told = ToldDirectories()
    telling = Message(
        role="user",
        content=(TextBlock(text="[Project instructions of pkg/, read when a file tool first reached it]\nPKG rules"),),
    )
    conversation = [Message.user("go"), telling]
    assert told.of(conversation) == {"pkg"}
    conversation.append(Message.user("more"))
    assert told.of(conversation) == {"pkg"}
    assert told.of([Message.user("summary of the earlier work"), conversation[-1]]) == set()


def test_the_told_state_always_is_what_a_whole_reading_finds():
    for seed in range(5):
        told = ToldState()
        for conversation in _grown_popped_and_replaced(seed):
            assert told.of(conversation) == told_state(conversation)


def _read(tool_id: str) -> list:
    return [ToolUseBlock(id=tool_id, name="Read", input={"path": "a.txt"})]


async def test_a_reply_reusing_the_id_of_an_earlier_turns_call_gets_a_fresh_one(tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    model = RecordingModel([_read("toolu_a"), [TextBlock(text="read")], _read("toolu_a"), [TextBlock(text="again")]])
    session, events = local_session(tmp_path, model)
    await session.run_turn("read a")
    await session.run_turn("read a again")
    ids = [u.id for m in session.conversation for u in m.tool_uses]
    assert ids == ["toolu_a", "toolu_a_2"]
    assert any(isinstance(e, Notice) and "toolu_a → toolu_a_2" in e.text for e in events)


async def test_after_a_compaction_the_ids_it_kept_stay_taken_and_the_ids_it_dropped_are_free(tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    first = [_read(f"toolu_{k}") for k in range(6)]
    model = RecordingModel([*first, [TextBlock(text="read them")]])
    session, _ = local_session(tmp_path, model)
    await session.run_turn("read a six times")
    result = await session.compact_now()
    assert result.failure is None
    kept = set(tool_uses_by_id(session.conversation))
    dropped = {f"toolu_{k}" for k in range(6)} - kept
    assert kept and dropped
    reused_kept, reused_dropped = sorted(kept)[0], sorted(dropped)[0]
    model.replies += [[*_read(reused_kept), *_read(reused_dropped)], [TextBlock(text="done")]]
    await session.run_turn("read it once more")
    last_uses = [u.id for u in session.conversation[-3].tool_uses]
    assert last_uses == [f"{reused_kept}_2", reused_dropped]
