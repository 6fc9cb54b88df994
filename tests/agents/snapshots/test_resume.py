"""Resume: snapshots written by a real session (through build_session) come back into a
session rebuilt from the CURRENT environment — prompt, tools and permission rules — with
the conversation and control state exactly as they were. The CLI, REPL and `workingset
sessions` side is in test_resume_cli.py."""

import json
from pathlib import Path
from typing import ClassVar

import diskcache
import pytest
from pydantic import BaseModel

from agents.errors import ConfigError
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.modes import Mode
from agents.opening._assembly import RuntimePorts
from agents.session._reminders import told_state
from agents.settings._config import load_settings
from agents.snapshots._codec import encode_messages
from agents.snapshots._store import SnapshotError
from tests.support.builders import of_type
from tests.support.resume_support import (
    built_session,
    corrupt_current,
    make_workspace,
    snapshot_store,
    write_call,
    write_script,
)
from tools import ExecutionDomain, ToolOutput
from tools.files._write import WriteInput
from tools.recall import RecallTool
from tools.registry import default_workspace_tools

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


def _loaded_settings(tmp_path: Path, ws: Path, permissions: dict | None = None, **extra):
    overrides = {
        "model": f"scripted:{tmp_path / 'script.json'}",
        "home": str(tmp_path / "home"),
        "permissions": permissions or {"mode": "bypass"},
        **extra,
    }
    return load_settings(ws, overrides)


async def _resume(settings, ws: Path, session_id: str, **kwargs):
    """What `--resume ID` does: build for the current environment, load, restore."""
    session, events = built_session(settings, ws, session_id=session_id, **kwargs)
    loaded = await session.ports.snapshots.aload(session_id)
    notices = session.restore(loaded.state)
    return session, events, loaded, notices


# -- exact round trip through a real session -------------------------------------------------


async def test_every_tool_batch_and_outer_turn_is_saved_and_resume_restores_the_conversation_exactly(tmp_path):
    ws = make_workspace(tmp_path)
    (ws / "notes.txt").write_text("alpha\n")
    write_script(
        tmp_path,
        [
            {"text": "Reading.", "tool_calls": [{"name": "Read", "input": {"path": "notes.txt"}}]},
            {"text": "It says alpha."},
        ],
    )
    settings = _loaded_settings(tmp_path, ws)
    first, events = built_session(settings, ws)
    await first.run_turn("what does notes.txt say?")
    await first.run_turn("thanks")
    saved = of_type(events, "snapshot")
    # A batch of reads is saved once it completes (not before it starts: run again, it repeats nothing).
    assert [(e.saved, e.reason) for e in saved] == [(True, "tool_batch"), (True, "end_turn"), (True, "end_turn")]

    second, _, loaded, notices = await _resume(settings, ws, first.session_id)
    assert notices == [] and loaded.problem is None and loaded.version == saved[-1].version
    assert encode_messages(second.conversation) == encode_messages(first.conversation)
    assert (second.usage, second.model_calls, second.mode) == (first.usage, first.model_calls, first.mode)
    assert second.kit.permissions.grants == first.kit.permissions.grants


