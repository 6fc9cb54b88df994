"""The SessionActor's logic is a plain class (cluster.session_actor.SessionHost), made
remote once. Here a SessionHost hosts a real session on a scripted model in this
process, with no Ray: it is given its placement and a tool executor, and its turn
streams through its own pump as the actor's would."""

import asyncio
import contextlib

from agents.events import PermissionRequested, ToolResult
from agents.session._kit import PermissionAnswer
from cluster.event_pump import CallFailed, TurnStreamEnd
from cluster.session_actor import (
    ChildQuestion,
    ClusterServices,
    Placement,
    SessionHost,
    SessionSpec,
    TurnEnd,
)
from tests.support.fakes import read_notes_settings
from tools.executor import LocalToolExecutor


def _host() -> SessionHost:
    return SessionHost(ClusterServices(executor=LocalToolExecutor()), Placement(node_id="this-process"))


def _spec(tmp_path) -> SessionSpec:
    settings = read_notes_settings(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("the notes in the workspace\n")
    return SessionSpec(settings=settings.model_dump(mode="json"), workspace=str(ws))


async def _turn_items(host: SessionHost, session_id: str, token: int) -> list:
    """What the host's pump sends for one turn, in order, until its stream ends."""
    items: list = []
    async with contextlib.aclosing(host.pump()) as pump:
        async for window in pump:
            for where, tagged, batch in window:
                assert (where, tagged) == (session_id, token)
                if isinstance(batch, CallFailed):
                    batch.raise_it()
                if isinstance(batch, TurnStreamEnd):
                    return items
                items.extend(batch)
    raise AssertionError("the pump ended before the turn's stream did")


async def test_a_session_host_runs_a_turn_with_a_tool_call_in_this_process(tmp_path):
    host = _host()
    session_id = (await host.open(_spec(tmp_path)))["session_id"]
    host.begin(1, "turn", session_id, "Read the notes.")
    items = await _turn_items(host, session_id, 1)
    results = [e for e in items if isinstance(e, ToolResult)]
    assert len(results) == 1 and "the notes in the workspace" in results[0].content
    end = items[-1]
    assert isinstance(end, TurnEnd) and (end.reason, end.final_text, end.complete) == ("end_turn", "read it", True)
    await host.close(session_id)
    assert host.sessions() == []


async def test_a_subagents_question_reaches_the_roots_stream_and_its_answer_comes_back(tmp_path):
    host = _host()
    session_id = (await host.open(_spec(tmp_path)))["session_id"]
    host.drain(session_id)  # what opening it emitted
    request = PermissionRequested(
        session_id=f"{session_id}.1",
        tool_use_id="toolu_1",
        name="Bash",
        input={"command": "make"},
        reason="Bash(make) asks",
    )
    asked = asyncio.ensure_future(host.ask_user(session_id, request))
    question = await host.hosted[session_id].events.get()  # the root's stream
    assert isinstance(question, ChildQuestion) and question.request.tool_use_id == "toolu_1"
    assert host.answer_child(session_id, "toolu_1", True, False)
    assert await asked == PermissionAnswer(allow=True, always=False)
    await host.close(session_id)
