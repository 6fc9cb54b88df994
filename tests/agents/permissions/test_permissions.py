"""Permissions: rule syntax, modes, headless policies, the audit log, and parking at the root."""

import json
import shutil

import pytest

from agents.errors import ConfigError, WorkingsetError
from agents.messages import TextBlock
from agents.opening._assembly import denied_path_globs
from agents.permissions import AuditLog, PermissionRuntime, parse_rule
from agents.session._loop import Session
from tests.support.builders import tool_use
from tests.support.fakes import RecordingModel, local_session
from tools import (
    BashTool,
    EditTool,
    GrepTool,
    ReadTool,
    WriteTool,
)

BASH, EDIT, READ, WRITE, GREP = BashTool(), EditTool(), ReadTool(), WriteTool(), GrepTool()


def _decide(runtime: PermissionRuntime, tool, workspace, **inp):
    return runtime.decide(tool, tool.input_model.model_validate(inp), workspace)


def _bash_effect(runtime, workspace, command: str) -> str:
    return _decide(runtime, BASH, workspace, command=command).effect


def _edit(runtime, workspace, path: str) -> str:
    return _decide(runtime, EDIT, workspace, path=path, old_string="a", new_string="b").effect


def _results(session: Session) -> dict[str, object]:
    return {r.tool_use_id: r for m in session.conversation for r in m.tool_results_in}


# -- rule syntax -------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["Bash(", "Bash()", "Read(x", "Bash(  )", "(x)", "", "Bash git"])
def test_malformed_rule_is_a_config_error_naming_the_rule(text):
    with pytest.raises(ConfigError) as info:
        PermissionRuntime.from_texts(allow=[text])
    assert repr(text) in str(info.value) and "malformed" in str(info.value)


@pytest.mark.parametrize("effect", ["allow", "deny", "ask"])
def test_malformed_rule_fails_whichever_list_it_is_in(effect):
    with pytest.raises(ConfigError, match=r"'Edit\(src'"):
        PermissionRuntime.from_texts(**{effect: ["Read", "Edit(src"]})


def test_rule_without_pattern_and_with_pattern_parse():
    assert (parse_rule("Read", "allow").tool, parse_rule("Read", "allow").pattern) == ("Read", None)
    rule = parse_rule(" Bash(git status:*) ", "deny")
    assert (rule.tool, rule.pattern, rule.effect, rule.text) == ("Bash", "git status:*", "deny", "Bash(git status:*)")


@pytest.mark.parametrize(
    ("command", "allowed"),
    [
        ("git status", True),
        ("git status --short", True),
        ("git status && rm -rf x", False),
        ("git status; rm -rf x", False),
        ("git status | sh", False),
        ("git status $(rm -rf x)", False),
        ("git status `rm -rf x`", False),
        ("git status > out.txt", False),
        ("git status\nrm -rf x", False),
        ("git statusx", False),
        ("git stat", False),
        ("rm -rf x; git status", False),
    ],
)
def test_bash_prefix_rule_covers_one_command_not_what_is_chained_after_it(tmp_path, command, allowed):
    runtime = PermissionRuntime.from_texts(allow=["Bash(git status:*)"])
    assert _bash_effect(runtime, tmp_path, command) == ("allow" if allowed else "ask")


def test_bash_exact_rule_matches_only_that_command(tmp_path):
    runtime = PermissionRuntime.from_texts(allow=["Bash(npm test)"])
    assert _bash_effect(runtime, tmp_path, "npm test") == "allow"
    assert _bash_effect(runtime, tmp_path, "npm test --watch") == "ask"


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("src/a.py", True),
        ("src/pkg/deep/b.py", True),
        ("./src/pkg/c.py", True),
        ("lib/a.py", False),
        ("srcx/a.py", False),
        ("src/../lib/a.py", False),
        ("a.py", False),
    ],
)
def test_edit_glob_rule_matches_nested_paths_inside_and_nothing_outside(tmp_path, path, allowed):
    runtime = PermissionRuntime.from_texts(allow=["Edit(src/**)"])
    assert _edit(runtime, tmp_path, path) == ("allow" if allowed else "ask")


def test_edit_glob_rule_matches_an_absolute_path_inside_the_workspace(tmp_path):
    runtime = PermissionRuntime.from_texts(allow=["Edit(src/**)"])
    assert _edit(runtime, tmp_path, str(tmp_path / "src" / "x" / "y.py")) == "allow"


