"""DiskSnapshotStore and the compaction markers: typed markers round trip, text that only
reads like one stays text, and a schema-1 snapshot (text markers) loads typed and is saved
again under the current schema."""

import hashlib
from pathlib import Path

import diskcache

from agents.messages import (
    Bridge,
    ClearedBody,
    ClippedBody,
    DroppedSpan,
    ElidedBody,
    Message,
    SummaryBoundary,
    ToolResultBlock,
)
from agents.session._state import SCHEMA_VERSION
from agents.snapshots._codec import encode_messages, pack, unpack
from agents.snapshots._store import DiskSnapshotStore
from tests.support.fakes import compacted_conversation, session_state, tool_interaction
from tests.support.snapshot_support import SID, dump_session, growing_conversation

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
    conversation = [*growing_conversation(0), *tool_interaction(0)]
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
    {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": "[Conversation compacted] 6 earlier messages were replaced by the summary below. "
                "Tool outputs they held can still be read with Recall.",
            },
            {"type": "text", "text": "## Objective\nFix the build."},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Understood. I will continue from this summary and the messages that follow."}
        ],
    },
    {"role": "user", "content": [{"type": "text", "text": "Go on."}]},
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "Understood. I will continue from the messages that follow."}],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": "[Context trimmed] 2 earlier messages were dropped here by the "
                "'window' compaction strategy. Tool outputs they held are kept in the record; "
                "Recall(id=...) returns one when you know its id.",
            }
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "make"}},
            {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": "make test"}},
            {"type": "tool_use", "id": "toolu_3", "name": "Bash", "input": {"command": "make lint"}},
            {"type": "tool_use", "id": "toolu_4", "name": "Read", "input": {"path": "notes.txt"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": '[cleared 360 chars of tool output; Recall(id="toolu_1") returns it]',
                "is_error": False,
            },
            {
                "type": "tool_result",
                "tool_use_id": "toolu_2",
                "content": '[observation elided: 640 chars; Recall(id="toolu_2")]',
                "is_error": True,
            },
            {"type": "tool_result", "tool_use_id": "toolu_3", "content": _CLIPPED_BODY, "is_error": False},
            # A file that quotes another call's cleared note: not this block's marker.
            {
                "type": "tool_result",
                "tool_use_id": "toolu_4",
                "content": '[cleared 360 chars of tool output; Recall(id="toolu_1") returns it]',
                "is_error": False,
            },
        ],
    },
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
        cache.set(
            "session",
            {
                "current": version,
                "history": [],
                "retired": [],
                "cwd": head["cwd"],
                "model": head["model"],
                "saved_at": head["saved_at"],
                "messages": len(conversation),
                "last_text": "",
            },
        )


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
        [
            ClearedBody(original_chars=360),
            ElidedBody(original_chars=640),
            ClippedBody(removed_chars=500, offset=4),
            None,
        ],
        [None],
    ]


def test_a_schema_1_snapshot_is_saved_again_under_the_current_schema(tmp_path):
    root = tmp_path / "snapshots"
    _write_schema_1_snapshot(root, SCHEMA_1_CONVERSATION)
    store = DiskSnapshotStore(root)
    loaded = store.load(SID).state
    store.save(loaded)
    again = DiskSnapshotStore(root).load(SID).state
    assert again == loaded and unpack(dump_session(root)["v:" + store.load(SID).version])["schema"] == SCHEMA_VERSION
    store.close()


def test_a_schema_1_parked_result_that_was_clipped_is_typed(tmp_path):
    root = tmp_path / "snapshots"
    clipped = {"tool_use_id": "toolu_3", "content": _CLIPPED_BODY, "is_error": False}
    pending = {"order": ["toolu_3"], "results": [clipped], "allowed": [], "asks": [], "reasons": {}}
    _write_schema_1_snapshot(root, SCHEMA_1_CONVERSATION[:6], pending=pending)
    loaded = DiskSnapshotStore(root).load(SID).state
    assert loaded.pending.results[0].marker == ClippedBody(removed_chars=500, offset=4)
