"""Subagents with the root's MCP tools: in one process they share the root's tools; on
Ray a child calls them through the root's actor (cluster.subagents._root_tools), over the root's
one connection to a real MCP server (tests/support/mcp_test_server.py), under its own rules."""

import json
import sys
from pathlib import Path

from agents.modes import Mode, visible_registry
from agents.opening._lifecycle import OpenSpec
from agents.settings._config import WorkingsetSettings
from cluster.ray_run import open_remote_session
from cluster.subagents._root_tools import RootToolProxy, answer_root_tool, proxied_tools
from tests.support import MCP_TEST_SERVER as SERVER
from tests.support.builders import scripted_settings, workspace
from tools.base import ExecutionDomain, ToolContext
from tools.mcp._tool import McpManager, McpServerConfig
from tools.registry import ToolRegistry, default_workspace_tools


def _kv(store: Path) -> McpServerConfig:
    return McpServerConfig(
        name="kv",
        command=sys.executable,
        args=[str(SERVER)],
        trusted=True,
        timeout_s=30,
        call_timeout_s=30,
        env={"MCP_TEST_STORE": str(store), "HOME": str(store.parent)},
    )


def _settings_with_kv(tmp_path: Path, script: dict, **fields) -> WorkingsetSettings:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    return scripted_settings(tmp_path, path, mcp_servers=[_kv(tmp_path / "kv.json")], **fields)


def _researcher(*calls: dict) -> dict:
    """A root that starts one child ("researcher") making `calls`, then looks the key up itself."""
    return {
        "turns": [
            {
                "tool_calls": [
                    {"name": "Agent", "input": {"description": "researcher", "prompt": "Record the finding."}}
                ]
            },
            {"tool_calls": [{"name": "mcp__kv__lookup", "input": {"key": "finding"}}]},
        ],
        "final_text": "root done",
        "subagents": {"researcher": {"turns": [{"tool_calls": list(calls)}], "final_text": "recorded"}},
    }


async def _run_on_ray(settings: WorkingsetSettings, ws: Path) -> tuple[list, object, str]:
    events: list = []
    remote = await open_remote_session(OpenSpec(settings, ws), emit=events.append, approver=None)
    try:
        outcome = await remote.run_turn("go")
    finally:
        await remote.aclose()
    return events, outcome, remote.session_id


def _results(events: list, *, child: bool, root_id: str) -> list:
    return [e for e in events if e.type == "tool_result" and (e.session_id != root_id) == child]


async def test_a_child_on_ray_calls_the_roots_mcp_server_over_the_roots_connection(ray_cluster, tmp_path):
    settings = _settings_with_kv(
        tmp_path,
        _researcher({"name": "mcp__kv__store", "input": {"key": "finding", "value": "42"}}),
        permissions={"mode": "bypass"},
    )
    events, outcome, root_id = await _run_on_ray(settings, workspace(tmp_path))

    assert (outcome.reason, outcome.final_text) == ("end_turn", "root done")
    (stored,) = _results(events, child=True, root_id=root_id)
    assert (stored.name, stored.is_error, stored.content) == ("mcp__kv__store", False, "stored finding")
    # the root reads what the child wrote: one server for the whole tree
    lookup = [e for e in _results(events, child=False, root_id=root_id) if e.name == "mcp__kv__lookup"]
    assert [(e.is_error, e.content) for e in lookup] == [(False, "finding = 42")]
    assert json.loads((tmp_path / "kv.json").read_text()) == {"finding": "42"}


async def test_a_deny_rule_stops_a_childs_proxied_mcp_call_before_it_reaches_the_server(ray_cluster, tmp_path):
    settings = _settings_with_kv(
        tmp_path,
        _researcher({"name": "mcp__kv__store", "input": {"key": "finding", "value": "42"}}),
        permissions={"mode": "bypass", "deny": ["mcp__kv__store"]},
    )
    events, _, root_id = await _run_on_ray(settings, workspace(tmp_path))

    (denied,) = _results(events, child=True, root_id=root_id)
    assert denied.is_error and "denied" in denied.content.lower()
    assert not (tmp_path / "kv.json").exists()


async def test_the_roots_hooks_run_in_a_child_on_ray_and_can_block_a_proxied_mcp_call(ray_cluster, tmp_path):
    hook = {"event": "PreToolUse", "matcher": "mcp__kv__store", "command": "echo 'no writes from research' >&2; exit 2"}
    settings = _settings_with_kv(
        tmp_path,
        _researcher({"name": "mcp__kv__store", "input": {"key": "finding", "value": "42"}}),
        permissions={"mode": "bypass"},
        hooks=[hook],
    )
    events, _, root_id = await _run_on_ray(settings, workspace(tmp_path))

    (blocked,) = _results(events, child=True, root_id=root_id)
    assert blocked.is_error and "no writes from research" in blocked.content
    assert not (tmp_path / "kv.json").exists()


async def test_proxied_mcp_tools_keep_their_metadata_so_plan_mode_shapes_them_alike(tmp_path):
    async with McpManager([_kv(tmp_path / "kv.json")]) as manager:
        tools = [*default_workspace_tools(), *manager.tools]
        proxied = proxied_tools(tools, root_actor=None, root_session_id="root")
        assert {t.name for t in proxied if isinstance(t, RootToolProxy)} == {t.name for t in manager.tools}
        assert all(t.execution_domain is ExecutionDomain.REMOTE for t in proxied if isinstance(t, RootToolProxy))
        in_plan = sorted(visible_registry(ToolRegistry(proxied), Mode.PLAN).names())
        assert in_plan == sorted(visible_registry(ToolRegistry(tools), Mode.PLAN).names())
        assert "mcp__kv__lookup" in in_plan and "mcp__kv__store" not in in_plan  # trusted readOnlyHint decides


async def test_the_root_answers_a_proxied_call_only_for_its_own_mcp_tools(tmp_path):
    ws = workspace(tmp_path)
    (ws / "secret.txt").write_text("do not read")
    async with McpManager([_kv(tmp_path / "kv.json")]) as manager:
        registry = ToolRegistry([*default_workspace_tools(), *manager.tools])
        ctx = ToolContext(workspace=ws)
        refused = await answer_root_tool(registry, ctx, "Read", {"file_path": "secret.txt"})
        assert refused.is_error and "not a tool the root session holds" in refused.content
        bad = await answer_root_tool(registry, ctx, "mcp__kv__store", {"key": 1})
        assert bad.is_error
        stored = await answer_root_tool(registry, ctx, "mcp__kv__store", {"key": "k", "value": "v"})
        assert not stored.is_error
