"""Delta saves and the asynchronous store API: any sequence of edits to a conversation
(appends, rewritten results, truncation, compaction, resumed processes) round-trips
exactly, every kept version stays intact while old ones are collected; values a model
can write that msgpack cannot hold natively are saved, and one that cannot be encoded
leaves the previous snapshot; asave/aload keep the event loop running and keep order."""

import asyncio
import json
import random

import pytest

from agents.messages import ClearedBody, Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.opening._assembly import build_session
from agents.settings._config import load_settings
from agents.snapshots._store import DiskSnapshotStore, SnapshotError
from tests.support.fakes import session_state, tool_interaction

SID = "sess01"


def _edit(rng: random.Random, conversation: list[Message], n: int) -> list[Message]:
    """One random change of the kinds a session makes to its conversation."""
    kind = rng.choice(["append", "append", "append", "clear", "truncate", "compact", "same"])
    results = [i for i, m in enumerate(conversation) if m.tool_results_in]
    if kind == "append" or len(conversation) < 3 or (kind == "clear" and not results):
        added = [m for k in range(rng.randint(1, 25)) for m in tool_interaction(n * 100 + k, rng.randint(0, 3000))]
        return conversation + added  # long enough, often, to cross 64-message index chunks
    if kind == "clear":  # a tool result body replaced in place, as clearing does
        i = rng.choice(results)
        block = conversation[i].content[0]
        cleared = block.model_copy(
            update={"content": "[cleared]", "marker": ClearedBody(original_chars=len(block.content))}
        )
        return [*conversation[:i], Message.tool_results([cleared]), *conversation[i + 1 :]]
    if kind == "truncate":
        return conversation[: rng.randint(1, len(conversation))]
    if kind == "compact":  # a summary replaces everything but the recent messages
        keep = rng.randint(0, min(70, len(conversation)))
        return [
            Message.user(f"summary {n}"),
            Message.assistant(TextBlock(text="ok")),
            *conversation[len(conversation) - keep :],
        ]
    return list(conversation)


@pytest.mark.parametrize("seed", range(4))
def test_any_sequence_of_edits_round_trips_and_every_kept_version_stays_intact(tmp_path, seed):
    rng = random.Random(seed)
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root, max_history=4)
    conversation = [Message.user("start")]
    saved: dict[str, list[Message]] = {}
    for n in range(120):
        conversation = _edit(rng, conversation, n)
        if saved and rng.random() < 0.1:  # the session resumes in a new process
            store.close()
            store = DiskSnapshotStore(root, max_history=4)
            conversation = store.load(SID).state.conversation
        saved[store.save(session_state(conversation))] = list(conversation)
    store.close()
    reader = DiskSnapshotStore(root, max_history=4)
    kept = reader.history(SID)
    assert len(kept) == 5
    for info in kept:
        loaded = reader.load(SID, info.version, fall_back=False).state.conversation
        assert loaded == saved[info.version] and info.messages == len(loaded)


def test_a_compaction_stores_only_the_messages_it_made(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root)
    conversation = [Message.user("start")]
    for i in range(100):
        conversation += tool_interaction(i)
    store.save(session_state(conversation))
    compacted = [Message.user("the summary"), Message.assistant(TextBlock(text="ok")), *conversation[-12:]]
    store.save(session_state(compacted))
    store.close()
    messages = {k for k in _keys(root) if k.startswith("m:")}
    assert len(messages) == len(conversation) + 2
    assert DiskSnapshotStore(root).load(SID).state.conversation == compacted


def _keys(root) -> set[str]:
    import diskcache

    with diskcache.Cache(str(root / SID)) as cache:
        return set(cache.iterkeys())


# -- values a model can write ---------------------------------------------------------------------


def test_integers_beyond_64_bits_in_a_tool_input_are_saved_and_come_back_exactly(tmp_path):
    huge = {"n": 2**80, "negative": -(2**70), "nested": [10**30, {"x": 2**64}], "fits": 2**63 - 1}
    conversation = [Message.user("count"), Message.assistant(ToolUseBlock(id="toolu_1", name="Bash", input=huge))]
    store = DiskSnapshotStore(tmp_path / "snapshots")
    store.save(session_state(conversation))
    loaded = DiskSnapshotStore(tmp_path / "snapshots").load(SID).state.conversation
    assert loaded == conversation and loaded[1].content[0].input == huge
    store.close()


