"""Saves inside a turn are journal entries on the last version: one added row each, loaded
back whole, stopped at a damaged entry, continued by a resumed process, and collected
with their version; anything that is not an append at the end is a version again."""

from pathlib import Path

from agents.snapshots._file import StoreReader
from agents.snapshots._journal import JOURNAL_LIMIT, journal_key
from agents.snapshots._store import DiskSnapshotStore
from tests.support.fakes import session_state
from tests.support.snapshot_support import (
    SID,
    dump_session,
    edit_key,
    flip_last_byte,
    growing_conversation,
)

IN_TURN = "tool_batch"


def _turn(root: Path, entries: int, store: DiskSnapshotStore | None = None):
    """A version (3 messages), then `entries` saves inside the turn, each two messages more."""
    store = store or DiskSnapshotStore(root)
    conversation = growing_conversation(1 + entries)
    version = store.save(session_state(conversation[:3], reason="end_turn"))
    names = [store.save(session_state(conversation[: 3 + 2 * (n + 1)], reason=IN_TURN)) for n in range(entries)]
    return store, version, names, conversation


def test_a_save_inside_a_turn_is_a_journal_entry_that_loads_back_whole(tmp_path):
    store, version, names, conversation = _turn(tmp_path, 2)
    loaded = store.load(SID)
    assert names == [f"{version}.0000", f"{version}.0001"]
    assert loaded.version == names[-1] and loaded.state.conversation == conversation
    assert loaded.state.reason == IN_TURN and loaded.problem is None
    assert [v.version for v in store.history(SID)] == [version]  # entries are not versions


def test_an_entry_named_loads_its_version_with_the_entries_up_to_it(tmp_path):
    store, version, names, conversation = _turn(tmp_path, 2)
    assert store.load(SID, names[0]).state.conversation == conversation[:5]
    assert store.load(SID, version).state.conversation == conversation[:3]


def test_a_damaged_entry_stops_the_load_at_the_entry_before_it_and_says_so(tmp_path):
    store, version, names, conversation = _turn(tmp_path, 3)
    store.close()
    key = journal_key(version, 1)
    edit_key(tmp_path, key, flip_last_byte(dump_session(tmp_path)[key]))
    loaded = DiskSnapshotStore(tmp_path).load(SID)
    assert loaded.version == names[0] and loaded.state.conversation == conversation[:5]
    assert f"snapshot version {names[1]} fails its checksum" in (loaded.problem or "")


def test_a_conversation_rewritten_inside_a_turn_is_saved_as_a_version(tmp_path):
    store, version, _, conversation = _turn(tmp_path, 1)
    compacted = [conversation[0], *conversation[3:]]
    saved = store.save(session_state(compacted, reason=IN_TURN))
    assert "." not in saved and saved > version
    assert store.load(SID).state.conversation == compacted


def test_after_the_journal_limit_the_next_save_inside_a_turn_is_a_version(tmp_path):
    store, version, names, conversation = _turn(tmp_path, JOURNAL_LIMIT)
    assert names[-1] == f"{version}.{JOURNAL_LIMIT - 1:04d}"
    saved = store.save(session_state([*conversation, *growing_conversation(1)[1:]], reason=IN_TURN))
    assert "." not in saved and store.load(SID).version == saved


def test_a_resumed_process_goes_on_with_the_journal_where_it_stopped(tmp_path):
    first, version, _, conversation = _turn(tmp_path, 1)
    first.close()
    resumed = DiskSnapshotStore(tmp_path)
    state = resumed.load(SID).state
    more = growing_conversation(3)[5:]
    name = resumed.save(state.model_copy(update={"conversation": [*state.conversation, *more]}))
    assert name == f"{version}.0001"
    assert DiskSnapshotStore(tmp_path).load(SID).state.conversation == [*conversation, *more]


def test_a_save_by_another_process_between_entries_makes_the_next_save_a_version(tmp_path):
    ours, version, _, conversation = _turn(tmp_path, 1)
    theirs = DiskSnapshotStore(tmp_path)
    other = theirs.save(session_state(growing_conversation(4), reason="end_turn"))
    longer = [*conversation, *growing_conversation(2)[3:]]
    saved = ours.save(session_state(longer, reason=IN_TURN))
    assert "." not in saved and saved > other
    assert DiskSnapshotStore(tmp_path).load(SID).state.conversation == longer


def test_collecting_a_version_deletes_its_journal_entries(tmp_path):
    store = DiskSnapshotStore(tmp_path, max_history=1)
    store, version, _, conversation = _turn(tmp_path, 2, store)
    for n in range(3):  # the version leaves the history, and is collected
        store.save(session_state(conversation + growing_conversation(n + 1)[1:], reason="end_turn"))
    store.close()
    with StoreReader(SID, tmp_path / SID) as reader:
        assert reader.values([journal_key(version, n) for n in range(2)]) == {}
        assert reader.value("v:" + version) is None
