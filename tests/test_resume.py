"""Resume: snapshots written by a real session (through build_session and the CLI) come back
into a session rebuilt from the CURRENT environment — prompt, tools and permission rules —
with the conversation and control state exactly as they were."""

import asyncio
import json
from pathlib import Path
from typing import ClassVar

import diskcache
import pytest
from pydantic import BaseModel

import cluster.console
import cluster.repl
from agents.assembly import RuntimePorts, build_session
from agents.codec import encode_messages, unpack
from agents.config import load_settings
from agents.errors import ConfigError
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.modes import Mode
from agents.snapshot_store import DiskSnapshotStore, SnapshotError
from agents.state_reminders import told_state
from cluster.cli import main
from tests.fakes import trust_workspace
from tools import ExecutionDomain, ToolOutput
from tools.recall import RecallTool
from tools.registry import default_workspace_tools
from tools.write import WriteInput

# -- helpers -----------------------------------------------------------------------------


class _Query(BaseModel):
    query: str = ""


class _CustomTool:
    input_model: ClassVar[type[BaseModel]] = _Query
    is_read_only: ClassVar[bool] = True
    execution_domain: ClassVar = ExecutionDomain.LOCAL
    root_only: ClassVar[bool] = False

    async def run(self, args: BaseModel, ctx) -> ToolOutput:
        return ToolOutput(content=f"{self.name}: {args.query}")


class OldSearch(_CustomTool):
    name: ClassVar[str] = "OldSearch"
    description: ClassVar[str] = "Search the old index."


class NewSearch(_CustomTool):
    name: ClassVar[str] = "NewSearch"
    description: ClassVar[str] = "Search the new index."


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ws.resolve()


def _script(tmp_path: Path, turns: list[dict], *, final: str = "Done.", judge: list[dict] | None = None) -> Path:
    """(Re)write the one script file; a resumed session replays it from its start."""
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": turns, "final_text": final, "judge": judge or []}))
    return path


def _settings(tmp_path: Path, ws: Path, permissions: dict | None = None, **extra):
    overrides = {
        "model": f"scripted:{tmp_path / 'script.json'}",
        "home": str(tmp_path / "home"),
        "permissions": permissions or {"mode": "bypass"},
        **extra,
    }
    return load_settings(ws, overrides)


def _build(settings, ws: Path, **kwargs):
    events: list = []
    session = build_session(settings, ws, emit=events.append, **kwargs)
    return session, events


async def _resume(settings, ws: Path, session_id: str, **kwargs):
    """What `--resume ID` does: build for the current environment, load, restore."""
    session, events = _build(settings, ws, session_id=session_id, **kwargs)
    loaded = await session.ports.snapshots.aload(session_id)
    notices = session.restore(loaded.state)
    return session, events, loaded, notices


def _of(events: list, kind: str) -> list:
    return [e for e in events if e.type == kind]


def _store(tmp_path: Path) -> DiskSnapshotStore:
    return DiskSnapshotStore(tmp_path / "home" / "snapshots")


def _write_call(path: str = "out.txt", content: str = "written after approval") -> dict:
    return {"name": "Write", "input": {"path": path, "content": content}}


def _cli_config(ws: Path, tmp_path: Path, permissions: str = 'mode = "bypass"') -> None:
    """A workspace config, so the CLI and build_session see the same settings (the
    workspace is trusted: its model, home and permission mode are not inert settings)."""
    trust_workspace(ws)
    (ws / ".workingset").mkdir(exist_ok=True)
    (ws / ".workingset" / "config.toml").write_text(
        f'model = "scripted:{tmp_path / "script.json"}"\nhome = "{tmp_path / "home"}"\n\n[permissions]\n{permissions}\n'
    )


