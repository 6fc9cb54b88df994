"""Coalesced actor calls (cluster/actor_link.py): what sessions ask of one actor in the
same tick goes as one call, and each caller still gets its own result or its own error."""

import asyncio
import json
from pathlib import Path

from agents.errors import ConfigError
from agents.settings._config import WorkingsetSettings
from cluster.actor_link import Coalesced, call_each
from cluster.session_pool import SessionPool


class FakeActorMethod:
    """Stands for a Ray call of an actor's `…_many` method: records each batch it is given."""

    def __init__(self, fail_whole: Exception | None = None):
        self.batches: list[list] = []
        self.fail_whole = fail_whole

    def __call__(self, items: list):
        self.batches.append(list(items))
        return self._answer(items)

    async def _answer(self, items: list) -> list:
        if self.fail_whole is not None:
            raise self.fail_whole

        async def double(item: int) -> int:
            if item < 0:
                raise ValueError(f"negative: {item}")
            return item * 2

        return await call_each(double, items, "Fake.double")


async def test_calls_made_in_the_same_tick_go_as_one_call_and_each_caller_gets_its_own_result():
    method = FakeActorMethod()
    call = Coalesced(method)
    assert await asyncio.gather(*(call(i) for i in range(5))) == [0, 2, 4, 6, 8]
    assert method.batches == [[0, 1, 2, 3, 4]]


async def test_a_call_alone_goes_at_once():
    method = FakeActorMethod()
    call = Coalesced(method)
    assert await call(7) == 14
    assert await call(8) == 16
    assert method.batches == [[7], [8]]


async def test_an_item_that_raised_raises_its_own_error_and_the_others_get_their_results():
    call = Coalesced(FakeActorMethod())
    results = await asyncio.gather(call(1), call(-1), call(3), return_exceptions=True)
    assert results[0] == 2 and results[2] == 6
    assert isinstance(results[1], ValueError) and "negative: -1" in str(results[1])


async def test_a_call_that_failed_as_a_whole_raises_for_every_caller():
    call = Coalesced(FakeActorMethod(fail_whole=ConnectionError("actor lost")))
    results = await asyncio.gather(call(1), call(2), return_exceptions=True)
    assert all(isinstance(r, ConnectionError) for r in results)


def test_a_new_event_loop_is_not_held_up_by_calls_an_ended_loop_left_pending():
    method = FakeActorMethod()
    call = Coalesced(method)

    async def leave_one_pending() -> None:
        asyncio.ensure_future(call(1))  # the loop ends before its flush runs

    asyncio.run(leave_one_pending())
    assert asyncio.run(asyncio.wait_for(call(2), 5)) == 4


def test_sessions_opened_together_each_get_their_own_outcome_on_a_real_actor(ray_cluster, tmp_path: Path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [], "final_text": "Done."}))
    pool = SessionPool(WorkingsetSettings(model=f"scripted:{script}", home=tmp_path / "home"), actors=1)
    spaces = [tmp_path / f"ws{i}" for i in range(4)]
    for ws in spaces[:3]:
        ws.mkdir()

    async def scenario() -> list:
        await pool.ready()
        return await asyncio.gather(*(pool.open(ws) for ws in spaces), return_exceptions=True)

    try:
        opened = asyncio.run(scenario())
    finally:
        pool.shutdown()
    assert len({remote.session_id for remote in opened[:3]}) == 3
    assert isinstance(opened[3], ConfigError) and "ws3 is not an existing directory" in str(opened[3])
