"""Permission rules in Claude Code's forms: each matches as Claude Code documents it, or is
refused at load with what to write instead; none is accepted and then never matches."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agents.errors import ConfigError
from agents.opening._assembly import denied_path_globs, unmatched_rules
from agents.permissions import PermissionRuntime
from tests.support import MCP_TEST_SERVER as SERVER
from tests.support.fakes import json_run, script_file
from tools import EditTool, GlobTool, GrepTool, ReadTool, WriteTool

READ, EDIT, WRITE, GREP, GLOB = ReadTool(), EditTool(), WriteTool(), GrepTool(), GlobTool()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    (path / "src" / "pkg").mkdir(parents=True)
    (path / "sub").mkdir()
    (path / ".env").write_text("SECRET=1\n")
    (path / "sub" / ".env").write_text("SECRET=2\n")
    (path / "src" / "a.py").write_text("x = 1\n")
    (path / "notes.txt").write_text("x = 1\n")
    return path


def _effect(runtime: PermissionRuntime, tool, ws: Path, path: str) -> str:
    inputs = {"Read": {}, "Edit": {"old_string": "x", "new_string": "y"}, "Write": {"content": "y"}}[tool.name]
    return runtime.decide(tool, tool.input_model.model_validate({"path": path, **inputs}), ws).effect


def _results(events: list[dict]) -> dict[str, dict]:
    return {e["tool_use_id"]: e for e in events if e["type"] == "tool_result"}


# -- path forms ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "top", "nested"),
    [
        ("Read(./.env)", True, False),  # the workspace's own .env
        ("Read(/.env)", True, False),  # relative to the project root, which is the workspace
        ("Read(.env)", True, True),  # no slash: the name at any depth, as in gitignore
        ("Read(**/.env)", True, True),
        ("Read(sub/.env)", False, True),
    ],
)
def test_a_deny_rule_in_each_relative_form_denies_what_it_names(ws, rule, top, nested):
    runtime = PermissionRuntime.from_texts(deny=[rule], workspace=ws)
    assert (_effect(runtime, READ, ws, ".env"), _effect(runtime, READ, ws, "sub/.env")) == (
        "deny" if top else "allow",
        "deny" if nested else "allow",
    )


def test_an_absolute_rule_names_the_file_inside_the_workspace(ws):
    runtime = PermissionRuntime.from_texts(deny=[f"Read(/{ws}/.env)"], workspace=ws)
    assert _effect(runtime, READ, ws, ".env") == "deny" and _effect(runtime, READ, ws, "sub/.env") == "allow"


def test_an_absolute_glob_above_the_workspace_reaches_into_it(ws):
    runtime = PermissionRuntime.from_texts(deny=[f"Read(/{ws.parent}/**/.env)"], workspace=ws)
    assert _effect(runtime, READ, ws, ".env") == "deny" and _effect(runtime, READ, ws, "sub/.env") == "deny"
    assert _effect(runtime, READ, ws, "notes.txt") == "allow"


def test_a_home_rule_names_the_file_when_the_workspace_is_in_the_home_directory():
    ws = Path.home() / "project"
    ws.mkdir()
    runtime = PermissionRuntime.from_texts(deny=["Read(~/project/.env)"], workspace=ws)
    assert _effect(runtime, READ, ws, ".env") == "deny" and _effect(runtime, READ, ws, "sub/.env") == "allow"


def test_a_rule_on_a_directory_covers_everything_beneath_it(ws):
    runtime = PermissionRuntime.from_texts(deny=["Read(src)", "Read(./sub/)"], workspace=ws)
    assert [_effect(runtime, READ, ws, p) for p in ("src/a.py", "src/pkg/deep.py", "sub/.env", "notes.txt")] == [
        "deny",
        "deny",
        "deny",
        "allow",
    ]


def test_edit_dot_slash_src_allows_edits_and_writes_in_src_and_nothing_else(ws):
    runtime = PermissionRuntime.from_texts(allow=["Edit(./src/**)"], workspace=ws)
    assert _effect(runtime, EDIT, ws, "src/a.py") == "allow" and _effect(runtime, EDIT, ws, "src/pkg/b.py") == "allow"
    assert _effect(runtime, WRITE, ws, "src/new.py") == "allow"  # an Edit rule covers every tool that edits files
    assert _effect(runtime, EDIT, ws, "notes.txt") == "ask" and _effect(runtime, WRITE, ws, "lib/x.py") == "ask"


def test_a_deny_in_a_relative_form_hides_the_file_from_read_grep_and_glob(ws):
    runtime = PermissionRuntime.from_texts(deny=["Read(./.env)", "Edit(/secrets/**)"], workspace=ws)
    assert denied_path_globs(runtime) == ("/.env", "/secrets/**")


def test_a_rule_naming_only_paths_outside_the_workspace_is_named_once(ws):
    runtime = PermissionRuntime.from_texts(deny=["Read(//etc/**)", "Read(~/.ssh/**)", "Read(./.env)"], workspace=ws)
    notices = unmatched_rules(runtime, ws, ["Read"])
    assert len(notices) == 2 and "'Read(//etc/**)' names only paths outside the workspace" in notices[0]
    assert _effect(runtime, READ, ws, "notes.txt") == "allow"


# -- refused forms ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "advice"),
    [
        ("Read(src/**.py)", "write **/*.py to match at any depth, or *.py for one directory"),
        ("Read(../secrets/**)", "write the path from the workspace root"),
        ("Edit(./src/../.git/**)", "write the path from the workspace root"),
        ("Read([ab].env)", "write one rule per name"),
        ("Read(*.{pem,key})", "write one rule per alternative"),
        ("Read(!keep.txt)", "cannot re-include paths"),
        ("Read(a\\.env)", "name the path plainly"),
        ("Read(~bob/.ssh/**)", "write an absolute path, e.g. //home/bob/"),
        ("mcp__kv(lookup)", "write mcp__kv (every tool of a server"),
        ("mcp__kv__lookup(x)", "write mcp__kv__lookup"),
    ],
)
def test_a_form_that_would_not_match_as_written_is_refused_with_what_to_write(ws, text, advice):
    with pytest.raises(ConfigError) as info:
        PermissionRuntime.from_texts(deny=[text], workspace=ws)
    assert repr(text) in str(info.value) and advice in str(info.value)


@pytest.mark.parametrize(
    ("rule", "says"),
    [
        (
            "WebFetch(domain:github.com)",
            "WebFetch is a Claude Code tool and Workingset has no WebFetch tool; remove the rule",
        ),
        ("WebSearch", "Workingset has no WebSearch tool; remove the rule"),
        ("NotebookEdit(*.ipynb)", "Workingset has no NotebookEdit tool; write the rule for Edit, the nearest"),
        ("MultiEdit", "write the rule for Edit, the nearest"),
        ("Raed(*.md)", "Workingset has no tool named Raed; did you mean Read?"),
    ],
)
def test_a_rule_on_a_tool_workingset_does_not_have_stops_the_run_naming_it(ws, tmp_path, capsys, rule, says):
    code, _, err = json_run(capsys, ws, script_file(tmp_path), "--allow", rule)
    assert code == 2 and f"permission rule {rule!r} can never match: " in err and says in err


def test_a_rule_on_a_tool_this_session_lacks_but_another_might_have_is_named_not_fatal(ws, tmp_path, capsys):
    code, events, _ = json_run(capsys, ws, script_file(tmp_path), "--ask", "OldSearch")
    notices = [e["text"] for e in events if e["type"] == "notice"]
    assert code == 0 and any(
        "permission rule 'OldSearch' matches nothing here: this session has no tool named OldSearch" in n
        for n in notices
    )


# -- through a run ------------------------------------------------------------------------------


def test_a_run_with_deny_read_dot_slash_env_never_shows_the_secret(ws, tmp_path, capsys):
    script = script_file(
        tmp_path,
        {"name": "Read", "input": {"path": ".env"}},
        {"name": "Grep", "input": {"pattern": "SECRET"}},
        {"name": "Glob", "input": {"pattern": "**/.env"}},
        {"name": "Read", "input": {"path": "sub/.env"}},
    )
    code, events, _ = json_run(capsys, ws, script, "--deny", "Read(./.env)")
    read, grep, glob, nested = _results(events).values()
    assert code == 0 and read["is_error"] and "Permission denied: rule Read(./.env)" in read["content"]
    assert "SECRET=1" not in grep["content"] and "SECRET=2" in grep["content"]  # ./ names the top .env only
    assert glob["content"].split() == ["sub/.env"]
    assert "SECRET=2" in nested["content"]


def test_a_run_with_allow_edit_dot_slash_src_edits_src_and_not_elsewhere(ws, tmp_path, capsys):
    script = script_file(
        tmp_path,
        {"name": "Edit", "input": {"path": "src/a.py", "old_string": "1", "new_string": "2"}},
        {"name": "Edit", "input": {"path": "notes.txt", "old_string": "1", "new_string": "2"}},
    )
    code, events, _ = json_run(capsys, ws, script, "--allow", "Edit(./src/**)")
    inside, outside = _results(events).values()
    assert not inside["is_error"] and (ws / "src" / "a.py").read_text() == "x = 2\n"
    assert outside["is_error"] and "nobody can answer" in outside["content"]
    assert (ws / "notes.txt").read_text() == "x = 1\n"


def _kv_server(home: Path, store: Path) -> None:
    """The user's config: the real MCP test server as `kv` (its tools count as mutating)."""
    (home / ".workingset").mkdir(parents=True, exist_ok=True)
    (home / ".workingset" / "config.toml").write_text(
        f'[[mcp_servers]]\nname = "kv"\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(SERVER))}]\n'
        f"env = {{ MCP_TEST_STORE = {json.dumps(str(store))} }}\ntimeout_s = 30\n"
    )