async def test_a_resumed_session_compiles_the_same_working_set(tmp_path):
    ws = make_workspace(tmp_path)
    (ws / "AGENTS.md").write_text("Run tests with pytest -q.\n")
    write_script(
        tmp_path,
        [{"text": "Listing.", "tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}, {"text": "One file."}],
    )
    settings = _loaded_settings(tmp_path, ws)
    first, _ = built_session(settings, ws)
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
    ws = make_workspace(tmp_path)
    write_script(tmp_path, [{"text": "It holds."}], judge=[{"verdict": "met", "reason": "shown"}])
    settings = _loaded_settings(tmp_path, ws)
    first, _ = built_session(settings, ws)
    first.set_goal("the answer is shown")
    await first.run_turn("show it")
    assert first.goal.status == "met"
    before = (await first.compile_working_set()).request

    second, _, _, _ = await _resume(settings, ws, first.session_id)
    assert second.goal == first.goal
    assert (await second.compile_working_set()).request.system == before.system


# -- the current environment wins ---------------------------------------------------------


async def test_resume_rebuilds_tools_and_prompt_from_the_current_environment(tmp_path):
    ws = make_workspace(tmp_path)
    write_script(tmp_path, [{"tool_calls": [{"name": "OldSearch", "input": {"query": "q"}}]}, {"text": "found"}])
    settings = _loaded_settings(tmp_path, ws)
    base = [*default_workspace_tools(), RecallTool()]
    first, _ = built_session(settings, ws, tools=[*base, OldSearch()])
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
    ws = make_workspace(tmp_path)
    write_script(tmp_path, [])
    settings = _loaded_settings(tmp_path, ws)
    base = [*default_workspace_tools(), RecallTool()]
    first, _ = built_session(settings, ws, tools=[*base, OldSearch()])
    await first.run_turn("hello")

    write_script(
        tmp_path, [{"tool_calls": [{"name": "OldSearch", "input": {"query": "q"}, "id": "toolu_old"}]}, {"text": "ok"}]
    )
    second, _, _, _ = await _resume(settings, ws, first.session_id, tools=[*base, NewSearch()])
    outcome = await second.run_turn("search again")
    result = [r for m in second.conversation for r in m.tool_results_in if r.tool_use_id == "toolu_old"][0]
    assert outcome.reason == "end_turn" and result.is_error and "OldSearch" in result.content


async def test_a_different_model_is_used_with_a_notice(tmp_path):
    ws = make_workspace(tmp_path)
    write_script(tmp_path, [])
    first, _ = built_session(_loaded_settings(tmp_path, ws), ws)
    await first.run_turn("hello")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"turns": []}))
    second, events, _, notices = await _resume(
        _loaded_settings(tmp_path, ws, model=f"scripted:{other}"), ws, first.session_id
    )
    assert notices == [f"the session was saved with model {first.ports.model.name}; it continues with scripted:{other}"]
    assert [e.text for e in of_type(events, "notice")] == notices


# -- permissions ---------------------------------------------------------------------------


async def _granted_session(tmp_path: Path, ws: Path, permissions: dict):
    """A session where the user answered 'always' for Write(out.txt)."""
    write_script(tmp_path, [{"tool_calls": [write_call()]}, {"text": "written"}])
    first, _ = built_session(_loaded_settings(tmp_path, ws, permissions), ws)
    assert (await first.run_turn("write it")).reason == "permission"
    assert (await first.answer_permission(True, always=True)).reason == "end_turn"
    assert [g.text for g in first.kit.permissions.grants] == ["Write(out.txt)"]
    return first


async def test_grants_come_back_when_the_permission_rules_are_unchanged(tmp_path):
    ws = make_workspace(tmp_path)
    permissions = {"mode": "default", "deny": ["Bash(rm:*)"]}
    first = await _granted_session(tmp_path, ws, permissions)
    second, _, _, notices = await _resume(_loaded_settings(tmp_path, ws, permissions), ws, first.session_id)
    assert notices == []
    assert [g.text for g in second.kit.permissions.grants] == ["Write(out.txt)"]


async def test_the_calls_the_user_refused_come_back_even_when_the_permission_rules_changed(tmp_path):
    ws = make_workspace(tmp_path)
    write_script(tmp_path, [{"tool_calls": [write_call()]}, {"text": "not written"}])
    first, _ = built_session(_loaded_settings(tmp_path, ws, {"mode": "default"}), ws)
    assert (await first.run_turn("write it")).reason == "permission"
    await first.answer_permission(False)
    second, _, _, _ = await _resume(
        _loaded_settings(tmp_path, ws, {"mode": "default", "deny": ["Bash(rm:*)"]}), ws, first.session_id
    )
    refused = second.kit.permissions.refused_calls()
    assert refused == first.kit.permissions.refused_calls() and refused.has("Write", "out.txt")


async def test_grants_are_dropped_with_a_notice_when_the_permission_rules_changed(tmp_path):
    ws = make_workspace(tmp_path)
    first = await _granted_session(tmp_path, ws, {"mode": "default"})
    second, events, _, notices = await _resume(
        _loaded_settings(tmp_path, ws, {"mode": "default", "deny": ["Bash(rm:*)"]}), ws, first.session_id
    )
    assert second.kit.permissions.grants == []
    assert notices == ["permission rules changed since the snapshot; grants given then were dropped: Write(out.txt)"]
    assert [e.text for e in of_type(events, "notice")] == notices
    decision = second.kit.permissions.decide(
        second.kit.registry.get("Write"), WriteInput(path="out.txt", content="x"), ws
    )
    assert decision.effect == "ask"


