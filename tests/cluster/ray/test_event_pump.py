"""One event pump per SessionActor (cluster.event_pump): the turns of all its sessions
travel in one stream, and each session still gets exactly its own turn's events, and
its turn's failure as the turn's own stream would have raised it."""

import asyncio

import pytest
from ray.exceptions import RayTaskError

from agents.events import AssistantText, ToolResult
from cluster.session_pool import SessionPool
from tests.support.fakes import read_notes_settings


def _pool(tmp_path) -> SessionPool:
    return SessionPool(read_notes_settings(tmp_path), actors=1)


def _workspace_with_notes(tmp_path, i: int):
    ws = tmp_path / f"ws{i}"
    ws.mkdir()
    (ws / "notes.txt").write_text(f"the notes of session {i}\n")
    return ws


async def test_sessions_of_one_actor_each_get_their_own_turns_events(ray_cluster, tmp_path):
    pool = _pool(tmp_path)
    sinks: list[list] = [[] for _ in range(4)]

    async def one(i: int):
        remote = await pool.open(_workspace_with_notes(tmp_path, i), emit=sinks[i].append)
        outcome = await remote.run_turn("Read the notes.")
        await pool.close(remote)
        return remote.session_id, outcome

    try:
        ran = await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(4))), 240)
    finally:
        pool.shutdown()
    assert all(outcome.reason == "end_turn" and outcome.final_text == "read it" for _, outcome in ran)
    for i, (session_id, _) in enumerate(ran):
        assert {e.session_id for e in sinks[i]} == {session_id}
        results = [e for e in sinks[i] if isinstance(e, ToolResult)]
        assert len(results) == 1 and f"the notes of session {i}" in results[0].content
        assert [e.text for e in sinks[i] if isinstance(e, AssistantText)] == ["reading", "read it"]


async def test_a_turns_failure_is_raised_as_its_cause_and_as_a_ray_task_error(ray_cluster, tmp_path):
    pool = _pool(tmp_path)

    async def turn_after_the_actor_dropped_it():
        remote = await pool.open(_workspace_with_notes(tmp_path, 0))
        await pool.actors[0].close.remote(remote.session_id)
        await remote.run_turn("Read the notes.")

    try:
        with pytest.raises(KeyError, match="is not open on this actor") as raised:
            await asyncio.wait_for(turn_after_the_actor_dropped_it(), 120)
    finally:
        pool.shutdown()
    assert isinstance(raised.value, RayTaskError)
