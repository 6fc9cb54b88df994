"""Plan mode: what the model sees and may call is shaped by tool metadata alone."""

import json

from pydantic import BaseModel

from agents.messages import TextBlock
from agents.modes import Mode
from agents.opening._assembly import build_session
from agents.session._loop import Session
from agents.settings._config import AgentSettings, SessionSettings, WorkingsetSettings
from tests.support.builders import tool_use
from tests.support.fakes import RecordingModel, local_session
from tools import (
    ExecutionDomain,
    ToolOutput,
    ToolRegistry,
    default_workspace_tools,
)


class _Note(BaseModel):
    note: str = ""


class _MetaTool:
    """A tool known only by what it declares; in no list of names anywhere."""

    description = "A tool defined by a test. It records its calls."
    input_model = _Note
    root_only = False

    def __init__(self, name: str, *, read_only: bool, domain: ExecutionDomain = ExecutionDomain.LOCAL):
        self.name = name
        self.is_read_only = read_only
        self.execution_domain = domain
        self.calls = 0

    async def run(self, args: BaseModel, ctx) -> ToolOutput:
        self.calls += 1
        return ToolOutput(content=f"{self.name} ran")


def _session(tmp_path, model, *extra_tools, mode=Mode.DEFAULT, stable_prefix=True) -> tuple[Session, list]:
    registry = ToolRegistry([*default_workspace_tools(), *extra_tools])
    settings = SessionSettings(agent=AgentSettings(stable_prefix=stable_prefix))
    return local_session(tmp_path, model, registry=registry, mode=mode, settings=settings)


def _tool_names(request) -> set[str]:
    return {t.name for t in request.tools}


def _only_result(session: Session):
    (result,) = session.conversation[2].tool_results_in
    return result


async def test_forged_edit_in_plan_mode_is_refused_and_the_file_is_unchanged(tmp_path):
    (tmp_path / "a.txt").write_text("keep me\n")
    model = RecordingModel(
        [[tool_use("e1", "Edit", path="a.txt", old_string="keep", new_string="lose")], [TextBlock(text="ok")]]
    )
    session, _ = _session(tmp_path, model, mode=Mode.PLAN)
    outcome = await session.run_turn("plan the change")
    result = _only_result(session)
    assert result.is_error and result.content.startswith("Edit is unavailable in plan mode")
    assert (tmp_path / "a.txt").read_text() == "keep me\n"
    assert outcome.reason == "end_turn"


async def test_forged_bash_in_plan_mode_is_refused_and_does_not_run(tmp_path):
    model = RecordingModel([[tool_use("b1", "Bash", command="touch ran.txt")], [TextBlock(text="ok")]])
    session, _ = _session(tmp_path, model, mode=Mode.PLAN)
    await session.run_turn("plan")
    result = _only_result(session)
    assert result.is_error and "Bash is unavailable in plan mode" in result.content
    assert not (tmp_path / "ran.txt").exists()


async def test_forged_call_to_a_hidden_custom_tool_never_reaches_the_tool(tmp_path):
    writer = _MetaTool("Stamp", read_only=False)
    model = RecordingModel([[tool_use("s1", "Stamp", note="x")], [TextBlock(text="ok")]])
    session, _ = _session(tmp_path, model, writer, mode=Mode.PLAN)
    await session.run_turn("plan")
    assert "Stamp is unavailable in plan mode" in _only_result(session).content
    assert writer.calls == 0


async def test_read_only_local_tool_appears_in_default_and_plan_requests(tmp_path):
    probe = _MetaTool("Probe", read_only=True)
    model = RecordingModel([[TextBlock(text="a")], [TextBlock(text="b")]])
    session, _ = _session(tmp_path, model, probe)
    await session.run_turn("default")
    session.set_mode(Mode.PLAN)
    await session.run_turn("plan")
    assert "Probe" in _tool_names(model.requests[0]) and "Probe" in _tool_names(model.requests[1])


async def test_read_only_custom_tool_runs_in_plan_mode(tmp_path):
    probe = _MetaTool("Probe", read_only=True)
    model = RecordingModel([[tool_use("p1", "Probe")], [TextBlock(text="ok")]])
    session, _ = _session(tmp_path, model, probe, mode=Mode.PLAN)
    await session.run_turn("plan")
    assert _only_result(session).content == "Probe ran" and probe.calls == 1


