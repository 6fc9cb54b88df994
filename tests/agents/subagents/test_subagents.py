"""Subagents: a child derived from its parent, isolated, bounded, and returning only its final text."""

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

import agents.opening._blueprint
from agents.compaction import ExtractiveSummarizer
from agents.messages import Message, TextBlock, ToolUseBlock
from agents.opening._assembly import build_session
from agents.permissions import PermissionRuntime
from agents.ports import SubagentRequest
from agents.session._loop import Session
from agents.session._tool_batch import PermissionAnswer
from agents.settings._config import SessionSettings, SubagentSettings, WorkingsetSettings
from agents.sources._system_prompt import SystemPrompt, base_section, tool_catalog_section
from agents.subagents._budgets import Budget
from agents.subagents._spawner import AgentTool, InProcessSpawner, SessionBlueprint, in_process_spawners
from agents.tokens import CharRatioEstimator
from tests.support.builders import agent_call, of_type, subagent_script
from tests.support.fakes import RecordingModel, local_session
from tools import (
    ExecutionDomain,
    LocalToolExecutor,
    ToolContext,
    ToolOutput,
    ToolRegistry,
    default_workspace_tools,
)
from tools.recall import RecallTool

# -- helpers -----------------------------------------------------------------------------


class _Note(BaseModel):
    note: str = ""


class MemoryWrite:
    """A root-only fake tool (like a memory write)."""

    name = "MemoryWrite"
    description = "Write a project memory. Root only."
    input_model = _Note
    is_read_only = False
    execution_domain = ExecutionDomain.LOCAL
    root_only = True

    async def run(self, args: BaseModel, ctx) -> ToolOutput:
        return ToolOutput(content="remembered")


def _build(tmp_path: Path, script: Path, *, permissions=None, subagents=None, child_approver=None, tools=None):
    events: list = []
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    settings = WorkingsetSettings(
        model=f"scripted:{script}",
        home=tmp_path / "home",
        permissions=permissions or {"mode": "bypass"},
        subagents=subagents or {},
    )
    session = build_session(settings, workspace, emit=events.append, child_approver=child_approver, tools=tools)
    return session, events, workspace


def _root_results(session: Session) -> list:
    return [r for m in session.conversation for r in m.tool_results_in]


def _child_results(events, root: Session) -> list:
    return [e for e in events if e.type == "tool_result" and e.session_id != root.session_id]


@pytest.fixture
def children(monkeypatch) -> list[Session]:
    """Every child Session made while the test runs (roots and children are both
    assembled by agents.opening._blueprint; only children are kept)."""
    made: list[Session] = []

    class RecordedSession(Session):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            if self.kit.is_child:
                made.append(self)

    monkeypatch.setattr(agents.opening._blueprint, "Session", RecordedSession)
    return made


def _tree(tmp_path, root_model, child_model, *, max_depth=3, tools=None, tree_max_tokens=None, subagents=None):
    """A root Session wired by hand around an InProcessSpawner whose children use `child_model`."""
    events: list = []
    base_tools = tools or default_workspace_tools()
    tree = Budget.tree("root", max_tokens=tree_max_tokens)
    blueprint = SessionBlueprint(
        model_for=lambda spec, role: child_model,
        executor=LocalToolExecutor(),
        tools=base_tools,
        tool_context=ToolContext(workspace=tmp_path),
        summarizer=ExtractiveSummarizer(),
        counter=CharRatioEstimator(),
        settings=SessionSettings(),
        subagents=subagents or SubagentSettings(max_depth=max_depth),
        permissions=PermissionRuntime.from_texts(mode="bypass"),
        prompt_for=lambda registry: SystemPrompt.assemble([base_section(), tool_catalog_section(registry)]),
        emit=events.append,
        spawner_factory=in_process_spawners,
    )
    spawner = InProcessSpawner(blueprint, parent_id="root", parent_budget=tree)
    permissions = PermissionRuntime.from_texts(mode="bypass")
    agent = AgentTool(spawner, depth=0, max_depth=blueprint.subagents.max_depth, permissions=permissions)
    registry = ToolRegistry([*base_tools, agent])
    session, _ = local_session(
        tmp_path,
        root_model,
        registry=registry,
        system_prompt="root sys",
        session_id="root",
        events=events,
        budget=tree,
        permissions=permissions,
    )
    return session, spawner, events


