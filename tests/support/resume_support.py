"""What the resume tests share: a workspace, the scripted model's script, a session built with
its events, the snapshot store under the test's home, and a damaged current version."""

import json
from pathlib import Path

import diskcache

from agents.opening._assembly import build_session
from agents.snapshots._codec import unpack
from agents.snapshots._store import DiskSnapshotStore


def make_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ws.resolve()


def write_script(tmp_path: Path, turns: list[dict], *, final: str = "Done.", judge: list[dict] | None = None) -> Path:
    """(Re)write the one script file; a resumed session replays it from its start."""
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": turns, "final_text": final, "judge": judge or []}))
    return path


def built_session(settings, ws: Path, **kwargs):
    events: list = []
    session = build_session(settings, ws, emit=events.append, **kwargs)
    return session, events


def snapshot_store(tmp_path: Path) -> DiskSnapshotStore:
    return DiskSnapshotStore(tmp_path / "home" / "snapshots")


def write_call(path: str = "out.txt", content: str = "written after approval") -> dict:
    return {"name": "Write", "input": {"path": path, "content": content}}


def corrupt_current(tmp_path: Path, session_id: str) -> tuple[str, bytes]:
    with diskcache.Cache(str(tmp_path / "home" / "snapshots" / session_id)) as cache:
        current = unpack(cache.get("session"))["current"]
        damaged = cache.get("v:" + current)[:-10]  # truncated
        cache.set("v:" + current, damaged)
    return current, damaged
