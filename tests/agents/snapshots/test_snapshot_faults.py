"""The snapshot store under real faults, in real processes: kill -9 at random moments of
saves of 200 KB messages (each writer a resumed process), and a full disk — a small
private tmpfs in a mount namespace — during a save and at resume."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.snapshot_faults import SID, run_trials
from tests.support import ROOT

# -- kill -9 -----------------------------------------------------------------------------------


def test_kill_9_during_saves_of_large_messages_loses_no_version(tmp_path):
    trials = run_trials(tmp_path / "snapshots", 4, body_kb=200, max_history=1000, window=0.4, seed=7)
    assert sum(len(t.reported) for t in trials) > 0
    assert [t.session_lost for t in trials] == [""] * 4
    assert [t.lost for t in trials] == [[]] * 4


def test_kill_9_while_old_versions_are_collected_leaves_every_kept_version_intact(tmp_path):
    # max_history 2: a collection runs every save, so kills land inside collections too.
    trials = run_trials(tmp_path / "snapshots", 4, body_kb=200, max_history=2, window=0.4, seed=11)
    assert [t.session_lost for t in trials] == [""] * 4
    assert [t.lost for t in trials] == [[]] * 4


# -- a full disk ------------------------------------------------------------------------------

STEPS = r"""
import json, os, sys
from pathlib import Path
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.session._state import SessionState
from agents.snapshots._store import DiskSnapshotStore, SnapshotError

mount, step = Path(sys.argv[1]), sys.argv[2]
store = DiskSnapshotStore(mount / "snapshots")
SID = sys.argv[3]

def interaction(n, size):
    use = ToolUseBlock(id=f"toolu_{n}", name="Read", input={"path": f"f{n}"})
    return [Message.assistant(TextBlock(text=f"step {n}"), use),
            Message.tool_results([ToolResultBlock(tool_use_id=use.id, content=os.urandom(size // 2).hex())])]

def report(**fields):
    print(json.dumps({"step": step, **fields}), flush=True)

if step == "seed":
    state = SessionState(session_id=SID, cwd="/ws", model="m", conversation=[Message.user("go"), *interaction(0, 1000)])
    first = store.save(state)
    second = store.save(state.model_copy(update={"conversation": [*state.conversation, *interaction(1, 1000)]}))
    report(versions=[first, second])
elif step == "fill":
    leave = int(sys.argv[4]) * 1024
    fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT)
    for size in (1 << 16, 4096, 512, 1):
        try:
            while os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize > leave + size:
                os.write(fd, b"\0" * size)
        except OSError:
            pass
    os.close(fd)
    report(free=os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize)
elif step == "free":
    os.remove(mount / "filler")
    report()
elif step == "save":  # a resumed process: load, add a 200 KB result, save
    loaded = store.load(SID)
    state = loaded.state
    try:
        n = len(state.conversation)
        version = store.save(state.model_copy(update={"conversation": [*state.conversation, *interaction(n, 200_000)]}))
        report(saved=version, loaded=loaded.version)
    except SnapshotError as exc:
        report(error=type(exc).__name__, message=str(exc), loaded=loaded.version)
elif step == "load":
    loaded = store.load(SID, fall_back=False)
    report(version=loaded.version, messages=len(loaded.state.conversation),
           history=[v.version for v in store.history(SID)])
store.close()
"""


def _in_a_small_tmpfs(tmp_path: Path, steps: list[list[str]], size: str = "4m") -> list[dict]:
    """Run each step as its own process inside one private mount namespace whose
    `mount` directory is a tmpfs of `size`; returns each step's report."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) to mount a private tmpfs")
    mount = tmp_path / "disk"
    mount.mkdir()
    script = tmp_path / "steps.py"
    script.write_text(STEPS)
    runs = " && ".join(f"{sys.executable} {script} {mount} {' '.join(step)}" for step in steps)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size={size} tmpfs {mount} && {runs}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_a_save_that_runs_out_of_disk_fails_naming_the_disk_and_the_earlier_snapshot_loads(tmp_path):
    seed, _, failed, after, _, again, final = _in_a_small_tmpfs(
        tmp_path,
        [
            ["seed", SID],
            ["fill", SID, "100"],
            ["save", SID],
            ["load", SID],
            ["free", SID],
            ["save", SID],
            ["load", SID],
        ],
    )
    first, second = seed["versions"]
    assert failed["error"] == "StoreDiskFull" and failed["loaded"] == second
    assert f"no space left on the disk holding {tmp_path / 'disk' / 'snapshots' / SID}" in failed["message"]
    assert f"tmpfs mounted at {tmp_path / 'disk'}" in failed["message"]
    assert "the previous snapshot is intact" in failed["message"]
    assert (after["version"], after["messages"], after["history"]) == (second, 5, [second, first])
    # once there is room again, the session saves as before
    assert final["version"] == again["saved"] and final["messages"] == 7
    assert final["history"] == [again["saved"], second, first]


def test_a_session_resumed_on_a_full_disk_loads_and_its_failed_save_keeps_the_snapshot(tmp_path):
    seed, fill, failed, after = _in_a_small_tmpfs(
        tmp_path, [["seed", SID], ["fill", SID, "0"], ["save", SID], ["load", SID]]
    )
    assert fill["free"] == 0
    assert failed["loaded"] == seed["versions"][1]  # reading needed no room
    assert failed["error"] == "StoreDiskFull" and "tmpfs mounted at" in failed["message"]
    assert after["version"] == seed["versions"][1] and after["messages"] == 5