# -- plan mode, goal and a parked permission survive resume ---------------------------------------


async def test_plan_mode_goal_and_a_parked_call_survive_resume_and_the_call_runs_on_approval(tmp_path):
    ws = make_workspace(tmp_path)
    (ws / "README.md").write_text("setup: run make\n")
    permissions = {"mode": "default", "ask": ["Read"]}
    write_script(
        tmp_path,
        [{"text": "Let me read.", "tool_calls": [{"name": "Read", "input": {"path": "README.md"}, "id": "toolu_r"}]}],
    )
    first, _ = built_session(_loaded_settings(tmp_path, ws, permissions), ws, mode=Mode.PLAN)
    first.set_goal("the plan covers setup")
    assert (await first.run_turn("plan the change")).reason == "permission"
    goal = first.goal.model_copy()

    write_script(tmp_path, [{"text": "Plan: document `make`."}])  # what the model says after the resume
    second, _, loaded, notices = await _resume(_loaded_settings(tmp_path, ws, permissions), ws, first.session_id)
    assert loaded.state.reason == "permission" and notices == []
    assert second.mode is Mode.PLAN and second.goal == goal
    assert second.pending.asks == ["toolu_r"]
    request = (await second.compile_working_set()).request
    told = told_state(request.messages)  # the state block the model was shown, saved with the conversation
    assert told.mode == "plan" and told.goal == "the plan covers setup"
    assert {"Read", "Grep"} <= set(told.plan_tools) and set(told.plan_tools).isdisjoint(
        {"Write", "Edit", "Bash", "Agent"}
    )

    outcome = await second.answer_permission(True)
    assert (outcome.reason, outcome.final_text) == ("end_turn", "Plan: document `make`.")
    result = second.conversation[2].tool_results_in[0]
    assert result.tool_use_id == "toolu_r" and "setup: run make" in result.content and not result.is_error
    assert second.pending is None and second.mode is Mode.PLAN


async def test_a_parked_write_runs_after_resume_on_approval_and_the_goal_is_judged(tmp_path):
    ws = make_workspace(tmp_path)
    permissions = {"mode": "default"}
    write_script(tmp_path, [{"text": "Writing.", "tool_calls": [write_call()]}])
    first, _ = built_session(_loaded_settings(tmp_path, ws, permissions), ws)
    first.set_goal("out.txt exists")
    await first.run_turn("write out.txt")
    assert not (ws / "out.txt").exists()

    write_script(
        tmp_path, [{"text": "out.txt is written."}], judge=[{"verdict": "met", "reason": "the Write result shows it"}]
    )
    second, events, _, _ = await _resume(_loaded_settings(tmp_path, ws, permissions), ws, first.session_id)
    outcome = await second.answer_permission(True)
    assert outcome.reason == "end_turn"
    assert (ws / "out.txt").read_text() == "written after approval"
    assert [e.verdict for e in of_type(events, "goal_verdict")] == ["met"] and second.goal.status == "met"
    assert snapshot_store(tmp_path).load(first.session_id).state.pending is None


async def test_a_parked_call_is_decided_again_when_the_rules_changed(tmp_path):
    ws = make_workspace(tmp_path)
    write_script(tmp_path, [{"tool_calls": [write_call()]}])
    first, _ = built_session(_loaded_settings(tmp_path, ws, {"mode": "default"}), ws)
    await first.run_turn("write")

    write_script(tmp_path, [{"text": "done"}])
    second, _, _, notices = await _resume(
        _loaded_settings(tmp_path, ws, {"mode": "default", "allow": ["Write"]}), ws, first.session_id
    )
    assert notices == ["the parked call Write was decided again under the current rules: allow"]
    assert second.pending.asks == [] and len(second.pending.allowed) == 1
    await second.continue_parked()
    assert (ws / "out.txt").exists()


