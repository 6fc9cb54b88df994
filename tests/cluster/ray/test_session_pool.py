"""SessionPool on a real Ray cluster: its set-up pays a batch's one-time costs before the
first session opens, and starts no process a batch may never use."""

import asyncio
import json
import time
from pathlib import Path

import ray

from agents.settings._config import WorkingsetSettings
from cluster.session_pool import SessionPool
from tests.support.builders import approve_all


def _pool(tmp_path: Path, **fields) -> SessionPool:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [], "final_text": "Done."}))
    return SessionPool(WorkingsetSettings(model=f"scripted:{script}", home=tmp_path / "home", **fields), actors=1)


def _subagent_actors(pool: SessionPool, *, wait_for: int = 0, timeout_s: float = 30.0) -> int:
    """The first actor's SubagentActors, once there are `wait_for` of them (or the time is up)."""
    deadline = time.monotonic() + timeout_s
    while True:
        count = ray.get(pool.actors[0].subagent_actors.remote())
        if count >= wait_for or time.monotonic() > deadline:
            return count
        time.sleep(0.2)


def _open_and_count(pool: SessionPool, workspace: Path, *, interactive: bool, wait_for: int) -> int:
    async def scenario() -> None:
        await pool.ready()
        await pool.open(workspace, approver=approve_all if interactive else None)

    asyncio.run(scenario())
    return _subagent_actors(pool, wait_for=wait_for)


def test_a_batch_session_starts_no_subagent_actor_before_it_fans_out(ray_cluster, tmp_path):
    pool = _pool(tmp_path)
    try:
        assert _open_and_count(pool, tmp_path, interactive=False, wait_for=0) == 0
        time.sleep(1.0)  # nothing started in the background either
        assert _subagent_actors(pool) == 0
    finally:
        pool.shutdown()


def test_an_interactive_session_starts_its_first_subagent_actor_when_it_opens(ray_cluster, tmp_path):
    pool = _pool(tmp_path)
    try:
        assert _open_and_count(pool, tmp_path, interactive=True, wait_for=1) == 1
    finally:
        pool.shutdown()


def test_an_interactive_session_without_the_agent_tool_starts_no_subagent_actor(ray_cluster, tmp_path):
    pool = _pool(tmp_path, bundle=["Read", "Bash"])
    try:
        assert _open_and_count(pool, tmp_path, interactive=True, wait_for=0) == 0
        time.sleep(1.0)
        assert _subagent_actors(pool) == 0
    finally:
        pool.shutdown()
