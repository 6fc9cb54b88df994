"""Which node a task is aimed at: among the alive nodes that could hold its bundle (the
`workingset_sandbox` marker included once the cluster has it), the one with the fewest
running tasks per CPU; placed there when it has room, elsewhere when it has none."""

import asyncio

from cluster.eval.placement import Placer, task_bundle


def _node(node_id: str, cpus: float, *, sandbox: bool = True, alive: bool = True) -> dict:
    resources = {"CPU": cpus, "memory": 8 * 2**30, **({"workingset_sandbox": 1.0} if sandbox else {})}
    return {"NodeID": node_id, "Alive": alive, "Resources": resources}


def test_tasks_are_aimed_at_the_node_with_the_fewest_running_tasks_per_cpu():
    placer = Placer(task_bundle(memory_mb=256, cpus=0, sandbox=True))
    nodes = [_node("big", 4), _node("small", 1)]
    aimed = []
    for _ in range(5):
        target = placer._target(nodes)
        placer.running[target] += 1
        aimed.append(target)
    assert aimed.count("big") == 4 and aimed.count("small") == 1


def test_only_alive_nodes_with_the_sandbox_marker_are_aimed_at_once_it_is_asked_for():
    nodes = [_node("plain", 8, sandbox=False), _node("gone", 8, alive=False), _node("marked", 1)]
    assert Placer(task_bundle(memory_mb=256, cpus=0, sandbox=True))._target(nodes) == "marked"
    assert Placer(task_bundle(memory_mb=256, cpus=0, sandbox=False))._target(nodes) == "plain"
    assert Placer(task_bundle(memory_mb=64 * 1024, cpus=0, sandbox=True))._target(nodes) is None  # no room anywhere


async def test_a_task_is_placed_on_the_node_it_is_aimed_at(ray_cluster):
    placer = Placer({"workingset_sandbox": 0.6})
    placer.running[ray_cluster.head_node_id] = 10  # aim it at the other node
    held = await asyncio.wait_for(placer.lease(), 120)
    placer.release(held)
    assert held.node == ray_cluster.other_node_id


async def test_a_task_aimed_at_a_full_node_is_placed_where_there_is_room(ray_cluster):
    placer = Placer({"workingset_sandbox": 0.6}, aim_wait_s=1.0)  # each node has one unit: one such task fits
    placer.running[ray_cluster.other_node_id] = 10  # aim every lease at the head
    first = await asyncio.wait_for(placer.lease(), 120)
    try:
        second = await asyncio.wait_for(placer.lease(), 120)
        placer.release(second)
    finally:
        placer.release(first)
    assert (first.node, second.node) == (ray_cluster.head_node_id, ray_cluster.other_node_id)
