"""SessionActor: hosts root sessions on Ray and streams their events to the caller.

Its logic is a plain class, `SessionHost`, made remote once below (`SessionActor`,
as Ray makes its own queue actor): a test drives a SessionHost in its own process,
no Ray started, with a Placement and a tool executor of its own.

The agent loop from agents/ runs unchanged here; only the ports differ (tool calls
as node-affine Ray tasks, summaries through the CompactorPool, subagents as
SubagentActors, snapshots through the shared store). One actor can host many
sessions — each is an asyncio task — so hundreds of sessions do not need hundreds
of processes. The actor holds no CPU while it waits on models (num_cpus=0).

Fault tolerance: the actor restarts when killed (max_restarts=-1) and starts
empty; the caller's RemoteSession reopens its session from the last snapshot
(taken after every tool batch and every outer turn), so no completed turn or tool
batch is lost, and the interrupted turn goes on from where it was saved.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import ray
from pydantic import BaseModel

from agents.errors import WorkingsetError
from agents.events import PermissionRequested
from agents.modes import Mode
from agents.opening import OpenSpec, RuntimePorts, SessionRuntime, open_or_resume, resolve_workspace
from agents.ports import SnapshotStore, Summarizer, ToolExecutor
from agents.providers import load_model_client
from agents.session import PermissionAnswer, Session, TurnOutcome, TurnReason, new_session_id
from agents.settings import WorkingsetSettings
from agents.subagents import BudgetRefusal, ScopeLimits, TreeLedger
from cluster.actor_link import call_each
from cluster.event_pump import Outbox
from cluster.heartbeat import Whereabouts, whereabouts
from cluster.subagents import LedgerHost, SubagentPool, answer_root_tool, ray_spawner_factory
from cluster.tool_tasks import RayToolExecutor
from tools.base import ToolOutput
from tools.registry import default_workspace_tools, input_schema

__all__ = ["ChildQuestion", "ClusterServices", "Placement", "SessionActor", "SessionHost", "SessionSpec", "TurnEnd"]

_DONE = object()
_BATCH_WINDOW_S = 0.05
_TURN_STARTS: dict[str, Callable[..., Awaitable[TurnOutcome | None]]] = {
    "turn": lambda session, text: session.run_turn(text),
    "answer": lambda session, allow, always: session.answer_permission(allow, always=always),
    "settle_resumed": lambda session: session.settle_resumed(),
}


@dataclasses.dataclass(frozen=True)
class ClusterServices:
    """Shared pieces every SessionActor uses (all picklable handles)."""

    summarizer: Summarizer | None = None  # PooledSummarizer
    snapshots: SnapshotStore | None = None  # RaySnapshotStore when sessions span nodes
    executor: ToolExecutor | None = None  # None: tool calls as node-affine Ray tasks (RayToolExecutor)
    tool_cpus: float = 0.5
    subagent_pool_idle: int = 8
    subagents_per_actor: int = 8


class SessionSpec(BaseModel):
    settings: dict[str, Any]
    workspace: str
    session_id: str | None = None
    mode: str = "default"
    goal: str | None = None
    resume: bool = False
    interactive: bool = False
    # Reopened after an actor failure (agents.opening._lifecycle.OpenSpec.restart): a replaying
    # (scripted) model continues where the snapshot left off, so the interrupted turn
    # gets the same replies it would have had.
    seek_model: bool = False

    @classmethod
    def of(cls, opening: OpenSpec, *, interactive: bool) -> SessionSpec:
        """The wire form of `opening` (settings as JSON: the actor validates them again)."""
        return cls(
            settings=opening.settings.model_dump(mode="json"),
            workspace=str(opening.workspace),
            session_id=opening.session_id,
            mode=opening.mode.value,
            goal=opening.goal,
            resume=opening.resume,
            interactive=interactive,
            seek_model=opening.restart,
        )


class ChildQuestion(BaseModel):
    """A subagent waits for the user's answer (answer it with answer_child)."""

    type: str = "child_question"
    request: PermissionRequested


class TurnEnd(BaseModel):
    """The last item of a turn's stream: how it ended, and the session's control state."""

    type: str = "turn_end"
    reason: TurnReason
    final_text: str
    model_calls: int
    detail: str | None = None
    request: PermissionRequested | None = None
    mode: str
    goal: dict | None = None
    messages: int
    complete: bool = False
    usage: dict = {}
    total_model_calls: int = 0

    def outcome(self) -> TurnOutcome:
        return TurnOutcome(self.reason, self.final_text, self.model_calls, self.detail, self.request)


