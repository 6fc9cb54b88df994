"""Opening a session: one lifecycle for every caller, local or on Ray.

`open_or_resume(spec, runtime)` is the only way a root session comes to life: it
builds the session for the current environment (`agents.opening._assembly.open_session`),
resumes a saved one (snapshot loaded and restored; a corrupt current version falls
back to the newest intact one with a notice; a session reopened after its host
failed during its first turn starts again), applies the goal, and maps what went
wrong to one ConfigError naming the session and the fix. The CLI (`--local`), the
SessionActor and the evaluation hosts all open sessions here, so `--resume X --goal
G` means the same wherever the session runs: the saved session continues, and G
replaces its goal. A subagent never resumes and has no goal of its own: it is
assembled from its parent's blueprint by the same `agents.opening._blueprint.assemble`
(`agents.subagents._spawner.run_child`, in-process or in a SubagentActor).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agents.errors import ConfigError
from agents.events import EventSink, Notice, discard_events
from agents.modes import Mode
from agents.opening._assembly import RuntimePorts, open_session
from agents.ports import ReplayingClient
from agents.session import Approver, Session
from agents.settings import WorkingsetSettings
from agents.snapshots import SnapshotError, SnapshotNotFound
from tools.base import Tool

__all__ = ["OpenSpec", "SessionRuntime", "open_or_resume"]

FIRST_TURN_LOST = "no snapshot was saved before the failure; the session starts again from its first turn"


@dataclass(frozen=True)
class OpenSpec:
    """Which root session to open, and how."""

    settings: WorkingsetSettings
    workspace: Path
    session_id: str | None = None  # None: a new id
    resume: bool = False  # continue the saved session `session_id`
    mode: Mode = Mode.DEFAULT  # a resumed session keeps the mode it was saved in
    goal: str | None = None  # set as the goal; on resume it replaces the saved one
    # Reopened after the process hosting it failed: a session that had saved nothing
    # yet starts again, and a replaying (scripted) model continues where the snapshot
    # left off, so the interrupted turn gets the replies it would have had.
    restart: bool = False


@dataclass(frozen=True)
class SessionRuntime:
    """Where a root session runs: where its events go, who answers its subagents'
    questions, and the port implementations that differ from the in-process ones."""

    emit: EventSink = discard_events
    child_approver: Approver | None = None
    ports: RuntimePorts = field(default_factory=RuntimePorts)
    tools: list[Tool] | None = None  # None: the workspace tools, memory, skills and plugins


async def open_or_resume(spec: OpenSpec, runtime: SessionRuntime) -> Session:
    """Build, resume and set the goal of a root session; see the module docstring."""
    session = await open_session(
        spec.settings,
        spec.workspace,
        emit=runtime.emit,
        session_id=spec.session_id,
        mode=spec.mode,
        child_approver=runtime.child_approver,
        tools=runtime.tools,
        runtime=runtime.ports,
    )
    try:
        restored = spec.resume and await _resume(session, restart=spec.restart)
        # After a restart the restored goal is the one given, carried on; a fresh start sets it again.
        if spec.goal and not (spec.restart and restored):
            _replace_goal(session, spec.goal)
    except BaseException:
        await session.aclose()
        raise
    return session


async def _resume(session: Session, *, restart: bool) -> bool:
    """Load and restore the session's snapshot; False when a restart found none."""
    store = session.ports.snapshots
    if store is None:
        raise ConfigError(f"cannot resume {session.session_id}: this session has no snapshot store")
    try:
        loaded = await store.aload(session.session_id)
    except SnapshotNotFound as exc:
        if not restart:
            raise ConfigError(f"cannot resume {session.session_id}: {exc}") from exc
        session.emit(Notice(session_id=session.session_id, text=FIRST_TURN_LOST))
        return False
    except SnapshotError as exc:
        raise ConfigError(f"cannot resume {session.session_id}: {exc}") from exc
    if loaded.problem:
        session.emit(Notice(session_id=session.session_id, text=loaded.problem))
    session.restore(loaded.state)
    session.saved_version = loaded.version
    if restart and isinstance(session.ports.model, ReplayingClient):
        session.ports.model.seek(loaded.state.model_calls)
    return True


def _replace_goal(session: Session, condition: str) -> None:
    saved = session.goal
    if saved is not None and saved.condition != condition:
        session.emit(
            Notice(session_id=session.session_id, text=f"the goal given replaces the saved goal ({saved.condition})")
        )
    session.set_goal(condition)