def test_single_star_stays_within_one_directory(tmp_path):
    runtime = PermissionRuntime.from_texts(allow=["Edit(src/*.py)"])
    assert _edit(runtime, tmp_path, "src/a.py") == "allow"
    assert _edit(runtime, tmp_path, "src/pkg/a.py") == "ask"


def test_tool_name_glob_rule_matches_by_name(tmp_path):
    runtime = PermissionRuntime.from_texts(deny=["Wr*"])
    assert _decide(runtime, WRITE, tmp_path, path="a", content="x").effect == "deny"
    assert _edit(runtime, tmp_path, "a") == "ask"


def test_deny_beats_allow(tmp_path):
    runtime = PermissionRuntime.from_texts(allow=["Bash"], deny=["Bash(rm:*)"])
    assert _bash_effect(runtime, tmp_path, "rm -rf build") == "deny"
    assert _bash_effect(runtime, tmp_path, "ls") == "allow"


def test_deny_rule_beats_a_read_only_tool_and_bypass(tmp_path):
    runtime = PermissionRuntime.from_texts(deny=["Read(secrets/**)"], mode="bypass")
    decision = _decide(runtime, READ, tmp_path, path="secrets/key.pem")
    assert (decision.effect, decision.source, decision.rule) == ("deny", "rule", "Read(secrets/**)")
    assert _decide(runtime, READ, tmp_path, path="README.md").effect == "allow"


def test_deny_rules_on_file_tools_give_the_globs_that_file_tools_hide():
    runtime = PermissionRuntime.from_texts(
        deny=["Read(secrets/**)", "Bash(rm:*)", "Edit(secrets/**)", "Grep", "Gl?b(*.pem)"], allow=["Read(*.md)"]
    )
    assert denied_path_globs(runtime) == ("secrets/**", "*.pem")


def test_ask_rule_asks_even_in_bypass(tmp_path):
    runtime = PermissionRuntime.from_texts(ask=["Bash(git push:*)"], mode="bypass")
    decision = _decide(runtime, BASH, tmp_path, command="git push origin main")
    assert (decision.effect, decision.rule) == ("ask", "Bash(git push:*)")
    assert _bash_effect(runtime, tmp_path, "ls") == "allow"


# -- modes -------------------------------------------------------------------------------


def test_default_mode_asks_before_mutating_and_allows_read_only(tmp_path):
    runtime = PermissionRuntime.from_texts(mode="default")
    assert _decide(runtime, READ, tmp_path, path="a.txt").effect == "allow"
    assert _decide(runtime, GREP, tmp_path, pattern="x").effect == "allow"
    assert _edit(runtime, tmp_path, "a.txt") == "ask"
    assert _decide(runtime, WRITE, tmp_path, path="a.txt", content="x").effect == "ask"
    assert _bash_effect(runtime, tmp_path, "ls") == "ask"


def test_accept_edits_allows_edit_and_write_but_asks_for_bash(tmp_path):
    runtime = PermissionRuntime.from_texts(mode="accept-edits")
    assert _edit(runtime, tmp_path, "a.txt") == "allow"
    assert _decide(runtime, WRITE, tmp_path, path="a.txt", content="x").effect == "allow"
    assert _bash_effect(runtime, tmp_path, "ls") == "ask"


def test_bypass_allows_everything_no_rule_forbids(tmp_path):
    runtime = PermissionRuntime.from_texts(mode="bypass")
    assert _bash_effect(runtime, tmp_path, "rm -rf build") == "allow"
    assert _edit(runtime, tmp_path, "a.txt") == "allow"


def test_plan_permission_mode_denies_mutations(tmp_path):
    runtime = PermissionRuntime.from_texts(mode="plan")
    assert _edit(runtime, tmp_path, "a.txt") == "deny"
    assert _decide(runtime, READ, tmp_path, path="a.txt").effect == "allow"


# -- headless ----------------------------------------------------------------------------


def test_headless_deny_asks_turns_an_ask_into_a_deny_naming_a_rule_to_add(tmp_path):
    runtime = PermissionRuntime.from_texts(mode="default", headless="deny-asks")
    decision = _decide(runtime, BASH, tmp_path, command="make build")
    assert (decision.effect, decision.source) == ("deny", "headless")
    assert "'Bash(make build)'" in decision.reason
    assert _decide(runtime, READ, tmp_path, path="a.txt").effect == "allow"


def test_headless_deny_asks_also_denies_what_an_ask_rule_asks(tmp_path):
    runtime = PermissionRuntime.from_texts(ask=["Bash(git push:*)"], mode="bypass", headless="deny-asks")
    decision = _decide(runtime, BASH, tmp_path, command="git push origin main")
    assert (decision.effect, decision.source) == ("deny", "headless")
    assert "Bash(git push origin main)" in decision.reason


