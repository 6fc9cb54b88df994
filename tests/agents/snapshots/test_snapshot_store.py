"""DiskSnapshotStore: exact round trip, rotation and bounds, content addressing, restore of
an old version, write failures. Corruption fallback is in test_snapshot_corruption.py,
snapshots of the older schema in test_snapshot_schema.py, concurrent writers in
test_snapshot_writers.py."""

import subprocess
from pathlib import Path

import pytest

import agents.snapshots._file as snapshot_file
import agents.snapshots._store as snapshot_store_module
from agents.goal import GoalState
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.ports import Usage
from agents.session._state import PendingState, PermissionState, SessionState
from agents.snapshots._codec import encode_messages
from agents.snapshots._store import DiskSnapshotStore, SnapshotError, SnapshotNotFound
from tests.support.fakes import session_state
from tests.support.snapshot_support import SID, growing_conversation, session_keys


def _every_block_conversation() -> list[Message]:
    return [
        Message.user('Fix the bug — ünïcödé, emoji 🚀, and a NUL-free "quote"'),
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
    conversation = [
        *_every_block_conversation(),
        Message.assistant(ToolUseBlock(id="toolu_c", name="Edit", input={"path": "a.py"})),
    ]
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


def test_a_new_store_file_opened_without_diskcaches_constructor_holds_what_the_constructor_writes(tmp_path):
    directory = tmp_path / "snapshots" / SID
    placed = snapshot_file.open_for_write(SID, directory)
    try:
        assert isinstance(placed, snapshot_file._PlacedStore)
        placed.set("k", b"v")
        fast = {name: getattr(placed, name) for name in placed._placed_settings if name not in ("count", "size")}
    finally:
        placed.close()
    full = snapshot_file.diskcache.Cache(str(directory), **snapshot_file._WRITE_SETTINGS)
    try:
        assert full.get("k") == b"v"
        assert {name: getattr(full, name) for name in fast} == fast
        assert full.disk.min_file_size == snapshot_file._WRITE_SETTINGS["disk_min_file_size"]
    finally:
        full.close()


def test_a_new_store_file_without_the_write_settings_is_opened_by_diskcaches_constructor(tmp_path, monkeypatch):
    made = tmp_path / "made"
    snapshot_file.diskcache.Cache(str(made)).close()  # diskcache's defaults: values over 32 KiB in files
    monkeypatch.setattr(snapshot_file, "_empty_store", (made / "cache.db").read_bytes())
    cache = snapshot_file.open_for_write(SID, tmp_path / "snapshots" / SID)
    try:
        assert not isinstance(cache, snapshot_file._PlacedStore)
        assert cache.disk.min_file_size == snapshot_file._WRITE_SETTINGS["disk_min_file_size"]
    finally:
        cache.close()


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
    first = store.save(session_state(growing_conversation(1)))
    second = store.save(session_state(growing_conversation(2)))
    history = store.history(SID)
    assert [(v.version, v.current) for v in history] == [(second, True), (first, False)]
    assert [v.messages for v in history] == [5, 3]
    assert store.load(SID).state.conversation == growing_conversation(2)
    assert store.load(SID, first).state.conversation == growing_conversation(1)


def test_history_is_bounded_by_count_and_dropped_versions_are_deleted(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root, max_history=3)
    versions = [store.save(session_state([Message.user(f"conversation {n}")])) for n in range(6)]
    assert [v.version for v in store.history(SID)] == list(reversed(versions[-4:]))
    store.close()
    assert session_keys(root, "v:") == {"v:" + v for v in versions[-4:]}
    # messages only the dropped versions referred to are collected too
    assert len(session_keys(root, "m:")) == 4


def test_max_history_zero_keeps_only_the_current_version(tmp_path):
    store = DiskSnapshotStore(tmp_path / "snapshots", max_history=0)
    store.save(session_state(growing_conversation(1)))
    last = store.save(session_state(growing_conversation(2)))
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
        store.save(session_state(growing_conversation(pairs)))
    assert store.load(SID).state.conversation == growing_conversation(5)
    assert store.load(SID, store.history(SID)[1].version).state.conversation == growing_conversation(4)
    store.close()
    assert len(session_keys(root, "m:")) == len(growing_conversation(5))


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
    store.save(session_state(growing_conversation(100)))  # 201 messages: 4 chunks of the index
    store.close()
    messages_before, chunks_before = session_keys(root, "m:"), session_keys(root, "c:")
    assert (len(messages_before), len(chunks_before)) == (201, 4)

    store = DiskSnapshotStore(root)
    store.save(session_state(growing_conversation(101)))
    store.close()
    messages_after, chunks_after = session_keys(root, "m:"), session_keys(root, "c:")
    assert messages_after > messages_before and len(messages_after - messages_before) == 2
    assert chunks_after > chunks_before and len(chunks_after - chunks_before) == 1  # only the last chunk changed


def test_identical_messages_are_stored_once(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root)
    store.save(session_state([Message.user("ok"), Message.assistant(TextBlock(text="ok")), Message.user("ok")]))
    store.close()
    assert len(session_keys(root, "m:")) == 2


def test_saving_the_same_state_twice_adds_a_version_but_no_messages(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root)
    state = session_state(growing_conversation(10))
    store.save(state)
    store.save(state)
    store.close()
    assert (
        len(session_keys(root, "v:")) == 2
        and len(session_keys(root, "m:")) == 21
        and len(session_keys(root, "c:")) == 1
    )


# -- restore an old version --------------------------------------------------------------


def test_restore_makes_an_old_version_current_and_keeps_the_rest_in_history(store):
    v1 = store.save(session_state(growing_conversation(1), mode="plan"))
    v2 = store.save(session_state(growing_conversation(2)))
    v3 = store.save(session_state([], reason="clear"))
    v4 = store.restore(SID, v1)
    history = store.history(SID)
    assert [v.version for v in history] == [v4, v3, v2, v1]
    assert history[0].reason == f"restored {v1}"
    current = store.load(SID)
    assert current.version == v4
    assert current.state.conversation == growing_conversation(1) and current.state.mode == "plan"
    assert store.load(SID, v3).state.conversation == []  # the version it replaced is still there


# -- write failures ----------------------------------------------------------------------


def test_a_store_under_a_regular_file_fails_with_a_snapshot_error(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    store = DiskSnapshotStore(tmp_path / "file" / "snapshots")
    with pytest.raises(SnapshotError, match="could not write snapshot"):
        store.save(session_state(growing_conversation(1)))


def test_git_head_is_read_from_the_repository_without_running_git(tmp_path):

    from agents.session._state import git_head

    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x"],
        cwd=repo,
        check=True,
    )
    expected = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    assert git_head(repo / "sub") == expected
    subprocess.run(["git", "pack-refs", "--all"], cwd=repo, check=True)
    assert git_head(repo) == expected
    assert git_head(tmp_path) is None
