"""The SubagentActor pool on a real Ray cluster: several children per actor, actors
reused across fan-outs, a failed actor never handed out again."""

import ray

from cluster.subagents._pool import SubagentPool


def test_a_fan_out_starts_one_actor_per_per_actor_children_and_the_next_starts_none(ray_cluster):
    pool = SubagentPool(keep_idle=8, per_actor=4)
    first = [pool.acquire() for _ in range(8)]
    assert pool.size == 2 and len({id(a) for a in first}) == 2
    for actor in first:
        pool.release(actor, healthy=True)
    again = [pool.acquire() for _ in range(8)]
    assert pool.size == 2 and {id(a) for a in again} == {id(a) for a in first}
    assert ray.get([a.ready.remote() for a in again[:2]]) == [True, True]
    for actor in again:
        pool.release(actor, healthy=True)


def test_an_actor_whose_call_failed_is_not_handed_out_again(ray_cluster):
    pool = SubagentPool(keep_idle=8, per_actor=2)
    broken, sibling = pool.acquire(), pool.acquire()
    assert broken is sibling  # one actor, two children
    pool.release(broken, healthy=False)
    fresh = pool.acquire()
    assert fresh is not broken and pool.size == 1
    pool.release(sibling, healthy=True)  # the other child of the killed actor ends later: nothing breaks
    pool.release(fresh, healthy=True)


def test_idle_actors_beyond_keep_idle_are_stopped(ray_cluster):
    pool = SubagentPool(keep_idle=1, per_actor=1)
    actors = [pool.acquire() for _ in range(3)]
    for actor in actors:
        pool.release(actor, healthy=True)
    assert pool.size == 1
