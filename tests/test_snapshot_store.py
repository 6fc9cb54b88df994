"""DiskSnapshotStore: exact round trip, rotation and bounds, content addressing, corruption
fallback that overwrites nothing, restore of an old version, and concurrent writers."""

import hashlib
import subprocess
import sys
from pathlib import Path

import diskcache
import pytest

import agents.snapshot_file as snapshot_file
import agents.snapshot_store as snapshot_store_module
from agents.codec import encode_messages, pack, unpack
from agents.goal import GoalState
from agents.messages import (
    Bridge,
    ClearedBody,
    ClippedBody,
    DroppedSpan,
    ElidedBody,
    Message,
    SummaryBoundary,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from agents.ports import Usage
from agents.session_state import SCHEMA_VERSION, PendingState, PermissionState, SessionState
from agents.snapshot_store import (
    DiskSnapshotStore,
    SnapshotCorrupt,
    SnapshotError,
    SnapshotNotFound,
)
from tests.fakes import compacted_conversation, session_state, tool_interaction

ROOT = Path(__file__).resolve().parents[1]
SID = "sess01"

# -- helpers -----------------------------------------------------------------------------




def _growing(pairs: int) -> list[Message]:
    messages = [Message.user("investigate the failing test")]
    for i in range(pairs):
        messages += tool_interaction(i)
    return messages


def _every_block_conversation() -> list[Message]:
    return [
        Message.user("Fix the bug — ünïcödé, emoji 🚀, and a NUL-free \"quote\""),
        Message.assistant(
            TextBlock(text="Looking."),
            ToolUseBlock(
                id="toolu_a",
                name="Grep",
                input={"pattern": "def f\\(", "nested": {"list": [1, 2.5, None, True, "s"], "empty": {}}, "big": 2**53},
            ),
            ToolUseBlock(id="toolu_b", name="Bash", input={}),
        ),
        Message.tool_results(
            [
                ToolResultBlock(tool_use_id="toolu_a", content="a.py:1: def f(x):\n\ttab\r\nwindows line"),
                ToolResultBlock(tool_use_id="toolu_b", content="", is_error=True),
            ]
        ),
        Message(role="user", content=(TextBlock(text="and also"), TextBlock(text=""))),
        Message.assistant(TextBlock(text="Done: fixed `f`.")),
    ]


def _full_state() -> SessionState:
    conversation = [*_every_block_conversation(), Message.assistant(ToolUseBlock(id="toolu_c", name="Edit", input={"path": "a.py"}))]
    return session_state(
        conversation,
        git_head="0123456789abcdef0123456789abcdef01234567",
        settings_fingerprint="fp-1",
        saved_at=1_700_000_000.123456,
        reason="permission",
        mode="plan",
        goal=GoalState(condition="pytest passes", since_index=1, auto_turns=2, status="active", last_reason="not yet"),
        pending=PendingState(
            order=["toolu_c", "toolu_d"],
            results=[ToolResultBlock(tool_use_id="toolu_d", content="Permission denied", is_error=True)],
            allowed=[],
            asks=["toolu_c"],
            reasons={"toolu_c": "Edit changes state; default mode asks first"},
        ),
        permissions=PermissionState(config_fingerprint="perm-fp", grants=[("Bash", "git status"), ("Read", None)]),
        usage=Usage(input_tokens=1234, output_tokens=56, cache_read_input_tokens=7, cache_creation_input_tokens=8),
        model_calls=9,
        turn_calls=3,
        final_text="Done: fixed `f`.",
        tree_tokens=4321,
        tree_cost_usd=0.0123,
    )


def _dump(root: Path, session_id: str = SID) -> dict:
    """Every key and stored value of a session's diskcache (read through a separate handle)."""
    with diskcache.Cache(str(root / session_id)) as cache:
        return {key: cache.get(key) for key in cache.iterkeys()}


def _keys(root: Path, prefix: str, session_id: str = SID) -> set[str]:
    return {k for k in _dump(root, session_id) if isinstance(k, str) and k.startswith(prefix)}


def _edit(root: Path, key: str, value: bytes | None, session_id: str = SID) -> None:
    with diskcache.Cache(str(root / session_id)) as cache:
        if value is None:
            assert cache.delete(key)
        else:
            cache.set(key, value)


def _messages_of(root: Path, version: str) -> list[str]:
    """The message digests a version refers to, read from its envelope and chunks."""
    data = _dump(root)
    body = unpack(unpack(data["v:" + version])["body"])
    digests = []
    for key in body["chunks"]:
        chunk = data["c:" + key]
        digests += [chunk[i : i + 32].hex() for i in range(0, len(chunk), 32)]
    return digests


class FakeClock:
    """Stands in for the `time` module inside the store: versions are named by this clock."""

    def __init__(self, start: float = 1_700_000_000.0):
        self.now = start

    def time(self) -> float:
        return self.now

    def time_ns(self) -> int:
        return int(self.now * 1e9)

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(snapshot_store_module, "time", fake)
    return fake


@pytest.fixture
def store(tmp_path):
    s = DiskSnapshotStore(tmp_path / "snapshots")
    yield s
    s.close()


# -- round trip --------------------------------------------------------------------------


def test_round_trip_is_exact_for_every_block_type_and_all_control_state(store):
    original = _full_state()
    version = store.save(original)
    loaded = store.load(SID)
    assert loaded.version == version and loaded.problem is None
    assert loaded.state == original
    assert loaded.state.model_dump(mode="json") == original.model_dump(mode="json")
    assert encode_messages(loaded.state.conversation) == encode_messages(original.conversation)
    assert loaded.state.permissions.grants == [("Bash", "git status"), ("Read", None)]


def test_round_trip_survives_a_fresh_store_on_the_same_directory(tmp_path):
    original = _full_state()
    writer = DiskSnapshotStore(tmp_path / "snapshots")
    writer.save(original)
    writer.close()
    reader = DiskSnapshotStore(tmp_path / "snapshots")
    try:
        assert reader.load(SID).state == original
    finally:
        reader.close()


def test_a_new_sessions_store_directory_holds_only_its_store_file(store):
    store.save(_full_state())
    store.close()
    assert sorted(p.name for p in (store.root / SID).iterdir()) == ["cache.db"]


def test_placing_a_new_store_file_never_replaces_one_another_process_made_first(tmp_path):
    writer = DiskSnapshotStore(tmp_path / "snapshots")
    version = writer.save(_full_state())
    writer.close()
    snapshot_file._place_empty_store(tmp_path / "snapshots" / SID)  # as a racing first save would
    reader = DiskSnapshotStore(tmp_path / "snapshots")
    try:
        assert reader.load(SID).version == version
    finally:
        reader.close()


def test_an_empty_conversation_round_trips(store):
    store.save(session_state([], reason="clear"))
    loaded = store.load(SID).state
    assert loaded.conversation == [] and loaded.reason == "clear"


def test_loading_an_unknown_session_is_not_found(store):
    with pytest.raises(SnapshotNotFound, match="no snapshot of session nope"):
        store.load("nope")


@pytest.mark.parametrize("bad_id", ["", ".", "..", "a/b"])
def test_a_session_id_that_is_not_a_plain_name_is_refused(store, bad_id):
    with pytest.raises(SnapshotError, match="invalid session id"):
        store.save(session_state([]).model_copy(update={"session_id": bad_id}))


# -- rotation and bounds -----------------------------------------------------------------


def test_each_save_becomes_current_and_the_old_current_rotates_into_history(store):
    first = store.save(session_state(_growing(1)))
    second = store.save(session_state(_growing(2)))
    history = store.history(SID)
    assert [(v.version, v.current) for v in history] == [(second, True), (first, False)]
    assert [v.messages for v in history] == [5, 3]
    assert store.load(SID).state.conversation == _growing(2)
    assert store.load(SID, first).state.conversation == _growing(1)


def test_history_is_bounded_by_count_and_dropped_versions_are_deleted(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root, max_history=3)
    versions = [store.save(session_state([Message.user(f"conversation {n}")])) for n in range(6)]
    assert [v.version for v in store.history(SID)] == list(reversed(versions[-4:]))
    store.close()
    assert _keys(root, "v:") == {"v:" + v for v in versions[-4:]}
    # messages only the dropped versions referred to are collected too
    assert len(_keys(root, "m:")) == 4


def test_max_history_zero_keeps_only_the_current_version(tmp_path):
    store = DiskSnapshotStore(tmp_path / "snapshots", max_history=0)
    store.save(session_state(_growing(1)))
    last = store.save(session_state(_growing(2)))
    assert [v.version for v in store.history(SID)] == [last]
    store.close()


def test_history_is_bounded_by_age(tmp_path, clock):
    store = DiskSnapshotStore(tmp_path / "snapshots", max_history=50, max_age_days=1)
    old = store.save(session_state([Message.user("two days ago")]))
    clock.advance(86_400 * 2)
    recent = store.save(session_state([Message.user("an hour ago")]))
    clock.advance(3_600)
    current = store.save(session_state([Message.user("now")]))
    assert [v.version for v in store.history(SID)] == [current, recent]
    with pytest.raises(SnapshotNotFound, match=f"{old} of session {SID} is not kept"):
        store.load(SID, old, fall_back=False)
    store.close()


def test_garbage_collection_keeps_messages_shared_with_live_versions(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root, max_history=1)
    for pairs in range(1, 6):
        store.save(session_state(_growing(pairs)))
    assert store.load(SID).state.conversation == _growing(5)
    assert store.load(SID, store.history(SID)[1].version).state.conversation == _growing(4)
    store.close()
    assert len(_keys(root, "m:")) == len(_growing(5))


def test_sessions_lists_newest_first_and_filters_by_workspace(store):
    store.save(session_state([Message.user("a")], saved_at=1.0).model_copy(update={"session_id": "older"}))
    store.save(session_state([Message.user("b"), Message.assistant(TextBlock(text="the answer"))], saved_at=2.0))
    store.save(SessionState(session_id="elsewhere", cwd="/other", model="m", saved_at=3.0))
    assert [s.session_id for s in store.sessions(Path("/work/ws"))] == [SID, "older"]
    assert [s.session_id for s in store.sessions()] == ["elsewhere", SID, "older"]
    info = store.sessions(Path("/work/ws"))[0]
    assert (info.messages, info.last_text, info.cwd) == (2, "the answer", "/work/ws")


# -- content addressing ------------------------------------------------------------------


def test_a_second_version_of_a_growing_conversation_stores_only_the_new_messages(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root)
    store.save(session_state(_growing(100)))  # 201 messages: 4 chunks of the index
    store.close()
    messages_before, chunks_before = _keys(root, "m:"), _keys(root, "c:")
    assert (len(messages_before), len(chunks_before)) == (201, 4)

    store = DiskSnapshotStore(root)
    store.save(session_state(_growing(101)))
    store.close()
    messages_after, chunks_after = _keys(root, "m:"), _keys(root, "c:")
    assert messages_after > messages_before and len(messages_after - messages_before) == 2
    assert chunks_after > chunks_before and len(chunks_after - chunks_before) == 1  # only the last chunk changed


def test_identical_messages_are_stored_once(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root)
    store.save(session_state([Message.user("ok"), Message.assistant(TextBlock(text="ok")), Message.user("ok")]))
    store.close()
    assert len(_keys(root, "m:")) == 2


def test_saving_the_same_state_twice_adds_a_version_but_no_messages(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root)
    state = session_state(_growing(10))
    store.save(state)
    store.save(state)
    store.close()
    assert len(_keys(root, "v:")) == 2 and len(_keys(root, "m:")) == 21 and len(_keys(root, "c:")) == 1


# -- compaction markers and snapshots written before they were typed ---------------------------


def test_compaction_markers_round_trip_through_the_store(tmp_path):
    store = DiskSnapshotStore(tmp_path / "snapshots")
    state = session_state(compacted_conversation())
    store.save(state)
    loaded = DiskSnapshotStore(tmp_path / "snapshots").load(SID).state
    assert loaded == state
    assert encode_messages(loaded.conversation) == encode_messages(state.conversation)
    store.close()


def test_text_that_reads_like_a_marker_loads_as_plain_text(tmp_path):
    body = '[cleared 12 chars of tool output; Recall(id="toolu_0") returns it]'
    conversation = [*_growing(0), *tool_interaction(0)]
    conversation[2] = Message.tool_results([ToolResultBlock(tool_use_id="toolu_0", content=body)])
    store = DiskSnapshotStore(tmp_path / "snapshots")
    store.save(session_state(conversation))
    loaded = DiskSnapshotStore(tmp_path / "snapshots").load(SID).state.conversation
    assert loaded[2].content[0].content == body and loaded[2].content[0].marker is None
    store.close()


# Text exactly as schema-1 code wrote its markers, in the block layout of that time (no
# marker field): what each becomes on load, and text that only resembles one.
_CLIPPED_BODY = "head" + '\n[truncated 500 chars; Recall(id="toolu_3", offset=4) returns them]\n' + "tail"
SCHEMA_1_CONVERSATION = [
    {"role": "user", "content": [
        {"type": "text", "text": "[Conversation compacted] 6 earlier messages were replaced by the summary below. "
                                 "Tool outputs they held can still be read with Recall."},
        {"type": "text", "text": "## Objective\nFix the build."},
    ]},
    {"role": "assistant", "content": [
        {"type": "text", "text": "Understood. I will continue from this summary and the messages that follow."}]},
    {"role": "user", "content": [{"type": "text", "text": "Go on."}]},
    {"role": "assistant", "content": [{"type": "text", "text": "Understood. I will continue from the messages that follow."}]},
    {"role": "user", "content": [{"type": "text", "text": "[Context trimmed] 2 earlier messages were dropped here by the "
                                  "'window' compaction strategy. Tool outputs they held are kept in the record; "
                                  "Recall(id=...) returns one when you know its id."}]},
    {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "make"}},
        {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": "make test"}},
        {"type": "tool_use", "id": "toolu_3", "name": "Bash", "input": {"command": "make lint"}},
        {"type": "tool_use", "id": "toolu_4", "name": "Read", "input": {"path": "notes.txt"}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1",
         "content": '[cleared 360 chars of tool output; Recall(id="toolu_1") returns it]', "is_error": False},
        {"type": "tool_result", "tool_use_id": "toolu_2",
         "content": '[observation elided: 640 chars; Recall(id="toolu_2")]', "is_error": True},
        {"type": "tool_result", "tool_use_id": "toolu_3", "content": _CLIPPED_BODY, "is_error": False},
        # A file that quotes another call's cleared note: not this block's marker.
        {"type": "tool_result", "tool_use_id": "toolu_4",
         "content": '[cleared 360 chars of tool output; Recall(id="toolu_1") returns it]', "is_error": False},
    ]},
    {"role": "assistant", "content": [{"type": "text", "text": "[Conversation compacted] is what the note says."}]},
]