@dataclasses.dataclass
class _Hosted:
    session: Session
    events: asyncio.Queue
    asks: dict[str, asyncio.Future]
    turn: asyncio.Future | None = None  # the turn (or answer) running now


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where a SessionHost runs: its node, and the handle its sessions' subagents report
    back through (None: no actor, so no subagent actors either)."""

    node_id: str
    actor: Any = None

    @classmethod
    def of_this_actor(cls) -> Placement:
        context = ray.get_runtime_context()
        return cls(context.get_node_id(), context.current_actor)


class SessionHost:
    """Hosts root sessions and streams their events; `SessionActor` is this class on Ray.

    Made by Ray (`SessionActor.remote(services)`), it finds its Placement from the
    actor's runtime context; anywhere else it is given one."""

    def __init__(self, services: ClusterServices, placement: Placement | None = None):
        placement = placement or Placement.of_this_actor()
        self.services = services
        self.node_id = placement.node_id
        self.pool = SubagentPool(
            keep_idle=services.subagent_pool_idle, per_actor=services.subagents_per_actor, node_id=self.node_id
        )
        self.hosted: dict[str, _Hosted] = {}
        self.me = placement.actor
        self.ledgers = LedgerHost(self._ledger_of)
        self._settings: tuple[dict, WorkingsetSettings] | None = None
        self.outbox = Outbox(_BATCH_WINDOW_S)

    def _validated(self, raw: dict) -> WorkingsetSettings:
        """The settings of `raw`, validated once per distinct value: a batch opens every
        session with the same settings, and validating them (which also reads this
        process's environment) costs more than the rest of an open. Sessions treat
        settings as read-only, as the ones shared by an in-process batch are."""
        if self._settings is None or self._settings[0] != raw:
            self._settings = (raw, WorkingsetSettings.model_validate(raw))
        return self._settings[1]

    # -- lifecycle ----------------------------------------------------------------------

    async def open(self, spec: SessionSpec) -> dict:
        """Open (build or resume) a session here through the one lifecycle; returns its id,
        the events opening it emitted (notices) and its control state."""
        settings = self._validated(spec.settings)
        workspace = resolve_workspace(spec.workspace)
        queue: asyncio.Queue = asyncio.Queue()
        session_id = spec.session_id or new_session_id()
        hosted_ref: list[_Hosted] = []
        approver = (lambda request: self._ask_local(hosted_ref[0], request)) if spec.interactive else None
        ports = RuntimePorts(
            executor=self.services.executor or RayToolExecutor(self.node_id, num_cpus=self.services.tool_cpus),
            summarizer=self.services.summarizer,
            snapshots=self.services.snapshots,
            # Subagents become actors that report back to this actor and this session.
            spawner_factory=ray_spawner_factory(self.pool, self.me, session_id),
        )
        opening = OpenSpec(
            settings,
            workspace,
            session_id=session_id,
            resume=spec.resume,
            mode=Mode(spec.mode),
            goal=spec.goal,
            restart=spec.seek_model,
        )
        session = await open_or_resume(
            opening, SessionRuntime(emit=queue.put_nowait, child_approver=approver, ports=ports)
        )
        hosted = _Hosted(session, queue, {})
        hosted_ref.append(hosted)
        self.hosted[session.session_id] = hosted
        if spec.interactive and session.ports.spawner is not None:
            # Someone waits on an interactive session's first fan-out: its first SubagentActor
            # boots now, in the background. A batch's sessions start theirs when they fan
            # out (an idle Ray worker costs CPU every second: `cluster.subagents._pool`).
            self.pool.warm_soon()
        return {"session_id": session.session_id, "events": self.drain(session.session_id), **self._control(session)}

    async def open_many(self, specs: list[SessionSpec]) -> list:
        """`open` for several sessions in one Ray call (cluster.actor_link)."""
        return await call_each(self.open, specs, "SessionActor.open")

    async def close_many(self, session_ids: list[str]) -> list:
        return await call_each(self.close, session_ids, "SessionActor.close")

    async def begin_many(self, starts: list[tuple]) -> list:
        async def begin(start: tuple) -> None:
            token, method, session_id, args = start
            self.begin(token, method, session_id, *args)

        return await call_each(begin, starts, "SessionActor.begin")

    async def close(self, session_id: str) -> None:
        hosted = self.hosted.pop(session_id, None)
        if hosted is not None:
            # A caller that closes mid-turn (it gave up: a wall-clock limit, Ctrl-C) must not
            # leave the turn running here, still calling the model and the tools.
            await self._cancel(hosted)
            await hosted.session.aclose()

    async def cancel_turn(self, session_id: str) -> None:
        """Stop the turn running now (Ctrl-C in the caller's REPL); the session stays open,
        its conversation kept (agents.session._loop closes and saves the cancelled turn)."""
        hosted = self.hosted.get(session_id)
        if hosted is not None:
            await self._cancel(hosted)

    @staticmethod
    async def _cancel(hosted: _Hosted) -> None:
        if hosted.turn is not None and not hosted.turn.done():
            hosted.turn.cancel()
            await asyncio.wait([hosted.turn])

    def sessions(self) -> list[str]:
        return list(self.hosted)

    def subagent_actors(self) -> int:
        """How many SubagentActors this actor's pool holds (booted or booting)."""
        return self.pool.size

    # -- turns, streamed ----------------------------------------------------------------

    def begin(self, token: int, method: str, session_id: str, *args) -> None:
        """Start a turn (`method` of turn, answer, settle_resumed) whose batches go out
        through this actor's pump, each tagged with `token` (cluster.event_pump)."""
        started = self._start(session_id, method, args)
        self.outbox.forward(session_id, token, self._stream(*started), f"SessionActor.{method}")

    async def pump(self):
        """The batches of every turn started by `begin`, all sessions together."""
        async for items in self.outbox.pump():
            yield items

    def _start(self, session_id: str, method: str, args: tuple) -> tuple[_Hosted, asyncio.Future]:
        hosted = self._get(session_id)
        task = asyncio.ensure_future(_TURN_STARTS[method](hosted.session, *args))
        hosted.turn = task
        task.add_done_callback(lambda _: hosted.events.put_nowait(_DONE))
        return hosted, task

    async def _stream(self, hosted: _Hosted, task: asyncio.Future):
        """The turn's events in batches, for the pump (which gathers every session's
        bursts of one window into one Ray item)."""
        done = False
        while not done:
            batch = [await hosted.events.get()]
            while not hosted.events.empty():
                batch.append(hosted.events.get_nowait())
            if any(item is _DONE for item in batch):
                # A subagent's events travel separately and may land after the turn ended.
                batch = [item for item in batch if item is not _DONE]
                done = True
                if not task.cancelled() and task.exception() is None:
                    # the turn's end rides with its last events: one stream item fewer per turn
                    batch.append(self._turn_end(hosted.session, task.result()))
            if batch:
                yield batch
        if task.cancelled():
            return  # the caller cancelled it (cancel_turn, close) and reads no more
        task.result()  # re-raises a model error for the caller, after the events before it

    # -- control ------------------------------------------------------------------------

    async def compact(self, session_id: str, focus: str | None) -> dict:
        result = await self._get(session_id).session.compact_now(focus)
        return {"failure": result.failure, "events": [e.model_dump() for e in result.events]}

    def set_mode(self, session_id: str, mode: str) -> dict:
        session = self._get(session_id).session
        session.set_mode(Mode(mode))
        return self._control(session)

    def set_goal(self, session_id: str, condition: str | None) -> dict:
        session = self._get(session_id).session
        session.set_goal(condition)
        return self._control(session)

    async def clear(self, session_id: str) -> dict:
        session = self._get(session_id).session
        await session.clear()
        return self._control(session)

    def drain(self, session_id: str) -> list:
        """Events emitted outside a streamed turn (mode changes, snapshots, notices)."""
        queue = self._get(session_id).events
        items = []
        while not queue.empty():
            items.append(queue.get_nowait())
        return items

    # -- subagent plumbing --------------------------------------------------------------

    def push_event(self, session_id: str, event) -> None:
        self.push_events(session_id, [event])

    def push_events(self, session_id: str, events: list) -> None:
        """A subagent's events, in the order it emitted them (one call per burst)."""
        hosted = self.hosted.get(session_id)
        if hosted is not None:
            for event in events:
                hosted.events.put_nowait(event)

    def budget_open(
        self, session_id: str, scope_id: str, parent_id: str | None, limits: ScopeLimits
    ) -> BudgetRefusal | None:
        """A subagent's scope in the tree's ledger (cluster.subagents._tree_budget)."""
        return self.ledgers.open(session_id, scope_id, parent_id, limits)

    def budget_reserve(self, session_id: str, scope_id: str) -> BudgetRefusal | None:
        return self.ledgers.reserve(session_id, scope_id)

    def budget_settle(self, session_id: str, scope_id: str, tokens: int, cost_usd: float | None, model_name: str):
        return self.ledgers.settle(session_id, scope_id, tokens, cost_usd, model_name)

    async def call_root_tool(self, session_id: str, name: str, arguments: dict) -> ToolOutput:
        """A subagent's call of one of the root's MCP tools, over the root's connection
        (cluster.subagents._root_tools); the child already checked its mode and permissions."""
        hosted = self.hosted.get(session_id)
        if hosted is None:
            return ToolOutput(
                content=f"{name} cannot be called: the root session {session_id} is no longer open", is_error=True
            )
        kit = hosted.session.kit
        return await answer_root_tool(kit.registry, kit.tool_context, name, arguments)

    def _ledger_of(self, session_id: str) -> TreeLedger | None:
        hosted = self.hosted.get(session_id)
        budget = hosted.session.kit.budget if hosted is not None else None
        return budget.ledger if budget is not None and isinstance(budget.ledger, TreeLedger) else None

    async def ask_user(self, session_id: str, request: PermissionRequested) -> PermissionAnswer:
        """A subagent's question: shown in the root's stream, answered by answer_child."""
        hosted = self.hosted.get(session_id)
        if hosted is None:
            return PermissionAnswer(allow=False)
        return await self._ask_local(hosted, request)

    def answer_child(self, session_id: str, tool_use_id: str, allow: bool, always: bool) -> bool:
        hosted = self.hosted.get(session_id)
        future = hosted.asks.pop(tool_use_id, None) if hosted else None
        if future is None or future.done():
            return False
        future.set_result(PermissionAnswer(allow=allow, always=always))
        return True

    async def _ask_local(self, hosted: _Hosted, request: PermissionRequested) -> PermissionAnswer:
        future = asyncio.get_running_loop().create_future()
        hosted.asks[request.tool_use_id] = future
        hosted.events.put_nowait(ChildQuestion(request=request))
        return await future

    # -- helpers ------------------------------------------------------------------------

    def _get(self, session_id: str) -> _Hosted:
        hosted = self.hosted.get(session_id)
        if hosted is None:
            raise KeyError(f"session {session_id} is not open on this actor")
        return hosted

    def _control(self, session: Session) -> dict:
        conversation = session.conversation
        last = conversation[-1] if conversation else None
        return {
            "usage": session.usage.model_dump(),
            "total_model_calls": session.model_calls,
            "mode": session.mode.value,
            "goal": session.goal.model_dump() if session.goal else None,
            "messages": len(conversation),
            # a finished turn ends in an assistant reply without tool calls and nothing parked
            "complete": bool(last and last.role == "assistant" and not last.tool_uses and session.pending is None),
            "turns": session.state.turns,  # outer turns begun; a turn saved mid-way is `in_turn`
            "in_turn": session.state.in_turn,
        }

    def _turn_end(self, session: Session, outcome: TurnOutcome | None) -> TurnEnd:
        outcome = outcome or TurnOutcome("end_turn", "", 0)
        return TurnEnd(
            reason=outcome.reason,
            final_text=outcome.final_text,
            model_calls=outcome.model_calls,
            detail=outcome.detail,
            request=outcome.request,
            **self._control(session),
        )

    def ping(self) -> str:
        return self.node_id

    def heartbeat(self) -> Whereabouts:
        """Answered by this actor's event loop: the caller's sign that it runs (cluster.heartbeat)."""
        return whereabouts()

    def warm(self, settings: dict) -> None:
        """Pay this process's one-time costs of a session before the first one opens:
        the settings' validation, the model provider's import and the tools' schemas."""
        validated = self._validated(settings)
        with contextlib.suppress(WorkingsetError):  # a bad model spec is reported, clearly, by open
            load_model_client(validated.model, settings=validated.providers)
        for tool in default_workspace_tools():
            input_schema(tool.input_model)

    def workspace_path(self, session_id: str) -> str:
        return str(Path(self._get(session_id).session.kit.tool_context.workspace))


# Made remote once: the actor's methods are SessionHost's. It holds no CPU while its
# sessions wait on models, and restarts empty when killed (see the module docstring).
# Ray names an actor and its process after the class it is given: the subclass keeps the
# name the cluster has always shown (`ray::SessionActor`, `ray list actors`).
_named: type[SessionHost] = type(
    "SessionActor", (SessionHost,), {"__module__": __name__, "__doc__": SessionHost.__doc__}
)
SessionActor = ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0)(_named)