def _events(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def _cli_session(tmp_path: Path, ws: Path, capsys, prompt: str = "hello") -> str:
    assert main(["run", prompt, "--cwd", str(ws), "--json"]) == 0
    return _events(capsys.readouterr().out)[0]["session_id"]


def _feed_lines(monkeypatch, lines: list[str]) -> list[str]:
    """Answers the REPL's and the permission prompt's questions, in order; end of input after."""
    queue = list(lines)
    asked: list[str] = []

    async def ask_line(prompt: str) -> str | None:
        asked.append(prompt)
        return queue.pop(0) if queue else None

    monkeypatch.setattr(cluster.repl, "ask_line", ask_line)
    monkeypatch.setattr(cluster.console, "ask_line", ask_line)
    return asked


def _corrupt_current(tmp_path: Path, session_id: str) -> tuple[str, bytes]:
    with diskcache.Cache(str(tmp_path / "home" / "snapshots" / session_id)) as cache:
        current = unpack(cache.get("session"))["current"]
        damaged = cache.get("v:" + current)[:-10]  # truncated
        cache.set("v:" + current, damaged)
    return current, damaged


# -- exact round trip through a real session -------------------------------------------------


async def test_every_tool_batch_and_outer_turn_is_saved_and_resume_restores_the_conversation_exactly(tmp_path):
    ws = _workspace(tmp_path)
    (ws / "notes.txt").write_text("alpha\n")
    _script(tmp_path, [{"text": "Reading.", "tool_calls": [{"name": "Read", "input": {"path": "notes.txt"}}]}, {"text": "It says alpha."}])
    settings = _settings(tmp_path, ws)
    first, events = _build(settings, ws)
    await first.run_turn("what does notes.txt say?")
    await first.run_turn("thanks")
    saved = _of(events, "snapshot")
    # A batch of reads is saved once it completes (not before it starts: run again, it repeats nothing).
    assert [(e.saved, e.reason) for e in saved] == [(True, "tool_batch"), (True, "end_turn"), (True, "end_turn")]

    second, _, loaded, notices = await _resume(settings, ws, first.session_id)
    assert notices == [] and loaded.problem is None and loaded.version == saved[-1].version
    assert encode_messages(second.conversation) == encode_messages(first.conversation)
    assert (second.usage, second.model_calls, second.mode) == (first.usage, first.model_calls, first.mode)
    assert second.kit.permissions.grants == first.kit.permissions.grants


async def test_a_resumed_session_compiles_the_same_working_set(tmp_path):
    ws = _workspace(tmp_path)
    (ws / "AGENTS.md").write_text("Run tests with pytest -q.\n")
    _script(tmp_path, [{"text": "Listing.", "tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}, {"text": "One file."}])
    settings = _settings(tmp_path, ws)
    first, _ = _build(settings, ws)
    await first.run_turn("list the files")
    first.set_goal("AGENTS.md is summarized")  # active: the judge has not seen it yet
    await first.save_snapshot("goal set")
    before = (await first.compile_working_set()).request

    second, _, _, _ = await _resume(settings, ws, first.session_id)
    after = (await second.compile_working_set()).request
    assert after.system == before.system
    assert after.tools == before.tools
    assert encode_messages(after.messages) == encode_messages(before.messages)


async def test_a_met_goal_stays_out_of_the_resumed_system_prompt(tmp_path):
    ws = _workspace(tmp_path)
    _script(tmp_path, [{"text": "It holds."}], judge=[{"verdict": "met", "reason": "shown"}])
    settings = _settings(tmp_path, ws)
    first, _ = _build(settings, ws)
    first.set_goal("the answer is shown")
    await first.run_turn("show it")
    assert first.goal.status == "met"
    before = (await first.compile_working_set()).request

    second, _, _, _ = await _resume(settings, ws, first.session_id)
    assert second.goal == first.goal
    assert (await second.compile_working_set()).request.system == before.system


# -- the current environment wins ---------------------------------------------------------


async def test_resume_rebuilds_tools_and_prompt_from_the_current_environment(tmp_path):
    ws = _workspace(tmp_path)
    _script(tmp_path, [{"tool_calls": [{"name": "OldSearch", "input": {"query": "q"}}]}, {"text": "found"}])
    settings = _settings(tmp_path, ws)
    base = [*default_workspace_tools(), RecallTool()]
    first, _ = _build(settings, ws, tools=[*base, OldSearch()])
    await first.run_turn("search")

    (ws / "AGENTS.md").write_text("Instructions written after the snapshot.\n")
    second, _, _, _ = await _resume(settings, ws, first.session_id, tools=[*base, NewSearch()])
    request = (await second.compile_working_set()).request
    names = [t.name for t in request.tools]
    assert "NewSearch" in names and "OldSearch" not in names
    assert "- NewSearch (read-only)" in request.system and "OldSearch (" not in request.system
    assert "Instructions written after the snapshot." in request.system
    assert second.conversation == first.conversation  # the old call stays in the record


async def test_a_call_to_a_tool_removed_since_the_snapshot_is_an_error_result(tmp_path):
    ws = _workspace(tmp_path)
    _script(tmp_path, [])
    settings = _settings(tmp_path, ws)
    base = [*default_workspace_tools(), RecallTool()]
    first, _ = _build(settings, ws, tools=[*base, OldSearch()])
    await first.run_turn("hello")

    _script(tmp_path, [{"tool_calls": [{"name": "OldSearch", "input": {"query": "q"}, "id": "toolu_old"}]}, {"text": "ok"}])
    second, _, _, _ = await _resume(settings, ws, first.session_id, tools=[*base, NewSearch()])
    outcome = await second.run_turn("search again")
    result = [r for m in second.conversation for r in m.tool_results_in if r.tool_use_id == "toolu_old"][0]
    assert outcome.reason == "end_turn" and result.is_error and "OldSearch" in result.content


async def test_a_different_model_is_used_with_a_notice(tmp_path):
    ws = _workspace(tmp_path)
    _script(tmp_path, [])
    first, _ = _build(_settings(tmp_path, ws), ws)
    await first.run_turn("hello")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"turns": []}))
    second, events, _, notices = await _resume(_settings(tmp_path, ws, model=f"scripted:{other}"), ws, first.session_id)
    assert notices == [f"the session was saved with model {first.ports.model.name}; it continues with scripted:{other}"]
    assert [e.text for e in _of(events, "notice")] == notices


# -- permissions ---------------------------------------------------------------------------


async def _granted_session(tmp_path: Path, ws: Path, permissions: dict):
    """A session where the user answered 'always' for Write(out.txt)."""
    _script(tmp_path, [{"tool_calls": [_write_call()]}, {"text": "written"}])
    first, _ = _build(_settings(tmp_path, ws, permissions), ws)
    assert (await first.run_turn("write it")).reason == "permission"
    assert (await first.answer_permission(True, always=True)).reason == "end_turn"
    assert [g.text for g in first.kit.permissions.grants] == ["Write(out.txt)"]
    return first


async def test_grants_come_back_when_the_permission_rules_are_unchanged(tmp_path):
    ws = _workspace(tmp_path)
    permissions = {"mode": "default", "deny": ["Bash(rm:*)"]}
    first = await _granted_session(tmp_path, ws, permissions)
    second, _, _, notices = await _resume(_settings(tmp_path, ws, permissions), ws, first.session_id)
    assert notices == []
    assert [g.text for g in second.kit.permissions.grants] == ["Write(out.txt)"]


async def test_grants_are_dropped_with_a_notice_when_the_permission_rules_changed(tmp_path):
    ws = _workspace(tmp_path)
    first = await _granted_session(tmp_path, ws, {"mode": "default"})
    second, events, _, notices = await _resume(_settings(tmp_path, ws, {"mode": "default", "deny": ["Bash(rm:*)"]}), ws, first.session_id)
    assert second.kit.permissions.grants == []
    assert notices == ["permission rules changed since the snapshot; grants given then were dropped: Write(out.txt)"]
    assert [e.text for e in _of(events, "notice")] == notices
    decision = second.kit.permissions.decide(second.kit.registry.get("Write"), WriteInput(path="out.txt", content="x"), ws)
    assert decision.effect == "ask"


# -- plan mode, goal and a parked permission survive resume ---------------------------------------


async def test_plan_mode_goal_and_a_parked_call_survive_resume_and_the_call_runs_on_approval(tmp_path):
    ws = _workspace(tmp_path)
    (ws / "README.md").write_text("setup: run make\n")
    permissions = {"mode": "default", "ask": ["Read"]}
    _script(tmp_path, [{"text": "Let me read.", "tool_calls": [{"name": "Read", "input": {"path": "README.md"}, "id": "toolu_r"}]}])
    first, _ = _build(_settings(tmp_path, ws, permissions), ws, mode=Mode.PLAN)
    first.set_goal("the plan covers setup")
    assert (await first.run_turn("plan the change")).reason == "permission"
    goal = first.goal.model_copy()

    _script(tmp_path, [{"text": "Plan: document `make`."}])  # what the model says after the resume
    second, _, loaded, notices = await _resume(_settings(tmp_path, ws, permissions), ws, first.session_id)
    assert loaded.state.reason == "permission" and notices == []
    assert second.mode is Mode.PLAN and second.goal == goal
    assert second.pending.asks == ["toolu_r"]
    request = (await second.compile_working_set()).request
    told = told_state(request.messages)  # the state block the model was shown, saved with the conversation
    assert told.mode == "plan" and told.goal == "the plan covers setup"
    assert {"Read", "Grep"} <= set(told.plan_tools) and set(told.plan_tools).isdisjoint({"Write", "Edit", "Bash", "Agent"})

    outcome = await second.answer_permission(True)
    assert (outcome.reason, outcome.final_text) == ("end_turn", "Plan: document `make`.")
    result = second.conversation[2].tool_results_in[0]
    assert result.tool_use_id == "toolu_r" and "setup: run make" in result.content and not result.is_error
    assert second.pending is None and second.mode is Mode.PLAN


async def test_a_parked_write_runs_after_resume_on_approval_and_the_goal_is_judged(tmp_path):
    ws = _workspace(tmp_path)
    permissions = {"mode": "default"}
    _script(tmp_path, [{"text": "Writing.", "tool_calls": [_write_call()]}])
    first, _ = _build(_settings(tmp_path, ws, permissions), ws)
    first.set_goal("out.txt exists")
    await first.run_turn("write out.txt")
    assert not (ws / "out.txt").exists()

    _script(tmp_path, [{"text": "out.txt is written."}], judge=[{"verdict": "met", "reason": "the Write result shows it"}])
    second, events, _, _ = await _resume(_settings(tmp_path, ws, permissions), ws, first.session_id)
    outcome = await second.answer_permission(True)
    assert outcome.reason == "end_turn"
    assert (ws / "out.txt").read_text() == "written after approval"
    assert [e.verdict for e in _of(events, "goal_verdict")] == ["met"] and second.goal.status == "met"
    assert _store(tmp_path).load(first.session_id).state.pending is None


async def test_a_parked_call_is_decided_again_when_the_rules_changed(tmp_path):
    ws = _workspace(tmp_path)
    _script(tmp_path, [{"tool_calls": [_write_call()]}])
    first, _ = _build(_settings(tmp_path, ws, {"mode": "default"}), ws)
    await first.run_turn("write")

    _script(tmp_path, [{"text": "done"}])
    second, _, _, notices = await _resume(_settings(tmp_path, ws, {"mode": "default", "allow": ["Write"]}), ws, first.session_id)
    assert notices == ["the parked call Write was decided again under the current rules: allow"]
    assert second.pending.asks == [] and len(second.pending.allowed) == 1
    await second.continue_parked()
    assert (ws / "out.txt").exists()


async def test_a_parked_call_denied_by_the_current_rules_does_not_run(tmp_path):
    ws = _workspace(tmp_path)
    _script(tmp_path, [{"tool_calls": [_write_call()]}])
    first, _ = _build(_settings(tmp_path, ws, {"mode": "default"}), ws)
    await first.run_turn("write")

    _script(tmp_path, [{"text": "ok, not written"}])
    second, _, _, notices = await _resume(_settings(tmp_path, ws, {"mode": "default", "deny": ["Write"]}), ws, first.session_id)
    assert notices == ["the parked call Write was decided again under the current rules: deny"]
    await second.continue_parked()
    assert not (ws / "out.txt").exists()
    result = second.conversation[-2].tool_results_in[0]
    assert result.is_error and "Permission denied" in result.content


async def test_a_parked_call_to_a_tool_removed_since_cannot_run_and_says_so(tmp_path):
    ws = _workspace(tmp_path)
    permissions = {"mode": "default", "ask": ["OldSearch"]}
    base = [*default_workspace_tools(), RecallTool()]
    _script(tmp_path, [{"tool_calls": [{"name": "OldSearch", "input": {"query": "q"}}]}])
    first, _ = _build(_settings(tmp_path, ws, permissions), ws, tools=[*base, OldSearch()])
    await first.run_turn("search")

    _script(tmp_path, [{"text": "fine"}])
    second, _, _, notices = await _resume(_settings(tmp_path, ws, permissions), ws, first.session_id, tools=base)
    assert len(notices) == 1 and notices[0].startswith("the parked call OldSearch cannot run any more")
    assert (await second.continue_parked()).reason == "end_turn"


# -- /clear, /compact, subagents -------------------------------------------------------------


async def test_clear_is_saved_at_once_and_the_old_conversation_stays_in_history(tmp_path):
    ws = _workspace(tmp_path)
    _script(tmp_path, [{"text": "hi there"}])
    first, events = _build(_settings(tmp_path, ws), ws)
    first.set_goal("say hi")
    await first.run_turn("hello")
    before = list(first.conversation)
    await first.clear()
    assert _of(events, "snapshot")[-1].reason == "clear"

    store = _store(tmp_path)
    current = store.load(first.session_id).state
    assert (current.conversation, current.goal, current.pending, current.reason) == ([], None, None, "clear")
    history = store.history(first.session_id)
    assert [v.reason for v in history] == ["clear", "end_turn"]
    assert store.load(first.session_id, history[1].version).state.conversation == before


async def test_clear_is_undone_by_restoring_the_previous_version(tmp_path):
    ws = _workspace(tmp_path)
    _script(tmp_path, [{"text": "hi there"}])
    settings = _settings(tmp_path, ws)
    first, _ = _build(settings, ws)
    await first.run_turn("hello")
    before = list(first.conversation)
    await first.clear()

    store = _store(tmp_path)
    cleared, turn = (v.version for v in store.history(first.session_id))
    store.restore(first.session_id, turn)
    second, _, _, _ = await _resume(settings, ws, first.session_id)
    assert second.conversation == before
    history = store.history(first.session_id)
    assert [(v.version, v.reason) for v in history[1:]] == [(cleared, "clear"), (turn, "end_turn")]
    assert history[0].reason == f"restored {turn}"


async def test_manual_compact_result_is_saved(tmp_path):
    ws = _workspace(tmp_path)
    _script(tmp_path, [])
    first, events = _build(_settings(tmp_path, ws), ws)
    first.conversation = [Message.user("investigate")]
    for n in range(10):
        first.conversation.append(Message.assistant(TextBlock(text=f"step {n}"), ToolUseBlock(id=f"h{n}", name="Read", input={"path": f"f{n}"})))
        first.conversation.append(Message.tool_results([ToolResultBlock(tool_use_id=f"h{n}", content=f"{n}:" + "x" * 200)]))
    result = await first.compact_now()
    assert result.changed and result.failure is None
    assert _of(events, "snapshot")[-1].reason == "compact"
    assert _store(tmp_path).load(first.session_id).state.conversation == first.conversation


async def test_a_failed_manual_compact_writes_no_snapshot(tmp_path):
    ws = _workspace(tmp_path)
    _script(tmp_path, [])
    first, events = _build(_settings(tmp_path, ws), ws)
    first.conversation = [Message.user("short")]
    await first.compact_now()
    assert _of(events, "snapshot") == []


async def test_subagents_never_write_snapshots(tmp_path):
    ws = _workspace(tmp_path)
    path = tmp_path / "script.json"
    path.write_text(json.dumps({
        "turns": [{"tool_calls": [{"name": "Agent", "input": {"description": "look", "prompt": "List the files."}}]}, {"text": "root done"}],
        "subagents": {"look": {"turns": [{"tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}], "final_text": "child done"}},
    }))
    root, events = _build(_settings(tmp_path, ws), ws)
    await root.run_turn("delegate")
    assert _of(events, "subagent_finished")
    assert {e.session_id for e in _of(events, "snapshot")} == {root.session_id}
    assert [d.name for d in (tmp_path / "home" / "snapshots").iterdir()] == [root.session_id]
    assert [s.session_id for s in _store(tmp_path).sessions()] == [root.session_id]


async def test_history_of_a_session_is_bounded_by_the_snapshot_settings(tmp_path):
    ws = _workspace(tmp_path)
    _script(tmp_path, [])
    settings = _settings(tmp_path, ws, snapshots={"max_history": 2})
    first, _ = _build(settings, ws)
    for n in range(5):
        await first.run_turn(f"turn {n}")
    assert len(_store(tmp_path).history(first.session_id)) == 3


# -- faults ----------------------------------------------------------------------------------


async def test_a_snapshot_from_another_workspace_is_refused_naming_both(tmp_path):
    ws = _workspace(tmp_path)
    other = (tmp_path / "other").resolve()
    other.mkdir()
    _script(tmp_path, [])
    first, _ = _build(_settings(tmp_path, ws), ws)
    await first.run_turn("hello")

    second, _ = _build(_settings(tmp_path, other), other, session_id=first.session_id)
    state = (await second.ports.snapshots.aload(first.session_id)).state
    with pytest.raises(ConfigError) as caught:
        second.restore(state)
    assert str(ws) in str(caught.value) and str(other) in str(caught.value)
    assert second.conversation == []


class _FailingStore:
    """A SnapshotStore whose disk is full."""

    async def asave(self, state):
        raise SnapshotError("disk full")

    async def aload(self, session_id, version=None):
        raise SnapshotError("disk full")


async def test_a_failing_store_is_reported_and_the_session_goes_on(tmp_path):
    ws = _workspace(tmp_path)
    _script(tmp_path, [{"text": "first"}, {"text": "second"}])
    session, events = _build(_settings(tmp_path, ws), ws, runtime=RuntimePorts(snapshots=_FailingStore()))
    assert (await session.run_turn("one")).final_text == "first"
    assert (await session.run_turn("two")).final_text == "second"
    failed = _of(events, "snapshot")
    assert [(e.saved, e.error) for e in failed] == [(False, "state not saved: disk full")] * 2


async def test_a_store_directory_that_cannot_be_created_is_reported_and_the_session_goes_on(tmp_path):
    ws = _workspace(tmp_path)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "snapshots").write_text("a regular file where the store's directory should be")
    _script(tmp_path, [{"text": "answered"}])
    session, events = _build(_settings(tmp_path, ws), ws)
    outcome = await session.run_turn("hello")
    assert outcome.final_text == "answered"
    [event] = _of(events, "snapshot")
    assert not event.saved and event.error.startswith("state not saved:")


async def test_a_corrupted_current_falls_back_to_the_newest_intact_version(tmp_path):
    ws = _workspace(tmp_path)
    _script(tmp_path, [{"text": "one"}, {"text": "two"}])
    settings = _settings(tmp_path, ws)
    first, _ = _build(settings, ws)
    await first.run_turn("first")
    intact = list(first.conversation)
    await first.run_turn("second")
    current, damaged = _corrupt_current(tmp_path, first.session_id)

    second, _, loaded, _ = await _resume(settings, ws, first.session_id)
    assert current in loaded.problem and "cannot be decoded" in loaded.problem
    assert second.conversation == intact
    with diskcache.Cache(str(tmp_path / "home" / "snapshots" / first.session_id)) as cache:
        assert cache.get("v:" + current) == damaged


# -- through the CLI -------------------------------------------------------------------------


def test_cli_resume_continues_the_saved_conversation(tmp_path, capsys):
    ws = _workspace(tmp_path)
    _cli_config(ws, tmp_path)
    _script(tmp_path, [{"text": "first answer"}])
    sid = _cli_session(tmp_path, ws, capsys, "remember 42")

    _script(tmp_path, [{"text": "you said 42"}])
    assert main(["run", "what did I say?", "--cwd", str(ws), "--resume", sid, "--json"]) == 0
    events = _events(capsys.readouterr().out)
    assert events[0]["session_id"] == sid and events[-1]["final_text"] == "you said 42"
    texts = [m.text for m in _store(tmp_path).load(sid).state.conversation]
    assert texts == ["remember 42", "first answer", "what did I say?", "you said 42"]


def test_cli_continue_picks_the_latest_session_of_this_workspace(tmp_path, capsys):
    ws = _workspace(tmp_path)
    _cli_config(ws, tmp_path)
    _script(tmp_path, [])
    _cli_session(tmp_path, ws, capsys, "older")
    latest = _cli_session(tmp_path, ws, capsys, "newer")
    other = (tmp_path / "other").resolve()
    other.mkdir()
    _cli_config(other, tmp_path)
    _cli_session(tmp_path, other, capsys, "elsewhere")

    assert main(["run", "again", "--cwd", str(ws), "--continue", "--json"]) == 0
    assert _events(capsys.readouterr().out)[0]["session_id"] == latest
    assert [m.text for m in _store(tmp_path).load(latest).state.conversation][:1] == ["newer"]


def test_cli_continue_without_a_saved_session_is_a_clear_error(tmp_path, capsys):
    ws = _workspace(tmp_path)
    _cli_config(ws, tmp_path)
    _script(tmp_path, [])
    assert main(["run", "x", "--cwd", str(ws), "--continue"]) == 2
    assert f"no saved session for {ws}" in capsys.readouterr().err


def test_cli_resume_of_an_unknown_session_is_a_clear_error(tmp_path, capsys):
    ws = _workspace(tmp_path)
    _cli_config(ws, tmp_path)
    _script(tmp_path, [])
    assert main(["run", "x", "--cwd", str(ws), "--resume", "nosuchsession"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot resume nosuchsession: no snapshot of session nosuchsession" in err


def test_cli_resume_from_another_workspace_is_refused_naming_both(tmp_path, capsys):
    ws = _workspace(tmp_path)
    _cli_config(ws, tmp_path)
    _script(tmp_path, [])
    sid = _cli_session(tmp_path, ws, capsys)
    other = (tmp_path / "other").resolve()
    other.mkdir()
    _cli_config(other, tmp_path)
    before = [v.version for v in _store(tmp_path).history(sid)]

    assert main(["run", "x", "--cwd", str(other), "--resume", sid]) == 2
    err = capsys.readouterr().err
    assert f"belongs to workspace {ws}, not {other}" in err and "Traceback" not in err
    assert [v.version for v in _store(tmp_path).history(sid)] == before


def _two_turn_session_with_a_corrupted_current(tmp_path, capsys):
    """A CLI session of two turns ("first" → "one", "second" → current) whose current
    version is then damaged; returns (workspace, session id, current version, its bytes)."""
    ws = _workspace(tmp_path)
    _cli_config(ws, tmp_path)
    _script(tmp_path, [{"text": "one"}, {"text": "two"}])
    sid = _cli_session(tmp_path, ws, capsys, "first")
    main(["run", "second", "--cwd", str(ws), "--resume", sid, "--json"])
    capsys.readouterr()
    current, damaged = _corrupt_current(tmp_path, sid)
    return ws, sid, current, damaged


def test_cli_resume_of_a_corrupted_current_says_so_and_uses_the_newest_intact_version(tmp_path, capsys):
    ws, sid, current, damaged = _two_turn_session_with_a_corrupted_current(tmp_path, capsys)

    _script(tmp_path, [{"text": "three"}])
    assert main(["run", "third", "--cwd", str(ws), "--resume", sid, "--json"]) == 0
    notices = [e["text"] for e in _events(capsys.readouterr().out) if e["type"] == "notice"]
    assert len(notices) == 1 and current in notices[0] and "newest intact version" in notices[0]
    store = _store(tmp_path)
    assert [m.text for m in store.load(sid).state.conversation] == ["first", "one", "third", "three"]
    history = store.history(sid)
    assert history[1].version == current and history[1].reason == "(corrupt)"
    with diskcache.Cache(str(tmp_path / "home" / "snapshots" / sid)) as cache:
        assert cache.get("v:" + current) == damaged


def test_cli_human_output_shows_the_fallback_notice(tmp_path, capsys):
    ws = _workspace(tmp_path)
    _cli_config(ws, tmp_path)
    _script(tmp_path, [])
    sid = _cli_session(tmp_path, ws, capsys, "first")
    main(["run", "second", "--cwd", str(ws), "--resume", sid, "--json"])
    capsys.readouterr()
    current, _ = _corrupt_current(tmp_path, sid)

    assert main(["run", "third", "--cwd", str(ws), "--resume", sid]) == 0
    out = " ".join(capsys.readouterr().out.split())  # undo the console's line wrapping
    assert current in out and "newest intact version" in out


def test_cli_says_the_state_was_not_saved_when_the_store_cannot_be_written(tmp_path, capsys):
    ws = _workspace(tmp_path)
    _cli_config(ws, tmp_path)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "snapshots").write_text("not a directory")
    _script(tmp_path, [{"text": "answered anyway"}])
    assert main(["run", "hello", "--cwd", str(ws)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "answered anyway" in out and "state not saved" in out


def test_cli_json_reports_a_failed_save_as_a_snapshot_event(tmp_path, capsys):
    ws = _workspace(tmp_path)
    _cli_config(ws, tmp_path)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "snapshots").write_text("not a directory")
    _script(tmp_path, [{"text": "answered anyway"}])
    assert main(["run", "hello", "--cwd", str(ws), "--json"]) == 0
    [event] = [e for e in _events(capsys.readouterr().out) if e["type"] == "snapshot"]
    assert event["saved"] is False and event["error"].startswith("state not saved:")


def test_repl_resume_of_a_parked_session_asks_first_and_runs_the_call_on_approval(tmp_path, capsys, monkeypatch):
    ws = _workspace(tmp_path)
    _cli_config(ws, tmp_path, 'mode = "default"')
    _script(tmp_path, [{"text": "Writing.", "tool_calls": [_write_call()]}])
    first, _ = _build(load_settings(ws), ws)
    asyncio.run(first.run_turn("write out.txt"))
    assert first.pending is not None

    _script(tmp_path, [{"text": "written."}])
    asked = _feed_lines(monkeypatch, ["y", "/exit"])
    assert main(["run", "--cwd", str(ws), "--resume", first.session_id]) == 0
    assert asked[0].startswith("Allow?")
    assert (ws / "out.txt").read_text() == "written after approval"
    assert _store(tmp_path).load(first.session_id).state.pending is None


def test_repl_clear_is_persisted_and_restore_undoes_it(tmp_path, capsys, monkeypatch):
    ws = _workspace(tmp_path)
    _cli_config(ws, tmp_path)
    _script(tmp_path, [{"text": "hi!"}])
    _feed_lines(monkeypatch, ["hello", "/clear", "/exit"])
    assert main(["run", "--cwd", str(ws), "--json"]) == 0
    sid = _events(capsys.readouterr().out)[0]["session_id"]
    store = _store(tmp_path)
    history = store.history(sid)
    assert [(v.reason, v.messages) for v in history] == [("clear", 0), ("end_turn", 2)]
    store.close()

    assert main(["sessions", "--cwd", str(ws), "restore", sid, history[1].version]) == 0
    assert f"version {history[1].version} is current again" in capsys.readouterr().out
    _script(tmp_path, [{"text": "welcome back"}])
    assert main(["run", "still there?", "--cwd", str(ws), "--continue", "--json"]) == 0
    texts = [m.text for m in _store(tmp_path).load(sid).state.conversation]
    assert texts == ["hello", "hi!", "still there?", "welcome back"]


def test_repl_resume_after_clear_returns_to_the_conversation_before_it(tmp_path, capsys, monkeypatch):
    ws = _workspace(tmp_path)
    _cli_config(ws, tmp_path)
    _script(tmp_path, [{"text": "hi!"}, {"text": "welcome back"}])
    _feed_lines(monkeypatch, ["hello", "/clear", "/resume", "still there?", "/exit"])
    assert main(["run", "--cwd", str(ws), "--json"]) == 0
    out = capsys.readouterr().out
    assert "conversation cleared (the previous one stays in the session's history; /resume returns to it)" in out
    assert "is a /clear; resuming the conversation before it" in out and "2 messages" in out
    sid = _events(out)[0]["session_id"]
    texts = [m.text for m in _store(tmp_path).load(sid).state.conversation]
    assert texts == ["hello", "hi!", "still there?", "welcome back"]


def test_repl_resume_command_loads_the_latest_snapshot(tmp_path, capsys, monkeypatch):
    ws = _workspace(tmp_path)
    _cli_config(ws, tmp_path)
    _script(tmp_path, [{"text": "noted"}])
    sid = _cli_session(tmp_path, ws, capsys, "remember 7")
    _feed_lines(monkeypatch, [f"/resume {sid}", "/exit"])
    assert main(["run", "--cwd", str(ws)]) == 0
    out = capsys.readouterr().out
    assert f"resumed {sid} (version " in out and "2 messages, mode default" in out


# -- `workingset sessions` -------------------------------------------------------------------


def test_sessions_list_show_export_and_history(tmp_path, capsys):
    ws = _workspace(tmp_path)
    _cli_config(ws, tmp_path)
    _script(tmp_path, [{"text": "the final answer"}])
    sid = _cli_session(tmp_path, ws, capsys, "a question")

    assert main(["sessions", "--cwd", str(ws), "list"]) == 0
    listing = capsys.readouterr().out
    assert sid in listing and "2 msgs" in listing and "the final answer" in listing

    assert main(["sessions", "--cwd", str(ws), "show", sid]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["session_id"], shown["messages"], shown["cwd"]) == (sid, 2, str(ws))

    assert main(["sessions", "--cwd", str(ws), "export", sid]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert [m["content"][0]["text"] for m in exported["conversation"]] == ["a question", "the final answer"]

    assert main(["sessions", "--cwd", str(ws), "export", sid, "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert f"# Session {sid}" in markdown and "## assistant\nthe final answer" in markdown

    assert main(["sessions", "--cwd", str(ws), "history", sid]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("* ") and "end_turn" in lines[0]


def test_sessions_show_of_a_corrupted_current_warns_and_shows_the_intact_version(tmp_path, capsys):
    ws = _workspace(tmp_path)
    _cli_config(ws, tmp_path)
    _script(tmp_path, [])
    sid = _cli_session(tmp_path, ws, capsys, "first")
    main(["run", "second", "--cwd", str(ws), "--resume", sid, "--json"])
    capsys.readouterr()
    current, _ = _corrupt_current(tmp_path, sid)

    assert main(["sessions", "--cwd", str(ws), "show", sid]) == 0
    out = capsys.readouterr().out
    warning, _, body = out.partition("\n")
    assert warning.startswith("warning: ") and current in warning
    assert json.loads(body)["messages"] == 2


def test_sessions_commands_on_an_unknown_session_are_clear_errors(tmp_path, capsys):
    ws = _workspace(tmp_path)
    _cli_config(ws, tmp_path)
    for action in (["show", "nope"], ["export", "nope"], ["history", "nope"], ["restore", "nope", "1"]):
        assert main(["sessions", "--cwd", str(ws), *action]) == 2
        err = capsys.readouterr().err
        assert "no snapshot of session nope" in err and "sessions list --all" in err


def test_sessions_restore_of_an_unknown_version_changes_nothing(tmp_path, capsys):
    ws = _workspace(tmp_path)
    _cli_config(ws, tmp_path)
    _script(tmp_path, [])
    sid = _cli_session(tmp_path, ws, capsys)
    before = [v.version for v in _store(tmp_path).history(sid)]
    assert main(["sessions", "--cwd", str(ws), "restore", sid, "00000000000000000001"]) == 2
    assert "00000000000000000001" in capsys.readouterr().err
    assert [v.version for v in _store(tmp_path).history(sid)] == before


def test_cli_export_of_a_corrupted_current_warns_on_stderr_and_exports_the_intact_version(tmp_path, capsys):
    ws, sid, current, _ = _two_turn_session_with_a_corrupted_current(tmp_path, capsys)

    assert main(["sessions", "--cwd", str(ws), "export", sid]) == 0
    captured = capsys.readouterr()
    assert "warning:" in captured.err and current in captured.err
    exported = json.loads(captured.out)
    assert [m["content"][0]["text"] for m in exported["conversation"]] == ["first", "one"]