def _agent_use(i: str, description: str, prompt: str) -> ToolUseBlock:
    return ToolUseBlock(id=i, name="Agent", input={"description": description, "prompt": prompt})


# -- a new conversation holding only the prompt ------------------------------------------


async def test_child_first_request_holds_only_the_prompt(tmp_path):
    root_model = RecordingModel(
        [[_agent_use("a1", "find x", "Find where X is defined.")], [TextBlock(text="root done")]]
    )
    child_model = RecordingModel([[TextBlock(text="X is in x.py")]])
    root, _, _ = _tree(tmp_path, root_model, child_model)
    await root.run_turn("SECRET parent context: look for X")
    first = child_model.requests[0]
    assert first.messages == (Message.user("Find where X is defined."),)
    assert "SECRET" not in first.system and "root sys" not in first.system
    assert "# Tool Catalog" in first.system  # the child has its own catalog


async def test_spawner_returns_the_child_final_text(tmp_path):
    child_model = RecordingModel([[TextBlock(text="the answer")]])
    _, spawner, events = _tree(tmp_path, RecordingModel([]), child_model)
    result = await spawner.spawn(SubagentRequest(description="q", prompt="What?", depth=1))
    assert (result.text, result.is_error, result.reason, result.model_calls) == ("the answer", False, "end_turn", 1)
    assert result.session_id == "root.0"
    assert [e.type for e in events if e.type.startswith("subagent_")] == ["subagent_started", "subagent_finished"]


async def test_assembled_child_conversation_starts_with_the_prompt(tmp_path, children):
    script = subagent_script(tmp_path, [{"tool_calls": [agent_call("scan", "Scan the repo for TODOs.")]}])
    root, events, _ = _build(tmp_path, script)
    await root.run_turn("parent only text")
    (child,) = children
    assert child.conversation[0] == Message.user("Scan the repo for TODOs.")
    assert all("parent only text" not in m.text for m in child.conversation)
    first_call = of_type(events, "model_call")[0]
    assert first_call.session_id == root.session_id
    assert of_type(events, "model_call", child.session_id)  # the child's calls carry its own id
    assert child.session_id.startswith(root.session_id + ".")