@pytest.mark.parametrize("rule", ["mcp__kv", "mcp__kv__*"])
def test_a_server_rule_allows_every_tool_of_that_server(ws, tmp_path, capsys, rule):
    _kv_server(Path.home(), tmp_path / "kv.json")
    script = script_file(
        tmp_path,
        {"name": "mcp__kv__store", "input": {"key": "k", "value": "v"}},
        {"name": "mcp__kv__lookup", "input": {"key": "k"}},
    )
    code, events, _ = json_run(capsys, ws, script, "--allow", rule)
    stored, looked = _results(events).values()
    assert code == 0 and (stored["content"], looked["content"]) == ("stored k", "k = v")


def test_a_server_deny_rule_stops_its_tools_and_a_tool_rule_only_that_tool(ws, tmp_path, capsys):
    _kv_server(Path.home(), tmp_path / "kv.json")
    script = script_file(
        tmp_path,
        {"name": "mcp__kv__store", "input": {"key": "k", "value": "v"}},
        {"name": "mcp__kv__lookup", "input": {"key": "k"}},
    )
    _, events, _ = json_run(capsys, ws, script, "--deny", "mcp__kv", "--allow", "mcp__kv__lookup")
    assert all("Permission denied: rule mcp__kv." in e["content"] for e in _results(events).values())
    _, events, _ = json_run(capsys, ws, script, "--allow", "mcp__kv__store")
    stored, looked = _results(events).values()
    assert stored["content"] == "stored k" and looked["is_error"] and "nobody can answer" in looked["content"]