def _write_schema_1_snapshot(root: Path, conversation: list[dict], **header) -> None:
    """One session version laid out as schema-1 code stored it, written key by key."""
    digests = []
    with diskcache.Cache(str(root / SID)) as cache:
        for message in conversation:
            data = pack(message)
            digest = hashlib.sha256(data).hexdigest()
            cache.set("m:" + digest, data)
            digests.append(digest)
        chunk = b"".join(bytes.fromhex(d) for d in digests)
        chunk_key = hashlib.sha256(chunk).hexdigest()
        cache.set("c:" + chunk_key, chunk)
        head = {**session_state([]).header(), "schema_version": 1, **header}
        body = pack({"header": head, "chunks": [chunk_key], "count": len(conversation)})
        version = "01700000000000000000"
        cache.set("v:" + version, pack({"schema": 1, "sum": hashlib.sha256(body).hexdigest(), "body": body}))
        cache.set("session", {"current": version, "history": [], "retired": [], "cwd": head["cwd"],
                              "model": head["model"], "saved_at": head["saved_at"], "messages": len(conversation),
                              "last_text": ""})


def test_a_schema_1_snapshot_loads_with_its_text_markers_typed(tmp_path):
    root = tmp_path / "snapshots"
    _write_schema_1_snapshot(root, SCHEMA_1_CONVERSATION)
    loaded = DiskSnapshotStore(root).load(SID).state
    conversation = loaded.conversation
    assert loaded.schema_version == SCHEMA_VERSION
    assert [m.model_dump(mode="json", exclude={"content": {"__all__": {"marker"}}}) for m in conversation] == (
        SCHEMA_1_CONVERSATION
    )  # the text is untouched; only markers were added
    markers = [[getattr(b, "marker", None) for b in m.content] for m in conversation]
    assert markers == [
        [SummaryBoundary(summarized=6), None],
        [Bridge(after_summary=True)],
        [None],
        [Bridge()],
        [DroppedSpan(dropped=2, strategy="window")],
        [None, None, None, None],
        [ClearedBody(original_chars=360), ElidedBody(original_chars=640),
         ClippedBody(removed_chars=500, offset=4), None],
        [None],
    ]


