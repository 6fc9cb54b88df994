"""Where a task attempt runs on Ray, and noticing when that node goes away.

Each attempt holds a placement group of one bundle — the task's declared resources —
for its whole life, so Ray puts it on a node with room for it and counts it there while
it runs (a session mostly waits on its model: the bundle is memory, and CPU only when
`eval_task_cpus` asks for it, plus the `workingset_sandbox` marker when the cluster has
nodes that declare it). Tool tasks and grades declare their own CPU, pinned to that node.

Ray's own choice among nodes with room packs bundles (fills one node, then the next),
which would leave the CPUs of other nodes idle for the tool calls and grades that
follow. So `Placer` aims each group at the node with the fewest running attempts per
CPU among those that could hold the bundle, through Ray's public label selector on the
node id (`ray.io/node-id`). A selector is a hard constraint — a group aimed at a node
that something else has filled would wait there while another node has room — so the
aimed group gets `aim_wait_s` to be placed; if it is not, it is withdrawn and asked for
again without aim, wherever Ray finds room (and Ray waits while no node has any). The
cost of a full target is that wait, once per attempt aimed at it. (Ray's soft node hint
for placement groups, `_soft_target_node_id`, does this in one step but is private;
NodeAffinitySchedulingStrategy(soft=True) applies to tasks and actors, not to groups.)

`NodeWatch` polls the cluster's node table; an attempt whose node is no longer alive is
told at once (`lost(node)`), rather than waiting on calls that no node will answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from dataclasses import dataclass

import ray
from ray.util.placement_group import (
    NODE_ID_LABEL_KEY,
    PlacementGroup,
    placement_group,
    placement_group_table,
    remove_placement_group,
)

from cluster.connection import ClusterError

__all__ = [
    "SANDBOX_RESOURCE",
    "Lease",
    "NodeWatch",
    "Placer",
    "cluster_has_sandbox_nodes",
    "feasible_nodes",
    "task_bundle",
]

# A node started with `--resources='{"workingset_sandbox": 1}'` says it can run
# sandboxed tasks (bubblewrap works there). Once any node says so, only such nodes get
# tasks; a cluster where none does takes tasks on every node.
SANDBOX_RESOURCE = "workingset_sandbox"
_SANDBOX_SHARE = 0.001  # one marker unit admits a thousand tasks at once: memory decides
AIM_WAIT_S = 5.0  # long enough for a busy cluster to place a group on a node with room


def task_bundle(*, memory_mb: int, cpus: float, sandbox: bool) -> dict[str, float]:
    bundle: dict[str, float] = {"memory": float(memory_mb * 1024 * 1024)}
    if cpus:
        bundle["CPU"] = cpus
    if sandbox:
        bundle[SANDBOX_RESOURCE] = _SANDBOX_SHARE
    return bundle


def _fits(node: dict, bundle: dict[str, float]) -> bool:
    have = node.get("Resources", {})
    return all(have.get(k, 0.0) >= v for k, v in bundle.items())


def feasible_nodes(bundle: dict[str, float]) -> list[str]:
    """Alive nodes whose total resources could ever hold the bundle."""
    return [n["NodeID"] for n in ray.nodes() if n.get("Alive") and _fits(n, bundle)]


def cluster_has_sandbox_nodes() -> bool:
    return any(n.get("Alive") and n.get("Resources", {}).get(SANDBOX_RESOURCE) for n in ray.nodes())


@dataclass
class Lease:
    group: PlacementGroup
    node: str
    released: bool = False


class Placer:
    """Leases room for attempts, spread over the nodes in proportion to their CPUs."""

    def __init__(self, bundle: dict[str, float], *, aim_wait_s: float = AIM_WAIT_S):
        self.bundle = bundle
        self.aim_wait_s = aim_wait_s
        self.running: Counter[str] = Counter()

    def _target(self, nodes: list[dict]) -> str | None:
        fitting = [n for n in nodes if n.get("Alive") and _fits(n, self.bundle)]
        if not fitting:
            return None
        best = min(fitting, key=lambda n: (self.running[n["NodeID"]] + 1) / max(n["Resources"].get("CPU", 0.0), 0.5))
        return best["NodeID"]

    async def lease(self) -> Lease:
        """Room for one attempt: waits while the cluster is full."""
        target = self._target(await asyncio.to_thread(ray.nodes))
        if target is not None:
            self.running[target] += 1  # counted at once: leases asked for together spread
        group: PlacementGroup | None = None
        try:
            group = await self._placed(target)
            table = await asyncio.to_thread(placement_group_table, group)
            node = table.get("bundles_to_node_id", {}).get(0)
            if not node:
                raise ClusterError("Ray placed a task's resources on no node")
        except BaseException:
            if group is not None:
                remove_placement_group(group)
            if target is not None:
                self.running[target] -= 1
            raise
        if target is not None:
            self.running[target] -= 1
        self.running[node] += 1
        return Lease(group, node)

    async def _placed(self, target: str | None) -> PlacementGroup:
        """A placed group: on `target` if it has room within aim_wait_s, else where Ray finds room."""
        if target is not None:
            aimed = placement_group(
                [self.bundle], strategy="STRICT_PACK", bundle_label_selector=[{NODE_ID_LABEL_KEY: target}]
            )
            try:
                await asyncio.wait_for(aimed.ready(), self.aim_wait_s)
                return aimed
            except TimeoutError:
                remove_placement_group(aimed)  # the target is full: anywhere with room will do
            except BaseException:
                remove_placement_group(aimed)
                raise
        group = placement_group([self.bundle], strategy="STRICT_PACK")
        try:
            await group.ready()
        except BaseException:
            remove_placement_group(group)
            raise
        return group

    def release(self, held: Lease) -> None:
        if held.released:
            return
        held.released = True
        self.running[held.node] -= 1
        with contextlib.suppress(Exception):  # gone with its node, or already removed
            remove_placement_group(held.group)


class NodeWatch:
    """Which nodes are alive, polled from the cluster's node table."""

    def __init__(self, period_s: float = 0.5):
        self.period_s = period_s
        self._lost: dict[str, asyncio.Event] = {}
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._poll())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    def lost(self, node: str) -> asyncio.Event:
        """Set once `node` is no longer alive."""
        return self._lost.setdefault(node, asyncio.Event())

    def is_lost(self, node: str | None) -> bool:
        return node is not None and self.lost(node).is_set()

    async def confirm(self, node: str, grace_s: float = 3.0) -> bool:
        """After a failure: did the node go? (the node table may lag the failure a little)"""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.lost(node).wait(), grace_s)
        return self.lost(node).is_set()

    async def _poll(self) -> None:
        while True:
            with contextlib.suppress(Exception):  # a slow GCS answer: ask again next period
                alive = {n["NodeID"] for n in await asyncio.to_thread(ray.nodes) if n.get("Alive")}
                for node, event in self._lost.items():
                    if node not in alive:
                        event.set()
            await asyncio.sleep(self.period_s)
