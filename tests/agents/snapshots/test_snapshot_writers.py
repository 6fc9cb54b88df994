"""DiskSnapshotStore with concurrent writers: two processes saving one session never leave a
corrupt version, and retired versions leave history at once."""

import subprocess
import sys
from pathlib import Path

from agents.messages import Message
from agents.snapshots._store import DiskSnapshotStore, SnapshotCorrupt
from tests.support import ROOT
from tests.support.fakes import session_state
from tests.support.snapshot_support import SID, session_keys

# -- concurrent writers ------------------------------------------------------------------

WRITER = """
import sys
import time
from pathlib import Path
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.session._state import SessionState
from agents.snapshots._store import DiskSnapshotStore

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
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
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
    assert len(session_keys(root, "v:")) == 10  # one retired version waits for the next one
    versions.append(store.save(session_state([Message.user("conversation 10")])))
    assert [v.version for v in store.history(SID)] == list(reversed(versions[-9:]))
    store.close()
    assert session_keys(root, "v:") == {"v:" + v for v in versions[-9:]}
    assert len(session_keys(root, "m:")) == 9