def test_headless_allow_list_denies_read_only_tools_not_on_the_list(tmp_path):
    runtime = PermissionRuntime.from_texts(allow=["Read", "Bash(pytest:*)"], headless="allow-list")
    assert _decide(runtime, READ, tmp_path, path="a.txt").effect == "allow"
    assert _bash_effect(runtime, tmp_path, "pytest -q") == "allow"
    grep = _decide(runtime, GREP, tmp_path, pattern="x")
    assert (grep.effect, grep.source) == ("deny", "headless") and "allow-list" in grep.reason
    assert _bash_effect(runtime, tmp_path, "ls") == "deny"


def test_headless_allow_list_denies_what_an_ask_rule_asks(tmp_path):
    runtime = PermissionRuntime.from_texts(allow=["Bash"], ask=["Bash(git push:*)"], headless="allow-list")
    assert _bash_effect(runtime, tmp_path, "ls") == "allow"
    runtime = PermissionRuntime.from_texts(ask=["Read"], headless="allow-list")
    assert _decide(runtime, READ, tmp_path, path="a.txt").effect == "deny"


async def test_headless_ask_rule_never_parks_the_session(tmp_path):
    model = RecordingModel(
        [[tool_use("p1", "Bash", command="git push origin main")], [TextBlock(text="could not push")]]
    )
    runtime = PermissionRuntime.from_texts(ask=["Bash(git push:*)"], mode="bypass", headless="deny-asks")
    session, _ = local_session(tmp_path, model, permissions=runtime)
    outcome = await session.run_turn("push")
    assert outcome.reason == "permission_denied" and session.pending is None
    assert _results(session)["p1"].is_error


async def test_headless_deny_result_names_the_rule_to_add_and_nothing_runs(tmp_path):
    model = RecordingModel([[tool_use("b1", "Bash", command="touch ran.txt")], [TextBlock(text="blocked")]])
    session, _ = local_session(tmp_path, model, permissions=PermissionRuntime.from_texts(headless="deny-asks"))
    outcome = await session.run_turn("go")
    result = _results(session)["b1"]
    assert outcome.reason == "permission_denied" and result.is_error
    assert "Permission denied" in result.content and "'Bash(touch ran.txt)'" in result.content
    assert not (tmp_path / "ran.txt").exists()


# -- audit -------------------------------------------------------------------------------


