"""Opening a session on a SessionActor that is restarting (the session-scoped two-node
`ray_cluster`): the open waits for the restart and goes on; past the bound it is one
clear error naming the actor and what to do."""

import asyncio
import time

import pytest
import ray
from ray._private import state as gcs_state

from cluster.actor_link import ActorLink
from cluster.connection._runtime import ClusterError
from cluster.remote_session import RemoteSession
from cluster.session_actor import SessionSpec
from cluster.session_pool import SessionPool
from tests.support.builders import scripted_settings
from tests.support.eval_support import script


def _actor_table_row(actor) -> dict:
    """The actor's row in the GCS actor table (what Ray's state API reads)."""
    return gcs_state.actors(actor._actor_id.hex())


async def _kill_and_see_it_restarting(actor) -> None:
    ray.kill(actor, no_restart=False)
    deadline = time.monotonic() + 30
    while _actor_table_row(actor)["State"] == "ALIVE":
        assert time.monotonic() < deadline, "the killed actor never left ALIVE"
        await asyncio.sleep(0.05)
    assert _actor_table_row(actor)["State"] == "RESTARTING"


@pytest.fixture
async def pool(ray_cluster, tmp_path):
    pool = SessionPool(
        scripted_settings(tmp_path, script(tmp_path, "script", [{"text": "Opened after the restart."}])), actors=1
    )
    await pool.ready()
    yield pool
    pool.shutdown()


async def test_an_open_waits_for_its_restarting_session_actor_and_succeeds(pool, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    actor = pool.actors[0]
    await _kill_and_see_it_restarting(actor)  # a call now fails at once with ActorUnavailableError

    remote = await pool.open(workspace)

    assert _actor_table_row(actor)["NumRestarts"] == 1
    assert remote.session_id in await actor.sessions.remote()  # opened on the restarted actor
    outcome = await remote.run_turn("hello")
    assert (outcome.reason, outcome.final_text) == ("end_turn", "Opened after the restart.")


async def test_an_actor_not_back_within_the_bound_is_one_clear_error_naming_it(pool, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    actor = pool.actors[0]
    spec = SessionSpec(settings=pool.settings.model_dump(mode="json"), workspace=str(workspace))
    remote = RemoteSession(ActorLink(actor), spec, emit=lambda e: None, approver=None, restart_timeout_s=0.01)
    await _kill_and_see_it_restarting(actor)  # it takes seconds to come back

    with pytest.raises(ClusterError) as caught:
        await remote.open()

    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(
        f"session actor {actor._actor_id.hex()[:16]} (for a new session) did not come back "
        "within 0.01 s (ActorUnavailableError)"
    )
    assert message.endswith("or raise cluster.actor_restart_timeout_s")