async def test_a_parked_call_denied_by_the_current_rules_does_not_run(tmp_path):
    ws = make_workspace(tmp_path)
    write_script(tmp_path, [{"tool_calls": [write_call()]}])
    first, _ = built_session(_loaded_settings(tmp_path, ws, {"mode": "default"}), ws)
    await first.run_turn("write")

    write_script(tmp_path, [{"text": "ok, not written"}])
    second, _, _, notices = await _resume(
        _loaded_settings(tmp_path, ws, {"mode": "default", "deny": ["Write"]}), ws, first.session_id
    )
    assert notices == ["the parked call Write was decided again under the current rules: deny"]
    await second.continue_parked()
    assert not (ws / "out.txt").exists()
    result = second.conversation[-2].tool_results_in[0]
    assert result.is_error and "Permission denied" in result.content


async def test_a_parked_call_to_a_tool_removed_since_cannot_run_and_says_so(tmp_path):
    ws = make_workspace(tmp_path)
    permissions = {"mode": "default", "ask": ["OldSearch"]}
    base = [*default_workspace_tools(), RecallTool()]
    write_script(tmp_path, [{"tool_calls": [{"name": "OldSearch", "input": {"query": "q"}}]}])
    first, _ = built_session(_loaded_settings(tmp_path, ws, permissions), ws, tools=[*base, OldSearch()])
    await first.run_turn("search")

    write_script(tmp_path, [{"text": "fine"}])
    second, _, _, notices = await _resume(_loaded_settings(tmp_path, ws, permissions), ws, first.session_id, tools=base)
    assert len(notices) == 1 and notices[0].startswith("the parked call OldSearch cannot run any more")
    assert (await second.continue_parked()).reason == "end_turn"


# -- /clear, /compact, subagents -------------------------------------------------------------


async def test_clear_is_saved_at_once_and_the_old_conversation_stays_in_history(tmp_path):
    ws = make_workspace(tmp_path)
    write_script(tmp_path, [{"text": "hi there"}])
    first, events = built_session(_loaded_settings(tmp_path, ws), ws)
    first.set_goal("say hi")
    await first.run_turn("hello")
    before = list(first.conversation)
    await first.clear()
    assert of_type(events, "snapshot")[-1].reason == "clear"

    store = snapshot_store(tmp_path)
    current = store.load(first.session_id).state
    assert (current.conversation, current.goal, current.pending, current.reason) == ([], None, None, "clear")
    history = store.history(first.session_id)
    assert [v.reason for v in history] == ["clear", "end_turn"]
    assert store.load(first.session_id, history[1].version).state.conversation == before


async def test_clear_is_undone_by_restoring_the_previous_version(tmp_path):
    ws = make_workspace(tmp_path)
    write_script(tmp_path, [{"text": "hi there"}])
    settings = _loaded_settings(tmp_path, ws)
    first, _ = built_session(settings, ws)
    await first.run_turn("hello")
    before = list(first.conversation)
    await first.clear()

    store = snapshot_store(tmp_path)
    cleared, turn = (v.version for v in store.history(first.session_id))
    store.restore(first.session_id, turn)
    second, _, _, _ = await _resume(settings, ws, first.session_id)
    assert second.conversation == before
    history = store.history(first.session_id)
    assert [(v.version, v.reason) for v in history[1:]] == [(cleared, "clear"), (turn, "end_turn")]
    assert history[0].reason == f"restored {turn}"


async def test_manual_compact_result_is_saved(tmp_path):
    ws = make_workspace(tmp_path)
    write_script(tmp_path, [])
    first, events = built_session(_loaded_settings(tmp_path, ws), ws)
    first.conversation = [Message.user("investigate")]
    for n in range(10):
        first.conversation.append(
            Message.assistant(
                TextBlock(text=f"step {n}"), ToolUseBlock(id=f"h{n}", name="Read", input={"path": f"f{n}"})
            )
        )
        first.conversation.append(
            Message.tool_results([ToolResultBlock(tool_use_id=f"h{n}", content=f"{n}:" + "x" * 200)])
        )
    result = await first.compact_now()
    assert result.changed and result.failure is None
    assert of_type(events, "snapshot")[-1].reason == "compact"
    assert snapshot_store(tmp_path).load(first.session_id).state.conversation == first.conversation


