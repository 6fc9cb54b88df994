"""SessionPool: many root sessions on a few SessionActors.

A SessionActor hosts sessions as asyncio tasks, so a batch of hundreds of sessions
needs only a handful of processes. Each new session goes to the actor hosting the
fewest; every session is driven through its own RemoteSession (and so keeps the
fault tolerance of one). Each actor's link pings it (cluster.heartbeat: settings
`cluster.heartbeat_s`, `cluster.heartbeat_timeout_s`), so one that stops answering is
replaced.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import ray

from agents.events import EventSink, discard_events
from agents.session import Approver
from agents.settings import WorkingsetSettings
from cluster.actor_link import ActorLink
from cluster.connection import connect, current_node_id, node_cpus
from cluster.credentials import model_runtime_env
from cluster.heartbeat import Heartbeat
from cluster.ray_run import start_services
from cluster.remote_session import RemoteSession
from cluster.session_actor import ClusterServices, SessionActor, SessionSpec
from cluster.tool_tasks import warm_tool_workers

__all__ = ["SessionPool"]


class SessionPool:
    def __init__(
        self,
        settings: WorkingsetSettings,
        *,
        actors: int,
        services: ClusterServices | None = None,
        node_id: str | None = None,
    ):
        """`node_id`: the node whose workspaces the sessions work in (default: this one)."""
        info = connect(settings.cluster.address, dashboard=settings.cluster.dashboard)
        self.settings = settings
        self.services = services or start_services(settings, info)
        self.node_id = node_id or current_node_id()
        strategy = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node_id=self.node_id, soft=False)
        # The sessions call the models: the provider credentials go with them (credentials.py).
        options = {"scheduling_strategy": strategy, "runtime_env": model_runtime_env()}
        # Any: Ray's handle types do not give its methods' `.remote`.
        self.actors: list[Any] = [SessionActor.options(**options).remote(self.services) for _ in range(actors)]
        self.load = [0] * actors
        # One link per actor for all its sessions: one event stream, coalesced calls (cluster.actor_link).
        c = settings.cluster
        self.links = [
            ActorLink(
                actor,
                heartbeat=Heartbeat(
                    actor, what="session's actor", period_s=c.heartbeat_s, timeout_s=c.heartbeat_timeout_s
                ),
            )
            for actor in self.actors
        ]
        self._wire: tuple[WorkingsetSettings, dict] | None = None

    def _wire_form(self, settings: WorkingsetSettings) -> dict:
        """`settings` as JSON for the actors, dumped once per settings object (a batch
        opens every session with the same one)."""
        if self._wire is None or self._wire[0] is not settings:
            self._wire = (settings, settings.model_dump(mode="json"))
        return self._wire[1]

    async def ready(self) -> None:
        """Wait until every actor process and the tool workers are up (and each actor has
        paid its one-time costs of a session), so their start-up is not charged to the
        first sessions."""
        await asyncio.gather(*(a.warm.remote(self._wire_form(self.settings)) for a in self.actors))
        cpus = node_cpus(self.node_id)
        tool_cpus = self.settings.cluster.tool_task_cpus
        await warm_tool_workers(self.node_id, num_cpus=tool_cpus, count=max(int(cpus / tool_cpus), 1))

    async def open(
        self,
        workspace: Path,
        *,
        settings: WorkingsetSettings | None = None,
        emit: EventSink = discard_events,
        approver: Approver | None = None,
        session_id: str | None = None,
        goal: str | None = None,
    ) -> RemoteSession:
        index = min(range(len(self.actors)), key=self.load.__getitem__)
        self.load[index] += 1
        settings = settings or self.settings
        spec = SessionSpec(
            settings=self._wire_form(settings),
            workspace=str(workspace),
            session_id=session_id,
            goal=goal,
            interactive=approver is not None,
        )
        remote = RemoteSession(
            self.links[index],
            spec,
            emit=emit,
            approver=approver,
            model_name=settings.model,
            restart_timeout_s=settings.cluster.actor_restart_timeout_s,
        )
        remote.pool_index = index
        await remote.open()
        return remote

    async def close(self, remote: RemoteSession) -> None:
        try:
            await remote.aclose()
        finally:
            self.load[remote.pool_index] -= 1

    def shutdown(self) -> None:
        for link in self.links:
            link.heartbeat.stop()
        for actor in self.actors:
            ray.kill(actor)