async def test_parent_conversation_grows_by_one_tool_use_and_one_result(tmp_path):
    script = subagent_script(
        tmp_path,
        [{"tool_calls": [agent_call("look", "List the files.")]}],
        subagents={
            "look": {
                "turns": [{"text": "listing", "tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}],
                "final_text": "CHILD FINAL",
            }
        },
        final="root done",
    )
    root, events, _ = _build(tmp_path, script)
    outcome = await root.run_turn("go")
    assert outcome.reason == "end_turn" and outcome.final_text == "root done"
    assert [m.role for m in root.conversation] == ["user", "assistant", "user", "assistant"]
    uses = [u for m in root.conversation for u in m.tool_uses]
    results = _root_results(root)
    assert [u.name for u in uses] == ["Agent"] and len(results) == 1
    assert results[0].tool_use_id == uses[0].id
    answer, evidence = results[0].content.split("\n\n")
    assert answer == "CHILD FINAL" and not results[0].is_error
    assert evidence.startswith("Evidence") and "- Glob result · id toolu_" in evidence  # named, not shown
    assert "listing" not in json.dumps([m.model_dump() for m in root.conversation])
    assert [e.name for e in _child_results(events, root)] == ["Glob"]  # the child did work the parent never saw


async def test_a_per_file_deny_hides_files_from_a_subagents_grep(tmp_path):
    script = subagent_script(
        tmp_path,
        [{"tool_calls": [agent_call("look")]}],
        subagents={
            "look": {"turns": [{"tool_calls": [{"name": "Grep", "input": {"pattern": "token"}}]}], "final_text": "done"}
        },
    )
    root, events, workspace = _build(tmp_path, script, permissions={"mode": "bypass", "deny": ["Read(secrets/**)"]})
    (workspace / "secrets").mkdir()
    (workspace / "secrets" / "key").write_text("token=hunter2\n")
    (workspace / "notes.txt").write_text("token goes here\n")
    await root.run_turn("go")
    (grep,) = _child_results(events, root)
    assert grep.content == "notes.txt:1:token goes here"


# -- depth -------------------------------------------------------------------------------


async def test_each_level_is_one_deeper_and_past_max_depth_is_a_clear_error(tmp_path, children):
    script = subagent_script(
        tmp_path,
        [{"tool_calls": [agent_call("one")]}],
        subagents={
            "one": {"turns": [{"tool_calls": [agent_call("two")]}], "final_text": "one done"},
            "two": {"turns": [{"tool_calls": [agent_call("three")]}], "final_text": "two done"},
            "three": {"final_text": "three should not run"},
        },
    )
    root, events, _ = _build(tmp_path, script, subagents={"max_depth": 2})
    await root.run_turn("go")
    assert root.kit.registry.get("Agent").depth == 0
    assert [c.kit.registry.get("Agent").depth for c in children] == [1, 2]
    assert [e.depth for e in of_type(events, "subagent_started")] == [1, 2]
    refused = [e for e in _child_results(events, root) if e.session_id == children[1].session_id]
    assert len(refused) == 1 and refused[0].is_error
    assert "depth limit reached (max depth 2)" in refused[0].content
    assert _root_results(root)[0].content == "one done"


async def test_max_depth_zero_refuses_the_first_subagent(tmp_path, children):
    script = subagent_script(tmp_path, [{"tool_calls": [agent_call("one")]}])
    root, events, _ = _build(tmp_path, script, subagents={"max_depth": 0})
    await root.run_turn("go")
    (result,) = _root_results(root)
    assert result.is_error and "depth limit reached (max depth 0)" in result.content
    assert children == [] and not of_type(events, "subagent_started")


# -- the child's tools -------------------------------------------------------------------


async def test_root_only_tools_are_removed_from_the_child(tmp_path, children):
    script = subagent_script(
        tmp_path,
        [{"tool_calls": [agent_call("helper")]}],
        subagents={"helper": {"turns": [{"tool_calls": [{"name": "MemoryWrite", "input": {"note": "x"}}]}]}},
    )
    tools = [*default_workspace_tools(), RecallTool(), MemoryWrite()]
    root, events, _ = _build(tmp_path, script, tools=tools)
    await root.run_turn("go")
    (child,) = children
    assert "MemoryWrite" in root.kit.registry and "MemoryWrite" not in child.kit.registry
    assert set(child.kit.registry.names()) == {"Read", "Write", "Edit", "Bash", "Grep", "Glob", "Recall", "Agent"}
    (refused,) = _child_results(events, root)
    assert refused.is_error and "Unknown tool 'MemoryWrite'" in refused.content


async def test_child_tool_catalog_lists_only_its_tools(tmp_path):
    tools = [*default_workspace_tools(), MemoryWrite()]
    root_model = RecordingModel([[_agent_use("a1", "q", "question")], [TextBlock(text="ok")]])
    child_model = RecordingModel([[TextBlock(text="answer")]])
    root, _, _ = _tree(tmp_path, root_model, child_model, tools=tools)
    await root.run_turn("go")
    child_request = child_model.requests[0]
    assert "MemoryWrite" not in {t.name for t in child_request.tools}
    assert "MemoryWrite" not in child_request.system
    assert "MemoryWrite" in {t.name for t in root_model.requests[0].tools}


async def test_tool_filter_limits_the_child_tools(tmp_path, children):
    script = subagent_script(tmp_path, [{"tool_calls": [agent_call("reader", tool_filter=["Read", "Grep"])]}])
    root, _, _ = _build(tmp_path, script)
    await root.run_turn("go")
    (child,) = children
    assert sorted(child.kit.registry.names()) == ["Grep", "Read"]
    assert not _root_results(root)[0].is_error


@pytest.mark.parametrize("bad", ["Nope", "MemoryWrite"])
async def test_tool_filter_naming_a_tool_the_child_cannot_have_is_an_error_listing_available(tmp_path, children, bad):
    script = subagent_script(tmp_path, [{"tool_calls": [agent_call("reader", tool_filter=["Read", bad])]}])
    tools = [*default_workspace_tools(), RecallTool(), MemoryWrite()]
    root, events, _ = _build(tmp_path, script, tools=tools)
    outcome = await root.run_turn("go")
    (result,) = _root_results(root)
    assert result.is_error and f"tool_filter names tools a subagent cannot have: {bad}" in result.content
    assert "available: Agent, Bash, Edit, Glob, Grep, Read, Recall, Write" in result.content
    assert children == [] and outcome.reason == "end_turn"


# -- permissions -------------------------------------------------------------------------


async def test_child_permission_runtime_is_its_own_with_the_same_rules_and_no_grants(tmp_path, children):
    script = subagent_script(
        tmp_path,
        [{"tool_calls": [{"name": "Bash", "input": {"command": "echo hi"}}]}, {"tool_calls": [agent_call("echoer")]}],
        subagents={
            "echoer": {
                "turns": [{"tool_calls": [{"name": "Bash", "input": {"command": "echo hi"}}]}],
                "final_text": "child done",
            }
        },
    )
    permissions = {"mode": "default", "allow": ["Agent"], "deny": ["Bash(rm:*)"]}
    root, events, _ = _build(tmp_path, script, permissions=permissions)
    assert (await root.run_turn("go")).reason == "permission"
    outcome = await root.answer_permission(True, always=True)
    assert outcome.reason == "end_turn"
    (child,) = children
    parent_rt, child_rt = root.kit.permissions, child.kit.permissions
    assert child_rt is not parent_rt and child_rt.rules == parent_rt.rules
    assert [g.text for g in parent_rt.grants] == ["Bash(echo hi)"] and child_rt.grants == []
    assert child_rt.scope == f"subagent:{child.session_id}"
    assert child.pending is None and child.kit.is_child
    (denied,) = _child_results(events, root)  # the root's grant did not carry over
    assert denied.is_error and "no one to ask" in denied.content


async def test_child_ask_reaches_the_interactive_approver_and_its_answer_applies(tmp_path):
    asked: list = []

    async def approver(request):
        asked.append(request)
        return PermissionAnswer(allow=True)

    script = subagent_script(
        tmp_path,
        [{"tool_calls": [agent_call("writer")]}],
        subagents={
            "writer": {
                "turns": [{"tool_calls": [{"name": "Bash", "input": {"command": "echo hi > made.txt"}}]}],
                "final_text": "wrote it",
            }
        },
    )
    root, events, workspace = _build(
        tmp_path, script, permissions={"mode": "default", "allow": ["Agent"]}, child_approver=approver
    )
    outcome = await root.run_turn("go")
    assert outcome.reason == "end_turn" and root.pending is None
    (request,) = asked
    assert request.type == "permission_requested" and request.name == "Bash"
    assert request.input == {"command": "echo hi > made.txt"} and request.session_id != root.session_id
    assert (workspace / "made.txt").read_text() == "hi\n"
    decided = of_type(events, "permission_decided", request.session_id)
    assert [(d.effect, d.source) for d in decided] == [("ask", "mode"), ("allow", "user")]
    assert _root_results(root)[0].content.startswith("wrote it\n\nEvidence")  # then its Bash call, by id


async def test_child_ask_denied_by_the_approver_does_not_run(tmp_path):
    async def approver(request):
        return PermissionAnswer(allow=False)

    script = subagent_script(
        tmp_path,
        [{"tool_calls": [agent_call("writer")]}],
        subagents={
            "writer": {"turns": [{"tool_calls": [{"name": "Bash", "input": {"command": "echo hi > made.txt"}}]}]}
        },
    )
    root, events, workspace = _build(
        tmp_path, script, permissions={"mode": "default", "allow": ["Agent"]}, child_approver=approver
    )
    await root.run_turn("go")
    (denied,) = _child_results(events, root)
    assert denied.is_error and "Permission denied: denied by the user" in denied.content
    assert not (workspace / "made.txt").exists()


_WRITE = {"name": "Bash", "input": {"command": "echo hi > made.txt"}}


def _asking_tree(tmp_path, turns: list[dict], subagents: dict, *, answer: bool):
    """A root in default mode (Agent allowed) whose children's questions get `answer`; the
    questions are kept in the list returned last."""
    asked: list = []

    async def approver(request):
        asked.append(request)
        return PermissionAnswer(allow=answer)

    script = subagent_script(tmp_path, turns, subagents=subagents)
    root, events, workspace = _build(
        tmp_path, script, permissions={"mode": "default", "allow": ["Agent"]}, child_approver=approver
    )
    return root, events, workspace, asked


async def test_a_call_the_user_denied_in_the_parent_is_denied_in_the_child_without_asking(tmp_path):
    root, events, workspace, asked = _asking_tree(  # a child that asked would be allowed
        tmp_path,
        [{"tool_calls": [_WRITE]}, {"tool_calls": [agent_call("writer")]}],
        {"writer": {"turns": [{"tool_calls": [_WRITE]}], "final_text": "could not"}},
        answer=True,
    )
    assert (await root.run_turn("go")).reason == "permission"
    assert (await root.answer_permission(False)).reason == "end_turn"
    assert asked == []
    (denied,) = _child_results(events, root)
    assert denied.is_error and "the user denied this same call in a parent session" in denied.content
    assert not (workspace / "made.txt").exists()


async def test_a_call_the_user_denied_in_the_root_is_denied_in_a_grandchild_without_asking(tmp_path):
    root, events, workspace, asked = _asking_tree(
        tmp_path,
        [{"tool_calls": [_WRITE]}, {"tool_calls": [agent_call("middle")]}],
        {
            "middle": {"turns": [{"tool_calls": [agent_call("leaf")]}], "final_text": "middle done"},
            "leaf": {"turns": [{"tool_calls": [_WRITE]}], "final_text": "could not"},
        },
        answer=True,
    )
    await root.run_turn("go")
    await root.answer_permission(False)
    assert asked == []
    (denied,) = [r for r in _child_results(events, root) if r.name == "Bash"]
    assert denied.session_id.count(".") == 2  # the grandchild's call
    assert denied.is_error and "denied this same call in a parent session" in denied.content
    assert not (workspace / "made.txt").exists()


async def test_a_call_the_user_denied_in_a_child_is_denied_in_its_own_children_without_asking(tmp_path):
    root, events, _, asked = _asking_tree(
        tmp_path,
        [{"tool_calls": [agent_call("middle")]}],
        {
            "middle": {"turns": [{"tool_calls": [_WRITE]}, {"tool_calls": [agent_call("leaf")]}]},
            "leaf": {"turns": [{"tool_calls": [_WRITE]}], "final_text": "could not"},
        },
        answer=False,
    )
    await root.run_turn("go")
    (question,) = asked  # the middle child's; the leaf is not asked again
    assert question.session_id.count(".") == 1
    leaf_result = [r for r in _child_results(events, root) if r.name == "Bash" and r.session_id.count(".") == 2]
    assert leaf_result[0].is_error and "denied this same call in a parent session" in leaf_result[0].content


async def test_a_call_granted_always_in_the_parent_is_asked_again_in_the_child(tmp_path):
    root, events, _, asked = _asking_tree(
        tmp_path,
        [{"tool_calls": [_WRITE]}, {"tool_calls": [agent_call("writer")]}],
        {"writer": {"turns": [{"tool_calls": [_WRITE]}], "final_text": "wrote it"}},
        answer=True,
    )
    assert (await root.run_turn("go")).reason == "permission"
    assert (await root.answer_permission(True, always=True)).reason == "end_turn"
    (question,) = asked
    assert question.session_id != root.session_id and question.input == _WRITE["input"]
    decided = of_type(events, "permission_decided", question.session_id)
    assert [(d.effect, d.source) for d in decided] == [("ask", "mode"), ("allow", "user")]


async def test_headless_child_ask_is_denied_with_a_clear_result_and_does_not_run(tmp_path):
    script = subagent_script(
        tmp_path,
        [{"tool_calls": [agent_call("writer")]}],
        subagents={
            "writer": {
                "turns": [{"tool_calls": [{"name": "Bash", "input": {"command": "echo hi > made.txt"}}]}],
                "final_text": "could not",
            }
        },
    )
    root, events, workspace = _build(tmp_path, script, permissions={"mode": "default", "allow": ["Agent"]})
    outcome = await root.run_turn("go")
    assert outcome.reason == "end_turn" and root.pending is None
    (denied,) = _child_results(events, root)
    assert denied.is_error and "Permission denied" in denied.content
    assert "Bash needs approval and this subagent has no one to ask" in denied.content
    assert not (workspace / "made.txt").exists()
    answer = _root_results(root)[0]
    assert not answer.is_error and answer.content.startswith(
        "could not\n\n(Subagent 'writer': 1 tool call (Bash) was denied"
    )


async def test_headless_child_denial_is_in_the_audit_log_and_the_events(tmp_path):
    script = subagent_script(
        tmp_path,
        [{"tool_calls": [agent_call("writer")]}],
        subagents={
            "writer": {"turns": [{"tool_calls": [{"name": "Bash", "input": {"command": "echo hi > made.txt"}}]}]}
        },
    )
    root, events, _ = _build(tmp_path, script, permissions={"mode": "default", "allow": ["Agent"]})
    await root.run_turn("go")
    child_id = of_type(events, "subagent_started")[0].child_session_id
    audited = [
        (e["tool"], e["effect"]) for e in root.kit.permissions.audit.entries if e["scope"] == f"subagent:{child_id}"
    ]
    assert audited[-1] == ("Bash", "deny")
    decided = of_type(events, "permission_decided", child_id)
    assert decided[-1].effect == "deny"


# -- concurrency -------------------------------------------------------------------------


async def test_several_agent_calls_in_one_reply_run_concurrently(tmp_path):
    names = ["alpha", "beta", "gamma"]
    script = subagent_script(
        tmp_path,
        [{"tool_calls": [agent_call(n) for n in names]}],
        subagents={n: {"turns": [{"text": f"{n} result", "sleep_ms": 400}]} for n in names},
    )
    root, events, _ = _build(tmp_path, script)
    outcome = await root.run_turn("fan out")
    assert outcome.reason == "end_turn"
    lifecycle = [type(e).__name__ for e in events if type(e).__name__ in ("SubagentStarted", "SubagentFinished")]
    assert lifecycle[:3] == ["SubagentStarted"] * 3  # all three began before any ended: not one after another
    assert [r.content for r in _root_results(root)] == ["alpha result", "beta result", "gamma result"]


# -- budgets, input, limits --------------------------------------------------------------


async def test_subagent_token_budget_stops_the_child_and_the_parent_gets_an_error(tmp_path):
    script = subagent_script(
        tmp_path,
        [{"tool_calls": [agent_call("researcher")]}],
        subagents={
            "researcher": {
                "turns": [{"tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]}],
                "final_text": "never",
            }
        },
    )
    root, events, _ = _build(tmp_path, script, subagents={"max_tokens": 1})
    outcome = await root.run_turn("go")
    assert outcome.reason == "end_turn"  # the tree has no limit: the root goes on
    (result,) = _root_results(root)
    assert result.is_error and "Subagent 'researcher' was stopped by a budget" in result.content
    assert "subagent 'researcher' token budget exceeded" in result.content
    (finished,) = of_type(events, "subagent_finished")
    assert (finished.reason, finished.is_error, finished.model_calls) == ("budget", True, 1)
    assert _child_results(events, root) == []  # stopped right after its first call


async def test_tree_token_budget_stops_the_child_and_refuses_the_roots_next_call(tmp_path):
    script = subagent_script(
        tmp_path,
        [{"tool_calls": [agent_call("researcher")]}, {"text": "root continues"}],
        subagents={"researcher": {"final_text": "child answer"}},
    )
    probe, probe_events, _ = _build(tmp_path, script)
    await probe.run_turn("go")
    root_first = of_type(probe_events, "model_call", probe.session_id)[0].usage
    limit = root_first.input_tokens + root_first.output_tokens + 1  # the root's first call fits, no more

    root, events, _ = _build(tmp_path, script, subagents={"tree_max_tokens": limit})
    outcome = await root.run_turn("go")
    (result,) = _root_results(root)
    assert result.is_error and "tree token budget exceeded" in result.content
    assert outcome.reason == "budget" and "tree token budget exceeded" in outcome.detail
    assert "used before this call" in outcome.detail  # refused before it was made, not after
    assert len(of_type(events, "model_call", root.session_id)) == 1
    assert root.kit.budget.tokens > limit


async def test_tree_budget_counts_children_against_the_root(tmp_path):
    root_model = RecordingModel([[_agent_use("a1", "q", "question")], [TextBlock(text="root done")]])
    child_model = RecordingModel([[TextBlock(text="answer")]])
    root, _, _ = _tree(tmp_path, root_model, child_model, tree_max_tokens=20)  # 12 tokens per fake call
    outcome = await root.run_turn("go")
    (result,) = _root_results(root)
    assert result.is_error and "tree token budget exceeded: 24 > 20" in result.content
    assert outcome.reason == "budget" and "24 of 20 tokens used before this call" in outcome.detail


async def test_agent_call_without_a_prompt_is_an_error_naming_prompt(tmp_path, children):
    script = subagent_script(tmp_path, [{"tool_calls": [agent_call("no prompt", prompt=None)]}])
    root, events, _ = _build(tmp_path, script)
    outcome = await root.run_turn("go")
    (result,) = _root_results(root)
    assert result.is_error and "Invalid input for Agent" in result.content and "prompt" in result.content
    assert children == [] and not of_type(events, "subagent_started")
    assert outcome.reason == "end_turn"


async def test_agent_call_with_an_empty_prompt_is_an_error_naming_prompt(tmp_path, children):
    script = subagent_script(tmp_path, [{"tool_calls": [agent_call("empty", prompt="")]}])
    root, _, _ = _build(tmp_path, script)
    await root.run_turn("go")
    (result,) = _root_results(root)
    assert result.is_error and "- prompt:" in result.content and children == []


async def test_child_turn_limit_gives_an_error_result_saying_so(tmp_path):
    script = subagent_script(
        tmp_path,
        [{"tool_calls": [agent_call("looper")]}],
        subagents={
            "looper": {
                "turns": [
                    {"text": f"step {i}", "tool_calls": [{"name": "Glob", "input": {"pattern": "*"}}]} for i in range(5)
                ]
            }
        },
    )
    root, events, _ = _build(tmp_path, script, subagents={"max_turns": 2})
    outcome = await root.run_turn("go")
    (result,) = _root_results(root)
    assert result.is_error and "Subagent 'looper' stopped at its turn limit (2 model calls)" in result.content
    assert "step 1" in result.content  # its last words come back
    assert len(_child_results(events, root)) == 2 and outcome.reason == "end_turn"
