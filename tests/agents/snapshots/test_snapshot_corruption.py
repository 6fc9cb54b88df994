"""DiskSnapshotStore corruption: a damaged envelope, a missing message or chunk, undecodable
bytes fall back to the newest intact version and overwrite nothing; no intact version and
a restore of a corrupt one are clear errors that change nothing."""

from pathlib import Path

import pytest

from agents.goal import GoalState
from agents.messages import Message
from agents.session._state import SessionState
from agents.snapshots._codec import pack, unpack
from agents.snapshots._store import DiskSnapshotStore, SnapshotCorrupt
from tests.support.fakes import session_state
from tests.support.snapshot_support import (
    SID,
    dump_session,
    edit_key,
    flip_last_byte,
    growing_conversation,
)


def _messages_of(root: Path, version: str) -> list[str]:
    """The message digests a version refers to, read from its envelope and chunks."""
    data = dump_session(root)
    body = unpack(unpack(data["v:" + version])["body"])
    digests = []
    for key in body["chunks"]:
        chunk = data["c:" + key]
        digests += [chunk[i : i + 32].hex() for i in range(0, len(chunk), 32)]
    return digests


# -- corruption: fall back to the newest intact version, overwrite nothing -------------------


def _schema(number: int):
    def rewrite(raw: bytes) -> bytes:
        envelope = unpack(raw)
        envelope["schema"] = number
        return pack(envelope)

    return rewrite


ENVELOPE_DAMAGE = {
    "flipped byte": (flip_last_byte, "fails its checksum"),
    "truncated": (lambda raw: raw[: len(raw) // 2], "cannot be decoded"),
    "no known schema": (_schema(0), "has no known schema (0)"),
    "garbage": (lambda raw: b"\xc1\xff garbage, not msgpack \x00\x01", "cannot be decoded"),
    "wrong type": (lambda raw: pack([1, 2, 3]), "cannot be decoded"),
}


def _two_versions(root: Path) -> tuple[str, str, SessionState]:
    """v1 intact (3 messages), v2 current (5 messages, two of them only in v2)."""
    store = DiskSnapshotStore(root)
    intact = session_state(growing_conversation(1), mode="plan", goal=GoalState(condition="tests pass", since_index=0))
    v1 = store.save(intact)
    v2 = store.save(session_state(growing_conversation(2)))
    store.close()
    return v1, v2, intact


@pytest.mark.parametrize("damage", list(ENVELOPE_DAMAGE))
def test_a_damaged_current_envelope_falls_back_to_the_newest_intact_version(tmp_path, damage):
    root = tmp_path / "snapshots"
    v1, v2, intact = _two_versions(root)
    corrupt, expected = ENVELOPE_DAMAGE[damage]
    edit_key(root, "v:" + v2, corrupt(dump_session(root)["v:" + v2]))
    before = dump_session(root)

    store = DiskSnapshotStore(root)
    loaded = store.load(SID)
    assert loaded.version == v1 and loaded.state == intact
    assert expected in loaded.problem and v2 in loaded.problem
    assert f"using the newest intact version {v1} instead" in loaded.problem
    assert [v.reason for v in store.history(SID)] == ["(corrupt)", "turn"]
    store.close()
    assert dump_session(root) == before


@pytest.mark.parametrize("what", ["message", "chunk"])
def test_a_missing_message_or_index_chunk_falls_back_and_names_it(tmp_path, what):
    root = tmp_path / "snapshots"
    v1, v2, intact = _two_versions(root)
    if what == "message":
        only_in_v2 = set(_messages_of(root, v2)) - set(_messages_of(root, v1))
        edit_key(root, "m:" + sorted(only_in_v2)[0], None)
    else:
        chunk = unpack(unpack(dump_session(root)["v:" + v2])["body"])["chunks"][0]
        edit_key(root, "c:" + chunk, None)
    before = dump_session(root)

    store = DiskSnapshotStore(root)
    loaded = store.load(SID)
    store.close()
    assert loaded.version == v1 and loaded.state == intact
    assert f"snapshot version {v2}: {'message' if what == 'message' else 'index chunk'}" in loaded.problem
    assert "is missing or damaged" in loaded.problem
    assert dump_session(root) == before


def test_a_message_with_undecodable_bytes_is_detected_by_its_digest(tmp_path):
    root = tmp_path / "snapshots"
    v1, v2, intact = _two_versions(root)
    only_in_v2 = sorted(set(_messages_of(root, v2)) - set(_messages_of(root, v1)))[0]
    edit_key(root, "m:" + only_in_v2, b"\xc1\xc1\xc1 undecodable")
    store = DiskSnapshotStore(root)
    loaded = store.load(SID)
    store.close()
    assert loaded.version == v1 and f"message {only_in_v2[:12]} is missing or damaged" in loaded.problem


def test_fallback_skips_several_corrupt_versions_to_the_newest_intact_one(tmp_path):
    root = tmp_path / "snapshots"
    store = DiskSnapshotStore(root)
    versions = [store.save(session_state(growing_conversation(n))) for n in range(1, 5)]
    store.close()
    for v in versions[2:]:
        edit_key(root, "v:" + v, b"garbage")
    store = DiskSnapshotStore(root)
    loaded = store.load(SID)
    store.close()
    assert loaded.version == versions[1] and loaded.state.conversation == growing_conversation(2)
    assert versions[3] in loaded.problem


def test_no_intact_version_is_a_clear_error_and_nothing_is_changed(tmp_path):
    root = tmp_path / "snapshots"
    v1, v2, _ = _two_versions(root)
    for v in (v1, v2):
        edit_key(root, "v:" + v, _schema(0)(dump_session(root)["v:" + v]))
    before = dump_session(root)
    store = DiskSnapshotStore(root)
    with pytest.raises(SnapshotCorrupt, match=f"{v2} has no known schema.*no intact older version exists"):
        store.load(SID)
    store.close()
    assert dump_session(root) == before


def test_asking_for_a_corrupt_version_without_fallback_raises(tmp_path):
    root = tmp_path / "snapshots"
    _, v2, _ = _two_versions(root)
    edit_key(root, "v:" + v2, b"garbage")
    store = DiskSnapshotStore(root)
    with pytest.raises(SnapshotCorrupt, match=f"snapshot version {v2} cannot be decoded") as caught:
        store.load(SID, fall_back=False)
    store.close()
    assert caught.value.version == v2


def test_saving_after_a_fallback_keeps_the_corrupt_version_untouched_in_history(tmp_path):
    root = tmp_path / "snapshots"
    v1, v2, intact = _two_versions(root)
    damaged = flip_last_byte(dump_session(root)["v:" + v2])
    edit_key(root, "v:" + v2, damaged)
    store = DiskSnapshotStore(root)
    loaded = store.load(SID)
    v3 = store.save(
        loaded.state.model_copy(update={"conversation": [*loaded.state.conversation, Message.user("go on")]})
    )
    history = store.history(SID)
    store.close()
    assert [v.version for v in history] == [v3, v2, v1]
    assert dump_session(root)["v:" + v2] == damaged


def test_restore_of_a_corrupt_version_refuses_and_changes_nothing(tmp_path):
    root = tmp_path / "snapshots"
    v1, v2, _ = _two_versions(root)
    edit_key(root, "v:" + v1, b"garbage")
    before = dump_session(root)
    store = DiskSnapshotStore(root)
    with pytest.raises(SnapshotCorrupt, match=v1):
        store.restore(SID, v1)
    store.close()
    assert dump_session(root) == before
