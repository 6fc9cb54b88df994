"""`--trace-dir` shows the subagent tree: each child's calls in a directory under its parent's."""

import json
import shutil
from pathlib import Path

from agents.opening._assembly import build_session
from agents.opening._lifecycle import OpenSpec
from agents.settings._config import WorkingsetSettings
from cluster.ray_run import open_remote_session
from tests.support import ROOT

DEMO = ROOT / "benchmarks" / "demo"


def _demo(tmp_path: Path) -> tuple[WorkingsetSettings, Path]:
    ws = tmp_path / "ws"
    shutil.copytree(DEMO / "workspace", ws)
    settings = WorkingsetSettings(
        model=f"scripted:{DEMO / 'research.yaml'}",
        home=tmp_path / "home",
        permissions={"mode": "bypass"},
        trace_dir=tmp_path / "trace",
    )
    return settings, ws


def _tree_on_disk(trace: Path) -> dict[str, tuple[tuple[str, ...], int]]:
    """Each child's description -> (the session ids its directory lies under, its call files)."""
    found = {}
    for about in trace.rglob("subagent.json"):
        record = json.loads(about.read_text())
        directory = about.parent.relative_to(trace)
        assert directory.name == record["session_id"]
        assert (about.parent / f"{record['session_id']}-call-0001.json").is_file()
        found[record["description"]] = (directory.parts, len(list(about.parent.glob("*-call-*.json"))))
    return found


def _expected_shape(tree: dict[str, tuple[tuple[str, ...], int]]) -> None:
    assert set(tree) == {"find the greeting", "read the test", "survey files", "count files"}
    assert all(calls == 2 for _, calls in tree.values())
    assert [len(parts) for parts, _ in tree.values()].count(1) == 3  # the root's children, side by side
    survey, _ = tree["survey files"]
    count, _ = tree["count files"]
    assert count[:-1] == survey  # the grandchild's directory is inside its parent's


async def test_each_childs_trace_is_written_under_its_parents(tmp_path):
    settings, ws = _demo(tmp_path)
    session = build_session(settings, ws)
    await session.run_turn("Map this repository.")

    trace = tmp_path / "trace"
    assert (trace / f"{session.session_id}-call-0001.json").is_file()
    _expected_shape(_tree_on_disk(trace))


async def test_children_in_subagent_actors_write_their_traces_into_the_same_tree(ray_cluster, tmp_path):
    settings, ws = _demo(tmp_path)
    remote = await open_remote_session(OpenSpec(settings, ws), emit=lambda e: None, approver=None)
    try:
        await remote.run_turn("Map this repository.")
    finally:
        await remote.aclose()

    assert (tmp_path / "trace" / f"{remote.session_id}-call-0001.json").is_file()
    _expected_shape(_tree_on_disk(tmp_path / "trace"))