async def test_mutating_custom_tool_is_absent_from_plan_requests_without_a_stable_prefix(tmp_path):
    stamp = _MetaTool("Stamp", read_only=False)
    model = RecordingModel([[TextBlock(text="a")], [TextBlock(text="b")]])
    session, _ = _session(tmp_path, model, stamp, stable_prefix=False)
    await session.run_turn("default")
    session.set_mode(Mode.PLAN)
    await session.run_turn("plan")
    assert "Stamp" in _tool_names(model.requests[0]) and "Stamp" not in _tool_names(model.requests[1])


async def test_delegated_runtime_tool_is_hidden_in_plan_even_when_read_only_without_a_stable_prefix(tmp_path):
    delegate = _MetaTool("Delegate", read_only=True, domain=ExecutionDomain.DELEGATED_RUNTIME)
    model = RecordingModel([[TextBlock(text="a")], [tool_use("d1", "Delegate")], [TextBlock(text="b")]])
    session, _ = _session(tmp_path, model, delegate, stable_prefix=False)
    await session.run_turn("default")
    session.set_mode(Mode.PLAN)
    await session.run_turn("plan")
    assert "Delegate" in _tool_names(model.requests[0]) and "Delegate" not in _tool_names(model.requests[1])
    refused = session.conversation[-2].tool_results_in[0]
    assert refused.is_error and "Delegate is unavailable in plan mode" in refused.content
    assert delegate.calls == 0


async def test_plan_mode_shows_plan_tools_only_in_an_assembled_session_without_a_stable_prefix(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": []}))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = WorkingsetSettings(
        model=f"scripted:{script}", home=tmp_path / "home", agent=AgentSettings(stable_prefix=False)
    )
    session = build_session(settings, workspace, mode=Mode.PLAN)
    plan = _tool_names((await session.compile_working_set()).request)
    session.set_mode(Mode.DEFAULT)
    default = _tool_names((await session.compile_working_set()).request)
    assert plan == {"Read", "Grep", "Glob", "Recall", "MemoryList", "MemoryShow", "LoadSkill"}
    assert default == plan | {"Write", "Edit", "Bash", "Agent", "MemoryWrite", "MemoryDelete"}


async def test_tool_catalog_in_the_system_prompt_follows_the_mode_without_a_stable_prefix(tmp_path):
    stamp = _MetaTool("Stamp", read_only=False)
    model = RecordingModel([[TextBlock(text="a")], [TextBlock(text="b")], [TextBlock(text="c")]])
    session, _ = _session(tmp_path, model, stamp, stable_prefix=False)
    await session.run_turn("one")
    session.set_mode(Mode.PLAN)
    await session.run_turn("two")
    session.set_mode(Mode.DEFAULT)
    await session.run_turn("three")
    default, plan, back = (r.system for r in model.requests)
    assert "# Tool Catalog" in default and "# Tool Catalog" in plan
    for line in ("- Edit (changes state)", "- Bash (changes state)", "- Stamp (changes state)"):
        assert line in default and line not in plan
    assert "- Read (read-only)" in plan and "- Grep (read-only)" in plan
    assert back == default  # byte-identical again: the cached prefix comes back


async def test_mode_survives_being_set_back_and_forth_and_each_change_is_announced(tmp_path):
    (tmp_path / "a.txt").write_text("old\n")
    model = RecordingModel(
        [
            [tool_use("e1", "Edit", path="a.txt", old_string="old", new_string="plan")],
            [TextBlock(text="refused")],
            [tool_use("e2", "Edit", path="a.txt", old_string="old", new_string="new")],
            [TextBlock(text="edited")],
        ]
    )
    session, events = _session(tmp_path, model)
    session.set_mode(Mode.PLAN)
    session.set_mode(Mode.DEFAULT)
    session.set_mode(Mode.PLAN)
    assert session.mode is Mode.PLAN
    await session.run_turn("try in plan")
    assert session.mode is Mode.PLAN and (tmp_path / "a.txt").read_text() == "old\n"
    session.set_mode(Mode.DEFAULT)
    await session.run_turn("now do it")
    assert session.mode is Mode.DEFAULT and (tmp_path / "a.txt").read_text() == "new\n"
    changes = [e for e in events if e.type == "mode_changed"]
    assert [e.mode for e in changes] == ["plan", "default", "plan", "default"]
    assert all(e.session_id == session.session_id for e in changes)


async def test_starting_a_session_in_plan_mode_is_not_announced(tmp_path):
    session, events = _session(tmp_path, RecordingModel([]), mode=Mode.PLAN)
    assert session.mode is Mode.PLAN and not [e for e in events if e.type == "mode_changed"]
