"""Running a session on Ray: start the shared services, host the session on a
SessionActor, and hand the caller a RemoteSession."""

from __future__ import annotations

import ray

from agents.events import EventSink
from agents.opening import OpenSpec
from agents.session import Approver
from agents.settings import WorkingsetSettings
from cluster.actor_link import ActorLink
from cluster.compactor_pool import start_compactor_pool
from cluster.connection import RuntimeInfo, connect, current_node_id
from cluster.credentials import model_runtime_env
from cluster.heartbeat import Heartbeat
from cluster.remote_session import RemoteSession
from cluster.session_actor import ClusterServices, SessionActor, SessionSpec
from cluster.snapshot_actor import start_snapshot_actor

__all__ = ["open_remote_session", "start_services"]


def start_services(settings: WorkingsetSettings, info: RuntimeInfo) -> ClusterServices:
    """The pieces all sessions of this runtime share."""
    c = settings.cluster
    summarizer = start_compactor_pool(settings.summarizer, size=c.compactor_pool_size, max_queue=c.compactor_max_queue)
    use_actor = c.snapshot_actor == "always" or (c.snapshot_actor == "auto" and info.nodes > 1)
    snapshots = None
    if use_actor:
        snapshots = start_snapshot_actor(
            settings.home / "snapshots",
            max_history=settings.snapshots.max_history,
            max_age_days=settings.snapshots.max_age_days,
            node_id=current_node_id(),
        )
    return ClusterServices(
        summarizer=summarizer,
        snapshots=snapshots,
        tool_cpus=c.tool_task_cpus,
        subagent_pool_idle=c.subagent_pool_idle,
        subagents_per_actor=c.subagents_per_actor,
    )


async def open_remote_session(opening: OpenSpec, *, emit: EventSink, approver: Approver | None) -> RemoteSession:
    """Open `opening` on a SessionActor of this node; the actor runs the same lifecycle
    (agents.opening._lifecycle.open_or_resume) that a local session is opened by."""
    settings = opening.settings
    info = connect(
        settings.cluster.address, dashboard=settings.cluster.dashboard, start_timeout_s=settings.cluster.start_timeout_s
    )
    services = start_services(settings, info)
    # The workspace lives on this node: the session (and its tool tasks) run here.
    actor = SessionActor.options(
        scheduling_strategy=ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(
            node_id=current_node_id(), soft=False
        ),
        runtime_env=model_runtime_env(),  # the provider credentials (credentials.py)
    ).remote(services)
    spec = SessionSpec.of(opening, interactive=approver is not None)
    c = settings.cluster
    link = ActorLink(
        actor,
        heartbeat=Heartbeat(actor, what="session's actor", period_s=c.heartbeat_s, timeout_s=c.heartbeat_timeout_s),
    )
    remote = RemoteSession(
        link,
        spec,
        emit=emit,
        approver=approver,
        model_name=settings.model,
        services=services,
        restart_timeout_s=settings.cluster.actor_restart_timeout_s,
    )
    await remote.open()
    return remote