def test_a_schema_1_snapshot_is_saved_again_under_the_current_schema(tmp_path):
    root = tmp_path / "snapshots"
    _write_schema_1_snapshot(root, SCHEMA_1_CONVERSATION)
    store = DiskSnapshotStore(root)
    loaded = store.load(SID).state
    store.save(loaded)
    again = DiskSnapshotStore(root).load(SID).state
    assert again == loaded and unpack(_dump(root)["v:" + store.load(SID).version])["schema"] == SCHEMA_VERSION
    store.close()


def test_a_schema_1_parked_result_that_was_clipped_is_typed(tmp_path):
    root = tmp_path / "snapshots"
    clipped = {"tool_use_id": "toolu_3", "content": _CLIPPED_BODY, "is_error": False}
    pending = {"order": ["toolu_3"], "results": [clipped], "allowed": [], "asks": [], "reasons": {}}
    _write_schema_1_snapshot(root, SCHEMA_1_CONVERSATION[:6], pending=pending)
    loaded = DiskSnapshotStore(root).load(SID).state
    assert loaded.pending.results[0].marker == ClippedBody(removed_chars=500, offset=4)


# -- corruption: fall back to the newest intact version, overwrite nothing -------------------


def _flip_last_byte(raw: bytes) -> bytes:
    return raw[:-1] + bytes([raw[-1] ^ 0xFF])


