"""SessionPool on a real Ray cluster: its set-up pays a batch's one-time costs before
the first session opens."""

import asyncio
import json
from pathlib import Path

import ray

from agents.config import WorkingsetSettings
from cluster.session_pool import SessionPool


def _subagent_actors_after_ready(tmp_path: Path, **fields) -> int:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [], "final_text": "Done."}))
    pool = SessionPool(WorkingsetSettings(model=f"scripted:{script}", home=tmp_path / "home", **fields), actors=1)
    try:
        asyncio.run(pool.ready())
        return ray.get(pool.actors[0].subagent_actors.remote())
    finally:
        pool.shutdown()


def test_ready_starts_the_subagent_actor_a_first_fan_out_would_wait_for(ray_cluster, tmp_path):
    assert _subagent_actors_after_ready(tmp_path) == 1


def test_ready_starts_no_subagent_actor_when_the_bundle_leaves_out_the_agent_tool(ray_cluster, tmp_path):
    assert _subagent_actors_after_ready(tmp_path, bundle=["Read", "Bash"]) == 0
