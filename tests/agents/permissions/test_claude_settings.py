"""A workspace's Claude Code files: `.claude/settings.json` (and `.local`) and `.mcp.json`,
applied in a trusted workspace, withheld (but for deny and ask rules) and named in an
untrusted one, and never accepted and then ignored."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agents.errors import ConfigError
from agents.permissions import PermissionRuntime
from agents.settings._config import load_workspace_settings
from tests.support import MCP_TEST_SERVER as SERVER
from tests.support.fakes import json_run, script_file, trust_workspace
from tests.support.sandbox_support import sandboxed
from tools import EditTool, WriteTool

READ_ENV = {"name": "Read", "input": {"path": ".env"}}
EDIT_SRC = {"name": "Edit", "input": {"path": "src/a.py", "old_string": "1", "new_string": "2"}}
STORE = {"name": "mcp__kv__store", "input": {"key": "k", "value": "v"}}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    (path / "src").mkdir(parents=True)
    (path / ".env").write_text("SECRET=1\n")
    (path / "src" / "a.py").write_text("x = 1\n")
    return path


def _claude(ws: Path, data: dict, name: str = "settings.json") -> None:
    (ws / ".claude").mkdir(exist_ok=True)
    (ws / ".claude" / name).write_text(json.dumps(data))


def _mcp_json(ws: Path, store: Path, **extra: object) -> None:
    server = {"command": sys.executable, "args": [str(SERVER)], "env": {"MCP_TEST_STORE": str(store)}, **extra}
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"kv": server}}))


def _results(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "tool_result"]


# -- trusted: applied ---------------------------------------------------------------------------


def test_a_trusted_workspaces_claude_rules_are_honoured_in_a_run(ws, tmp_path, capsys):
    _claude(ws, {"permissions": {"deny": ["Read(./.env)"], "allow": ["Edit(./src/**)"]}})
    code, events, err = json_run(capsys, trust_workspace(ws), script_file(tmp_path, READ_ENV, EDIT_SRC))
    read, edit = _results(events)
    assert code == 0 and "notice" not in err
    assert read["is_error"] and "rule Read(./.env)" in read["content"] and "SECRET" not in read["content"]
    assert not edit["is_error"] and (ws / "src" / "a.py").read_text() == "x = 2\n"


def test_the_local_settings_join_the_shared_ones_and_claude_rules_join_workingsets(ws):
    (Path.home() / ".workingset").mkdir()
    (Path.home() / ".workingset" / "config.toml").write_text('[permissions]\ndeny = ["Bash(rm:*)"]\n')
    _claude(ws, {"permissions": {"deny": ["Read(./.env)"], "allow": ["Bash(npm run *)", "Bash(*)"]}})
    _claude(ws, {"permissions": {"ask": ["Bash(git push:*)"]}}, "settings.local.json")
    p = load_workspace_settings(trust_workspace(ws)).settings.permissions
    assert p.deny == ["Bash(rm:*)", "Read(./.env)"] and p.ask == ["Bash(git push:*)"]
    assert p.allow == ["Bash(npm run:*)", "Bash"]  # Claude Code's spellings of the same rules


def test_default_mode_applies_where_workingset_has_the_same_mode_and_yields_to_its_own(ws):
    _claude(ws, {"permissions": {"defaultMode": "plan"}})
    assert load_workspace_settings(trust_workspace(ws)).settings.permissions.mode == "plan"
    (ws / ".workingset").mkdir()
    (ws / ".workingset" / "config.toml").write_text('[permissions]\nmode = "accept-edits"\n')
    assert load_workspace_settings(ws).settings.permissions.mode == "accept-edits"


def test_a_default_mode_workingset_has_no_match_for_is_named_not_applied(ws):
    _claude(ws, {"permissions": {"defaultMode": "acceptEdits"}})
    loaded = load_workspace_settings(trust_workspace(ws))
    assert loaded.settings.permissions.mode == "default"
    assert "defaultMode 'acceptEdits' (Workingset's accept-edits still asks before every Bash command" in loaded.notice


def test_rules_on_tools_workingset_lacks_and_keys_it_does_not_read_are_named_not_fatal(ws):
    _claude(
        ws,
        {
            "permissions": {"allow": ["WebFetch(domain:github.com)", "Read"], "additionalDirectories": ["../x"]},
            "hooks": {"PreToolUse": []},
            "env": {"A": "1"},
        },
    )
    loaded = load_workspace_settings(trust_workspace(ws))
    assert loaded.settings.permissions.allow == ["Read"]
    notice = loaded.notice
    assert "WebFetch(domain:github.com) (WebFetch is a Claude Code tool and Workingset has no WebFetch tool" in notice
    assert "hooks, env, permissions.additionalDirectories (Workingset does not read them)" in notice


def test_a_rule_workingset_refuses_in_a_trusted_claude_file_stops_the_run_naming_file_and_rewrite(ws, tmp_path, capsys):
    _claude(ws, {"permissions": {"deny": ["Read(src/**.py)"]}})
    code, _, err = json_run(capsys, trust_workspace(ws), script_file(tmp_path))
    assert code == 2 and "the workspace's .claude/settings.json: permission rule 'Read(src/**.py)'" in err
    assert "write **/*.py to match at any depth" in err


def test_a_trusted_claude_file_that_does_not_parse_is_an_error_naming_it(ws):
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"\.claude/settings\.json cannot be used: it is not valid JSON"):
        load_workspace_settings(trust_workspace(ws))


def test_mcp_json_servers_start_in_a_trusted_workspace(ws, tmp_path, capsys):
    _mcp_json(ws, tmp_path / "kv.json")
    _claude(ws, {"permissions": {"allow": ["mcp__kv"]}})
    code, events, _ = json_run(capsys, trust_workspace(ws), script_file(tmp_path, STORE))
    assert code == 0 and [e["content"] for e in _results(events)] == ["stored k"]
    assert json.loads((tmp_path / "kv.json").read_text()) == {"k": "v"}


def test_mcp_json_variables_expand_from_the_environment_and_a_missing_one_skips_the_server(ws, tmp_path, monkeypatch):
    monkeypatch.setenv("KV_STORE", str(tmp_path / "kv.json"))
    servers = {
        "kv": {"command": sys.executable, "args": [str(SERVER)], "env": {"MCP_TEST_STORE": "${KV_STORE}"}},
        "web": {"type": "http", "url": "https://${NO_SUCH_HOST}/mcp"},
        "old": {"type": "sse", "url": "https://example.com/sse"},
    }
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    loaded = load_workspace_settings(trust_workspace(ws))
    (kv,) = loaded.settings.mcp_servers
    assert kv.env == {"MCP_TEST_STORE": str(tmp_path / "kv.json")} and kv.cwd == ws.resolve()
    assert "server web: ${NO_SUCH_HOST} is not set in the environment" in loaded.notice
    assert "server old: type 'sse' is not one Workingset connects" in loaded.notice


def test_disabled_mcp_json_servers_do_not_start(ws, tmp_path):
    _mcp_json(ws, tmp_path / "kv.json")
    _claude(ws, {"disabledMcpjsonServers": ["kv"]})
    loaded = load_workspace_settings(trust_workspace(ws))
    assert loaded.settings.mcp_servers == [] and "server kv (disabledMcpjsonServers)" in loaded.notice


# -- untrusted: withheld, but deny and ask -------------------------------------------------------


def test_an_untrusted_workspace_gets_its_claude_deny_rules_and_one_notice_naming_the_rest(ws, tmp_path, capsys):
    _claude(
        ws, {"permissions": {"deny": ["Read(./.env)"], "allow": ["Edit(./src/**)", "mcp__kv"], "defaultMode": "plan"}}
    )
    _mcp_json(ws, tmp_path / "kv.json")
    code, events, err = json_run(capsys, ws, script_file(tmp_path, READ_ENV, EDIT_SRC, STORE))
    read, edit, store = _results(events)
    assert "rule Read(./.env)" in read["content"] and "nobody can answer" in edit["content"]
    assert "Unknown tool" in store["content"] and not (tmp_path / "kv.json").exists()
    (notice,) = [line for line in err.splitlines() if "notice" in line]
    assert (
        "Claude Code settings were not applied: .claude/settings.json (allow rules: Edit(./src/**), mcp__kv); "
        ".claude/settings.json (defaultMode 'plan'); .mcp.json (MCP servers: kv) (their deny and ask rules apply)"
        in notice
    )
    assert f"workingset trust {ws}" in notice


def test_an_untrusted_claude_file_that_does_not_parse_is_named_and_the_run_goes_on(ws, tmp_path, capsys):
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text("{not json")
    (ws / ".claude" / "settings.local.json").write_text(json.dumps({"permissions": {"deny": ["Read(src/**.py)"]}}))
    code, _, err = json_run(capsys, ws, script_file(tmp_path))
    assert code == 0 and ".claude/settings.json: it is not valid JSON" in err
    assert "permission rule 'Read(src/**.py)' has `**` inside the segment" in err


def test_claude_settings_reached_through_a_link_out_of_the_workspace_are_not_read(ws, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Bash"]}}))
    (ws / ".claude").symlink_to(outside)
    (ws / ".mcp.json").symlink_to(outside / "settings.json")
    with pytest.raises(ConfigError, match=r"\.claude/settings\.json cannot be used: it is a link leading outside"):
        load_workspace_settings(trust_workspace(ws))
    (ws / ".claude").unlink()
    with pytest.raises(ConfigError, match=r"\.mcp\.json cannot be used: it is a link leading outside"):
        load_workspace_settings(ws)


@pytest.mark.parametrize("path", [".claude/settings.json", ".claude/settings.local.json", ".mcp.json"])
def test_the_agent_cannot_rewrite_the_claude_files_through_a_mode_or_a_broad_rule(ws, path):
    runtime = PermissionRuntime.from_texts(allow=["Edit(**)", "Write"], mode="bypass", workspace=ws)
    for tool, inputs in ((EditTool(), {"old_string": "a", "new_string": "b"}), (WriteTool(), {"content": "{}"})):
        decision = runtime.decide(tool, tool.input_model.model_validate({"path": path, **inputs}), ws)
        assert decision.effect == "ask" and "which the host acts on" in decision.reason


async def test_bash_cannot_rewrite_the_claude_files(ws):
    _claude(ws, {"permissions": {"deny": ["Read(./.env)"]}})
    (ws / ".mcp.json").write_text("{}")
    out = await sandboxed(
        ws,
        "echo '{}' > .claude/settings.json; echo x > .claude/settings.local.json; "
        "echo '{\"mcpServers\": {}}' > .mcp.json; echo done",
    )
    assert out.content.count("Read-only file system") == 3, out.content
    assert json.loads((ws / ".claude" / "settings.json").read_text()) == {"permissions": {"deny": ["Read(./.env)"]}}
    assert (ws / ".mcp.json").read_text() == "{}" and not (ws / ".claude" / "settings.local.json").exists()