async def test_a_failed_manual_compact_writes_no_snapshot(tmp_path):
    ws = make_workspace(tmp_path)
    write_script(tmp_path, [])
    first, events = built_session(_loaded_settings(tmp_path, ws), ws)
    first.conversation = [Message.user("short")]
    await first.compact_now()
    assert of_type(events, "snapshot") == []


async def test_subagents_never_write_snapshots(tmp_path):
    ws = make_workspace(tmp_path)
    path = tmp_path / "script.json"
    path.write_text(
        json.dumps(
            {
                "turns": [
                    {"tool_calls": [{"name": "Agent", "input": {"description": "look", "prompt": "List the files."}}]},
                    {"text": "root done"},
                ],
                "subagents": {
                    "look": {
                        "turns": [{"tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}],
                        "final_text": "child done",
                    }
                },
            }
        )
    )
    root, events = built_session(_loaded_settings(tmp_path, ws), ws)
    await root.run_turn("delegate")
    assert of_type(events, "subagent_finished")
    assert {e.session_id for e in of_type(events, "snapshot")} == {root.session_id}
    assert [d.name for d in (tmp_path / "home" / "snapshots").iterdir()] == [root.session_id]
    assert [s.session_id for s in snapshot_store(tmp_path).sessions()] == [root.session_id]


async def test_history_of_a_session_is_bounded_by_the_snapshot_settings(tmp_path):
    ws = make_workspace(tmp_path)
    write_script(tmp_path, [])
    settings = _loaded_settings(tmp_path, ws, snapshots={"max_history": 2})
    first, _ = built_session(settings, ws)
    for n in range(5):
        await first.run_turn(f"turn {n}")
    assert len(snapshot_store(tmp_path).history(first.session_id)) == 3


# -- faults ----------------------------------------------------------------------------------


async def test_a_snapshot_from_another_workspace_is_refused_naming_both(tmp_path):
    ws = make_workspace(tmp_path)
    other = (tmp_path / "other").resolve()
    other.mkdir()
    write_script(tmp_path, [])
    first, _ = built_session(_loaded_settings(tmp_path, ws), ws)
    await first.run_turn("hello")

    second, _ = built_session(_loaded_settings(tmp_path, other), other, session_id=first.session_id)
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

    async def arelease(self, session_id):
        raise SnapshotError("disk full")


async def test_a_failing_store_is_reported_and_the_session_goes_on(tmp_path):
    ws = make_workspace(tmp_path)
    write_script(tmp_path, [{"text": "first"}, {"text": "second"}])
    session, events = built_session(_loaded_settings(tmp_path, ws), ws, runtime=RuntimePorts(snapshots=_FailingStore()))
    assert (await session.run_turn("one")).final_text == "first"
    assert (await session.run_turn("two")).final_text == "second"
    failed = of_type(events, "snapshot")
    assert [(e.saved, e.error) for e in failed] == [(False, "state not saved: disk full")] * 2


async def test_a_store_directory_that_cannot_be_created_is_reported_and_the_session_goes_on(tmp_path):
    ws = make_workspace(tmp_path)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "snapshots").write_text("a regular file where the store's directory should be")
    write_script(tmp_path, [{"text": "answered"}])
    session, events = built_session(_loaded_settings(tmp_path, ws), ws)
    outcome = await session.run_turn("hello")
    assert outcome.final_text == "answered"
    [event] = of_type(events, "snapshot")
    assert not event.saved and event.error.startswith("state not saved:")


async def test_a_corrupted_current_falls_back_to_the_newest_intact_version(tmp_path):
    ws = make_workspace(tmp_path)
    write_script(tmp_path, [{"text": "one"}, {"text": "two"}])
    settings = _loaded_settings(tmp_path, ws)
    first, _ = built_session(settings, ws)
    await first.run_turn("first")
    intact = list(first.conversation)
    await first.run_turn("second")
    current, damaged = corrupt_current(tmp_path, first.session_id)

    second, _, loaded, _ = await _resume(settings, ws, first.session_id)
    assert current in loaded.problem and "cannot be decoded" in loaded.problem
    assert second.conversation == intact
    with diskcache.Cache(str(tmp_path / "home" / "snapshots" / first.session_id)) as cache:
        assert cache.get("v:" + current) == damaged