def _schema(number: int):
    def rewrite(raw: bytes) -> bytes:
        envelope = unpack(raw)
        envelope["schema"] = number
        return pack(envelope)

    return rewrite


ENVELOPE_DAMAGE = {
    "flipped byte": (_flip_last_byte, "fails its checksum"),
    "truncated": (lambda raw: raw[: len(raw) // 2], "cannot be decoded"),
    "no known schema": (_schema(0), "has no known schema (0)"),
    "garbage": (lambda raw: b"\xc1\xff garbage, not msgpack \x00\x01", "cannot be decoded"),
    "wrong type": (lambda raw: pack([1, 2, 3]), "cannot be decoded"),
}


def _two_versions(root: Path) -> tuple[str, str, SessionState]:
    """v1 intact (3 messages), v2 current (5 messages, two of them only in v2)."""
    store = DiskSnapshotStore(root)
    intact = session_state(_growing(1), mode="plan", goal=GoalState(condition="tests pass", since_index=0))
    v1 = store.save(intact)
    v2 = store.save(session_state(_growing(2)))
    store.close()
    return v1, v2, intact


@pytest.mark.parametrize("damage", list(ENVELOPE_DAMAGE))
def test_a_damaged_current_envelope_falls_back_to_the_newest_intact_version(tmp_path, damage):
    root = tmp_path / "snapshots"
    v1, v2, intact = _two_versions(root)
    corrupt, expected = ENVELOPE_DAMAGE[damage]
    _edit(root, "v:" + v2, corrupt(_dump(root)["v:" + v2]))
    before = _dump(root)

    store = DiskSnapshotStore(root)
    loaded = store.load(SID)
    assert loaded.version == v1 and loaded.state == intact
    assert expected in loaded.problem and v2 in loaded.problem
    assert f"using the newest intact version {v1} instead" in loaded.problem
    assert [v.reason for v in store.history(SID)] == ["(corrupt)", "turn"]
    store.close()
    assert _dump(root) == before


@pytest.mark.parametrize("what", ["message", "chunk"])
def test_a_missing_message_or_index_chunk_falls_back_and_names_it(tmp_path, what):
    root = tmp_path / "snapshots"
    v1, v2, intact = _two_versions(root)
    if what == "message":
        only_in_v2 = set(_messages_of(root, v2)) - set(_messages_of(root, v1))
        _edit(root, "m:" + sorted(only_in_v2)[0], None)
    else:
        chunk = unpack(unpack(_dump(root)["v:" + v2])["body"])["chunks"][0]
        _edit(root, "c:" + chunk, None)
    before = _dump(root)

    store = DiskSnapshotStore(root)
    loaded = store.load(SID)
    store.close()
    assert loaded.version == v1 and loaded.state == intact
    assert f"snapshot version {v2}: {'message' if what == 'message' else 'index chunk'}" in loaded.problem
    assert "is missing or damaged" in loaded.problem
    assert _dump(root) == before


def test_a_message_with_undecodable_bytes_is_detected_by_its_digest(tmp_path):
    root = tmp_path / "snapshots"
    v1, v2, intact = _two_versions(root)
    only_in_v2 = sorted(set(_messages_of(root, v2)) - set(_messages_of(root, v1)))[0]
    _edit(root, "m:" + only_in_v2, b"\xc1\xc1\xc1 undecodable")
    store = DiskSnapshotStore(root)
    loaded = store.load(SID)
    store.close()
    assert loaded.version == v1 and f"message {only_in_v2[:12]} is missing or damaged" in loaded.problem


def test_fallback_skips_several_corrupt_versions_to_the_newest_intact_one(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root)
    versions = [store.save(session_state(_growing(n))) for n in range(1, 5)]
    store.close()
    for v in versions[2:]:
        _edit(root, "v:" + v, b"garbage")
    store = DiskSnapshotStore(root)
    loaded = store.load(SID)
    store.close()
    assert loaded.version == versions[1] and loaded.state.conversation == _growing(2)
    assert versions[3] in loaded.problem


def test_no_intact_version_is_a_clear_error_and_nothing_is_changed(tmp_path):
    root = tmp_path / "snapshots"
    v1, v2, _ = _two_versions(root)
    for v in (v1, v2):
        _edit(root, "v:" + v, _schema(0)(_dump(root)["v:" + v]))
    before = _dump(root)
    store = DiskSnapshotStore(root)
    with pytest.raises(SnapshotCorrupt, match=f"{v2} has no known schema.*no intact older version exists"):
        store.load(SID)
    store.close()
    assert _dump(root) == before


def test_asking_for_a_corrupt_version_without_fallback_raises(tmp_path):
    root = tmp_path / "snapshots"
    _, v2, _ = _two_versions(root)
    _edit(root, "v:" + v2, b"garbage")
    store = DiskSnapshotStore(root)
    with pytest.raises(SnapshotCorrupt, match=f"snapshot version {v2} cannot be decoded") as caught:
        store.load(SID, fall_back=False)
    store.close()
    assert caught.value.version == v2


def test_saving_after_a_fallback_keeps_the_corrupt_version_untouched_in_history(tmp_path):
    root = tmp_path / "snapshots"
    v1, v2, intact = _two_versions(root)
    damaged = _flip_last_byte(_dump(root)["v:" + v2])
    _edit(root, "v:" + v2, damaged)
    store = DiskSnapshotStore(root)
    loaded = store.load(SID)
    v3 = store.save(loaded.state.model_copy(update={"conversation": [*loaded.state.conversation, Message.user("go on")]}))
    history = store.history(SID)
    store.close()
    assert [v.version for v in history] == [v3, v2, v1]
    assert _dump(root)["v:" + v2] == damaged


# -- restore an old version --------------------------------------------------------------


def test_restore_makes_an_old_version_current_and_keeps_the_rest_in_history(store):
    v1 = store.save(session_state(_growing(1), mode="plan"))
    v2 = store.save(session_state(_growing(2)))
    v3 = store.save(session_state([], reason="clear"))
    v4 = store.restore(SID, v1)
    history = store.history(SID)
    assert [v.version for v in history] == [v4, v3, v2, v1]
    assert history[0].reason == f"restored {v1}"
    current = store.load(SID)
    assert current.version == v4
    assert current.state.conversation == _growing(1) and current.state.mode == "plan"
    assert store.load(SID, v3).state.conversation == []  # the version it replaced is still there


def test_restore_of_a_corrupt_version_refuses_and_changes_nothing(tmp_path):
    root = tmp_path / "snapshots"
    v1, v2, _ = _two_versions(root)
    _edit(root, "v:" + v1, b"garbage")
    before = _dump(root)
    store = DiskSnapshotStore(root)
    with pytest.raises(SnapshotCorrupt, match=v1):
        store.restore(SID, v1)
    store.close()
    assert _dump(root) == before


# -- write failures ----------------------------------------------------------------------


def test_a_store_under_a_regular_file_fails_with_a_snapshot_error(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    store = DiskSnapshotStore(tmp_path / "file" / "snapshots")
    with pytest.raises(SnapshotError, match="could not write snapshot"):
        store.save(session_state(_growing(1)))


# -- concurrent writers ------------------------------------------------------------------

WRITER = """
import sys
import time
from pathlib import Path
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.session_state import SessionState
from agents.snapshot_store import DiskSnapshotStore

root, tag, n, max_history, gated = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "gated"
store = DiskSnapshotStore(Path(root), max_history=max_history)
conversation = [Message.user(f"task of writer {tag}")]
print("ready", flush=True)
if not gated:
    sys.stdin.readline()  # start together
for i in range(n):
    if gated and not sys.stdin.readline():
        break
    conversation = conversation + [
        Message.assistant(TextBlock(text=f"{tag} step {i}"), ToolUseBlock(id=f"{tag}{i}", name="Read", input={"path": str(i)})),
        Message.tool_results([ToolResultBlock(tool_use_id=f"{tag}{i}", content=f"{tag}{i}:" + "x" * 300)]),
    ]
    version = store.save(SessionState(session_id="shared", cwd="/ws", model="m", conversation=conversation))
    print(version, flush=True)
    if not gated:
        # A session saves once per turn, not back to back: without a pause one writer can
        # take SQLite's lock again before the other's busy handler wakes, and run alone.
        time.sleep(0.002)
store.close()
"""


def _writer(root: Path, tag: str, n: int, max_history: int, *, gated: bool = False) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), tag, str(n), str(max_history), "gated" if gated else "free"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    return proc


def _step(proc: subprocess.Popen) -> str:
    proc.stdin.write("go\n")
    proc.stdin.flush()
    return proc.stdout.readline().strip()


def _every_version_loads(root: Path, max_history: int) -> list:
    store = DiskSnapshotStore(root, max_history=max_history)
    try:
        history = store.history("shared")
        problems = []
        for info in history:
            try:
                state = store.load("shared", info.version, fall_back=False).state
                assert len(state.conversation) == info.messages
            except SnapshotCorrupt as exc:
                problems.append(str(exc))
        return history, problems
    finally:
        store.close()


def test_two_processes_saving_one_session_never_leave_a_corrupt_version(tmp_path):
    root = tmp_path / "snapshots"
    writers = [_writer(root, tag, 100, 8) for tag in ("a", "b")]
    for w in writers:
        w.stdin.write("go\n")
        w.stdin.flush()
    outputs = [w.communicate(timeout=120) for w in writers]
    assert [w.returncode for w in writers] == [0, 0], [err for _, err in outputs]
    a, b = (out.split() for out, _ in outputs)
    assert len(set(a + b)) == 200
    assert min(a) < max(b) and min(b) < max(a)  # the two writers really overlapped

    history, problems = _every_version_loads(root, 8)
    assert problems == []
    assert len(history) == 9 and {v.version for v in history} <= set(a + b)


def test_a_writer_whose_versions_another_writer_rotated_out_still_writes_intact_versions(tmp_path):
    """Writer A saves; writer B (another process on the same session) saves until A's version
    is rotated out and its messages collected; then A saves again. A must not assume its
    messages are still stored."""
    root = tmp_path / "snapshots"
    a = _writer(root, "a", 2, 1, gated=True)
    b = _writer(root, "b", 3, 1, gated=True)
    try:
        _step(a)
        for _ in range(3):
            _step(b)
        last = _step(a)
    finally:
        for proc in (a, b):
            proc.stdin.close()
            proc.wait(timeout=60)
    assert (a.returncode, b.returncode) == (0, 0), (a.stderr.read(), b.stderr.read())

    history, problems = _every_version_loads(root, 1)
    assert history[0].version == last
    assert problems == []


def test_retired_versions_leave_history_at_once_and_their_data_in_batches(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root, max_history=8)  # retirements are collected 2 at a time
    versions = [store.save(session_state([Message.user(f"conversation {n}")])) for n in range(10)]
    assert [v.version for v in store.history(SID)] == list(reversed(versions[-9:]))
    assert len(_keys(root, "v:")) == 10  # one retired version waits for the next one
    versions.append(store.save(session_state([Message.user("conversation 10")])))
    assert [v.version for v in store.history(SID)] == list(reversed(versions[-9:]))
    store.close()
    assert _keys(root, "v:") == {"v:" + v for v in versions[-9:]}
    assert len(_keys(root, "m:")) == 9


def test_git_head_is_read_from_the_repository_without_running_git(tmp_path):
    import subprocess

    from agents.session_state import git_head

    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x"],
                   cwd=repo, check=True)
    expected = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    assert git_head(repo / "sub") == expected
    subprocess.run(["git", "pack-refs", "--all"], cwd=repo, check=True)
    assert git_head(repo) == expected
    assert git_head(tmp_path) is None