def test_a_message_that_cannot_be_encoded_is_a_clear_error_and_the_previous_snapshot_stays(tmp_path):
    deep: dict = {}
    cursor = deep
    for _ in range(400):  # deeper than pydantic serializes
        cursor["a"] = {}
        cursor = cursor["a"]
    store = DiskSnapshotStore(tmp_path / "snapshots")
    first = store.save(session_state([Message.user("go")]))
    bad = [Message.user("go"), Message.assistant(ToolUseBlock(id="toolu_1", name="Bash", input=deep))]
    with pytest.raises(
        SnapshotError,
        match="session sess01 cannot be saved: message cannot be encoded .*the previous snapshot is unchanged",
    ):
        store.save(session_state(bad))
    assert store.load(SID).version == first
    assert store.save(session_state([Message.user("go"), Message.user("again")])) > first  # still savable
    store.close()


# -- the asynchronous API ----------------------------------------------------------------------------


async def test_asave_leaves_the_event_loop_running_while_the_store_is_written(tmp_path):
    store = DiskSnapshotStore(tmp_path / "snapshots")
    conversation = [Message.user("go")]
    for i in range(40):
        conversation += tool_interaction(i, 200_000)
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0)

    running = asyncio.create_task(ticker())
    version = await store.asave(session_state(conversation))
    done.set()
    await running
    assert ticks > 1  # the loop ran other work while 8 MB were written
    loaded = await store.aload(SID)
    assert loaded.version == version and loaded.state.conversation == conversation
    await store.aclose()


async def test_saves_asked_for_together_are_written_in_the_order_asked(tmp_path):
    store = DiskSnapshotStore(tmp_path / "snapshots")
    states = []
    conversation = [Message.user("go")]
    for i in range(8):
        conversation = conversation + tool_interaction(i)
        states.append(session_state(conversation))
    versions = await asyncio.gather(*(store.asave(s) for s in states))
    assert versions == sorted(versions)
    loaded = await store.aload(SID)  # a load sees every save asked for before it
    assert loaded.version == versions[-1] and loaded.state.conversation == conversation
    assert [v.version for v in await store.ahistory(SID)] == list(reversed(versions))
    await store.aclose()


async def test_a_failing_asave_raises_the_snapshot_error(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    store = DiskSnapshotStore(tmp_path / "file" / "snapshots")
    with pytest.raises(SnapshotError, match="could not write snapshot of session sess01"):
        await store.asave(session_state([Message.user("go")]))
    await store.aclose()


def test_a_result_block_keeps_its_marker_through_a_rewrite_in_place(tmp_path):
    """A cleared result is a new message at an old position: the delta starts there."""
    conversation = [Message.user("go"), *tool_interaction(0, 5000), *tool_interaction(1)]
    store = DiskSnapshotStore(tmp_path / "snapshots")
    store.save(session_state(conversation))
    cleared = ToolResultBlock(tool_use_id="toolu_0", content="[cleared]", marker=ClearedBody(original_chars=5002))
    conversation[2] = Message.tool_results([cleared])
    store.save(session_state(conversation))
    store.close()
    loaded = DiskSnapshotStore(tmp_path / "snapshots").load(SID).state.conversation
    assert loaded == conversation and loaded[2].content[0].marker == ClearedBody(original_chars=5002)


async def test_a_session_whose_model_writes_a_huge_integer_into_a_tool_input_keeps_saving(tmp_path):
    """The integer enters where a model's tool call does; every turn's snapshot is saved."""
    ws = tmp_path / "ws"
    ws.mkdir()
    script = tmp_path / "script.json"
    huge = {"path": "notes.txt", "offset": 2**80}
    script.write_text(json.dumps({"turns": [{"tool_calls": [{"name": "Read", "input": huge}]}, {"text": "done"}]}))
    settings = load_settings(
        ws, {"model": f"scripted:{script}", "home": str(tmp_path / "home"), "permissions": {"mode": "bypass"}}
    )
    events: list = []
    session = build_session(settings, ws, emit=events.append)
    await session.run_turn("read it")
    await session.run_turn("again")
    # saved after the tool batch and after each turn
    assert [(e.saved, e.error) for e in events if e.type == "snapshot"] == [(True, None)] * 3
    saved = (await session.ports.snapshots.aload(session.session_id)).state.conversation
    assert saved[1].tool_uses[0].input["offset"] == 2**80
    session.ports.snapshots.close()