async def test_every_decision_is_written_to_the_audit_log(tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    audit_path = tmp_path / "state" / "audit.jsonl"
    runtime = PermissionRuntime.from_texts(deny=["Bash(rm:*)"], mode="default", audit=AuditLog(audit_path))
    model = RecordingModel(
        [
            [
                tool_use("r1", "Read", path="a.txt"),
                tool_use("d1", "Bash", command="rm -rf x"),
                tool_use("w1", "Write", path="b.txt", content="y"),
            ],
            [TextBlock(text="done")],
        ]
    )
    session, events = local_session(tmp_path, model, permissions=runtime)
    assert (await session.run_turn("go")).reason == "permission"
    await session.answer_permission(True)
    lines = [json.loads(line) for line in audit_path.read_text().splitlines()]
    assert [(e["tool"], e["effect"], e["source"]) for e in lines] == [
        ("Read", "allow", "mode"),
        ("Bash", "deny", "rule"),
        ("Write", "ask", "mode"),
        ("Write", "allow", "user"),
    ]
    assert lines[1]["rule"] == "Bash(rm:*)" and lines[1]["subject"] == "rm -rf x"
    assert all(e["scope"] == "root" and "ts" in e for e in lines)
    assert runtime.audit.entries == lines
    decided = [(e.name, e.effect) for e in events if e.type == "permission_decided"]
    assert decided == [(e["tool"], e["effect"]) for e in lines]


# -- a denied call never runs ------------------------------------------------------------


async def test_denied_call_never_runs_and_the_model_gets_an_error_result(tmp_path):
    (tmp_path / "a.txt").write_text("keep\n")
    runtime = PermissionRuntime.from_texts(deny=["Edit"], mode="bypass")
    model = RecordingModel(
        [[tool_use("e1", "Edit", path="a.txt", old_string="keep", new_string="lose")], [TextBlock(text="ok")]]
    )
    session, _ = local_session(tmp_path, model, permissions=runtime)
    outcome = await session.run_turn("edit")
    result = _results(session)["e1"]
    assert outcome.reason == "end_turn"
    assert result.is_error and result.content.startswith("Permission denied") and "rule Edit" in result.content
    assert (tmp_path / "a.txt").read_text() == "keep\n"


# -- parking at the root -----------------------------------------------------------------


def _ask_model(*more):
    return RecordingModel(
        [[tool_use("r1", "Read", path="a.txt"), tool_use("b1", "Bash", command="echo hi > out.txt")], *more]
    )


async def test_ask_at_the_root_parks_the_exact_call_and_nothing_runs(tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    session, events = local_session(tmp_path, _ask_model(), permissions=PermissionRuntime.from_texts(mode="default"))
    outcome = await session.run_turn("go")
    assert outcome.reason == "permission" and "Bash" in outcome.detail
    assert session.pending.asks == ["b1"]
    assert session.tool_batches.current_request(session.pending).input == {"command": "echo hi > out.txt"}
    assert not (tmp_path / "out.txt").exists()
    assert not [e for e in events if e.type == "tool_result"]
    assert session.conversation[-1].role == "assistant"  # no results appended yet
    (request,) = [e for e in events if e.type == "permission_requested"]
    assert request.tool_use_id == "b1" and session.tool_batches.current_request(session.pending).tool_use_id == "b1"


async def test_allowing_the_parked_call_runs_exactly_it_and_the_turn_goes_on(tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    model = _ask_model([TextBlock(text="finished")])
    session, events = local_session(tmp_path, model, permissions=PermissionRuntime.from_texts(mode="default"))
    await session.run_turn("go")
    outcome = await session.answer_permission(True)
    assert (outcome.reason, outcome.final_text) == ("end_turn", "finished")
    assert (tmp_path / "out.txt").read_text() == "hi\n"
    assert [r.tool_use_id for r in session.conversation[2].tool_results_in] == ["r1", "b1"]
    assert [e.name for e in events if e.type == "tool_result"] == ["Read", "Bash"]
    assert session.pending is None and len(model.requests) == 2


async def test_denying_the_parked_call_returns_a_denial_and_the_turn_goes_on(tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    model = _ask_model([TextBlock(text="ok, not writing")])
    session, _ = local_session(tmp_path, model, permissions=PermissionRuntime.from_texts(mode="default"))
    await session.run_turn("go")
    outcome = await session.answer_permission(False)
    assert (outcome.reason, outcome.final_text) == ("end_turn", "ok, not writing")
    results = _results(session)
    assert results["b1"].is_error and "Permission denied by the user" in results["b1"].content
    assert not results["r1"].is_error
    assert not (tmp_path / "out.txt").exists()


async def test_two_asks_in_one_reply_are_answered_one_by_one(tmp_path):
    model = RecordingModel(
        [
            [tool_use("b1", "Bash", command="echo 1 > one.txt"), tool_use("b2", "Bash", command="echo 2 > two.txt")],
            [TextBlock(text="ok")],
        ]
    )
    session, _ = local_session(tmp_path, model, permissions=PermissionRuntime.from_texts(mode="default"))
    await session.run_turn("go")
    second = await session.answer_permission(True)
    assert second.reason == "permission" and session.pending.asks == ["b2"]
    assert not (tmp_path / "one.txt").exists()  # nothing runs until every answer is in
    final = await session.answer_permission(False)
    assert final.reason == "end_turn"
    assert (tmp_path / "one.txt").exists() and not (tmp_path / "two.txt").exists()


async def _answer_always(tmp_path, *commands: str):
    """A session whose model runs `commands` one reply each; the first ask is answered 'always'."""
    replies = [[tool_use(f"b{i}", "Bash", command=c)] for i, c in enumerate(commands, start=1)]
    runtime = PermissionRuntime.from_texts(mode="default")
    session, events = local_session(tmp_path, RecordingModel([*replies, [TextBlock(text="done")]]), permissions=runtime)
    await session.run_turn("go")
    outcome = await session.answer_permission(True, always=True)
    assert outcome.reason == "permission"
    return session, runtime, events


async def test_always_grants_the_same_subject_for_the_session_but_not_another_command(tmp_path):
    session, runtime, _ = await _answer_always(tmp_path, "mkdir -p same", "mkdir -p same", "mkdir -p other")
    assert session.pending.asks == ["b3"]  # b2 ran on the grant
    assert (tmp_path / "same").is_dir() and not (tmp_path / "other").exists()
    assert [g.text for g in runtime.grants] == ["Bash(mkdir -p same)"]


async def test_always_on_a_compound_command_allows_it_once_and_grants_nothing(tmp_path):
    session, runtime, events = await _answer_always(tmp_path, "echo same >> log.txt", "echo same >> log.txt")
    assert session.pending.asks == ["b2"]
    assert (tmp_path / "log.txt").read_text() == "same\n" and runtime.grants == []
    decided = [e.reason for e in events if e.type == "permission_decided" and e.source == "user"]
    assert decided == ['approved by the user (this once: "always" covers only a single simple command)']


async def test_run_turn_while_a_call_is_pending_raises(tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    session, _ = local_session(tmp_path, _ask_model(), permissions=PermissionRuntime.from_texts(mode="default"))
    await session.run_turn("go")
    with pytest.raises(WorkingsetError, match="waiting for permission"):
        await session.run_turn("something else")
    assert session.pending is not None and not (tmp_path / "out.txt").exists()


async def test_answer_without_a_pending_call_raises(tmp_path):
    session, _ = local_session(tmp_path, RecordingModel([]), permissions=PermissionRuntime.from_texts(mode="default"))
    with pytest.raises(WorkingsetError, match="no tool call is waiting"):
        await session.answer_permission(True)


def test_fork_keeps_rules_but_drops_grants(tmp_path):
    runtime = PermissionRuntime.from_texts(allow=["Read"], deny=["Bash(rm:*)"], ask=["Edit"], mode="accept-edits")
    args = BASH.input_model.model_validate({"command": "make"})
    runtime.answer(BASH, args, tmp_path, allow=True, always=True)
    assert runtime.decide(BASH, args, tmp_path).effect == "allow"
    child = runtime.fork(scope="subagent:x", refused=runtime.refused_calls())
    assert child is not runtime and child.rules == runtime.rules and child.rules is not runtime.rules
    assert (child.mode, child.headless, child.scope) == (runtime.mode, runtime.headless, "subagent:x")
    assert child.grants == [] and runtime.grants
    assert child.decide(BASH, args, tmp_path).effect == "ask"
    assert _bash_effect(child, tmp_path, "rm -rf x") == "deny"


def test_fork_carries_the_calls_the_user_refused_and_a_later_yes_takes_one_back(tmp_path):
    runtime = PermissionRuntime.from_texts(mode="default")
    refused, allowed = ({"command": "make clean"}, {"command": "make"})
    for inp in (refused, allowed):
        runtime.answer(BASH, BASH.input_model.model_validate(inp), tmp_path, allow=False)
    runtime.answer(BASH, BASH.input_model.model_validate(allowed), tmp_path, allow=True)
    child = runtime.fork(scope="subagent:x", refused=runtime.refused_calls())
    assert _decide(child, BASH, tmp_path, **refused).source == "user"
    assert _bash_effect(child, tmp_path, "make clean") == "deny" and _bash_effect(child, tmp_path, "make") == "ask"
    assert _bash_effect(runtime, tmp_path, "make clean") == "ask"  # the session that was refused asks again


def test_an_audit_log_whose_directory_was_removed_is_written_in_a_new_one(tmp_path):
    audit = AuditLog(tmp_path / "state" / "audit.jsonl")
    audit.record({"tool": "Read", "effect": "allow"})
    shutil.rmtree(tmp_path / "state")
    audit.record({"tool": "Write", "effect": "ask"})
    lines = [json.loads(line) for line in (tmp_path / "state" / "audit.jsonl").read_text().splitlines()]
    assert [(e["tool"], e["effect"]) for e in lines] == [("Write", "ask")]


def test_fork_shares_the_audit_log_with_the_scope_recorded(tmp_path):
    runtime = PermissionRuntime.from_texts(mode="bypass", audit=AuditLog(tmp_path / "audit.jsonl"))
    child = runtime.fork(scope="subagent:r.0", refused=runtime.refused_calls())
    _bash_effect(child, tmp_path, "ls")
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [e["scope"] for e in lines] == ["subagent:r.0"]


def test_ask_rule_outranks_a_broader_allow_rule(tmp_path):
    from agents.permissions import PermissionRuntime
    from tools import BashTool
    from tools.bash import BashInput

    runtime = PermissionRuntime.from_texts(allow=["Bash"], ask=["Bash(git push:*)"])
    tool = BashTool()
    assert runtime.decide(tool, BashInput(command="git push origin"), tmp_path).effect == "ask"
    assert runtime.decide(tool, BashInput(command="git status"), tmp_path).effect == "allow"


def test_a_path_glob_too_large_to_compile_is_refused_when_the_rule_loads():
    with pytest.raises(ConfigError, match=r"permission rule .* too complex to match"):
        parse_rule(f"Read({'*a' * 200_000})", "deny")
