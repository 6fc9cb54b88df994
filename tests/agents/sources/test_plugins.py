"""Plugins from real directories, modules and dist-info metadata in tmp_path; no mocks."""

from __future__ import annotations

import itertools
import os
import sys
import textwrap
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from agents.errors import ConfigError
from agents.sources._hooks import HookRunner
from agents.sources._plugins import apply_bundle, discover_plugins, installed_entry_points, load_enabled
from tools.base import ToolContext
from tools.registry import ToolRegistry, default_workspace_tools

_ids = itertools.count()
_PREFIXES = ("plugtools_", "ep_plugin_", "ep_installed_")

TOOL_MODULE = """
from pydantic import BaseModel
from tools.base import ExecutionDomain, ToolOutput


class CountInput(BaseModel):
    text: str


class CountTool:
    name = "Count"
    description = "Count the words of a text."
    input_model = CountInput
    is_read_only = True
    execution_domain = ExecutionDomain.LOCAL
    root_only = False

    async def run(self, args, ctx):
        return ToolOutput(content=str(len(args.text.split())))


def make_tools():
    return [CountTool()]
"""


@pytest.fixture(autouse=True)
def isolated_imports(monkeypatch: pytest.MonkeyPatch):
    """Plugins append to sys.path and import modules: undo both after each test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name in [m for m in sys.modules if m.startswith(_PREFIXES)]:
        del sys.modules[name]


def unique(prefix: str) -> str:
    return f"{prefix}_{os.getpid()}_{next(_ids)}"


def write_plugin(parent: Path, name: str, manifest: str = "", module: str | None = TOOL_MODULE) -> tuple[Path, str]:
    """A plugin directory with a manifest and (optionally) a tool module; returns (dir, module name)."""
    root = parent / name
    root.mkdir(parents=True)
    module_name = unique("plugtools")
    tools = f'tools = ["{module_name}:make_tools"]\n' if module is not None else ""
    (root / "workingset-plugin.toml").write_text(
        f'name = "{name}"\nversion = "1.2.0"\n{tools}{textwrap.dedent(manifest)}'
    )
    if module is not None:
        (root / f"{module_name}.py").write_text(module)
    return root, module_name


def test_discovers_a_directory_plugin_without_importing_its_code(tmp_path: Path):
    _, module = write_plugin(tmp_path / "plugins", "lint")
    plugins, problems = discover_plugins([tmp_path / "plugins", tmp_path / "missing"], entry_points=[])
    assert problems == []
    assert [(p.name, p.manifest.version, p.kind) for p in plugins] == [("lint", "1.2.0", "directory")]
    assert module not in sys.modules


async def test_an_enabled_plugins_tool_is_namespaced_and_runs(tmp_path: Path):
    write_plugin(tmp_path, "lint")
    plugins, _ = discover_plugins([tmp_path], entry_points=[])
    loaded = load_enabled(plugins, ["lint"])
    assert loaded.problems == []
    [tool] = loaded.tools
    assert (tool.name, tool.is_read_only, tool.description) == ("lint__Count", True, "Count the words of a text.")
    registry = ToolRegistry([*default_workspace_tools(), *loaded.tools])
    args = registry.get("lint__Count").input_model(text="three little words")
    assert (await tool.run(args, ToolContext(workspace=tmp_path))).content == "3"


def test_a_plugin_that_is_not_enabled_contributes_nothing(tmp_path: Path):
    _, module = write_plugin(tmp_path, "lint")
    plugins, _ = discover_plugins([tmp_path], entry_points=[])
    loaded = load_enabled(plugins, [])
    assert (loaded.names, loaded.tools, loaded.hooks) == ([], [], [])
    assert module not in sys.modules


def test_enabling_an_unknown_plugin_is_reported(tmp_path: Path):
    write_plugin(tmp_path, "lint")
    plugins, _ = discover_plugins([tmp_path], entry_points=[])
    loaded = load_enabled(plugins, ["lnt"])
    assert loaded.problems == ["plugin 'lnt' is enabled but was not found; discovered plugins: lint"]


def test_a_bad_manifest_is_reported_and_the_other_plugins_still_load(tmp_path: Path):
    write_plugin(tmp_path, "good")
    write_plugin(tmp_path, "bad", manifest='colour = "blue"\n', module=None)
    plugins, problems = discover_plugins([tmp_path], entry_points=[])
    assert [p.name for p in plugins] == ["good"]
    [problem] = problems
    assert "bad/workingset-plugin.toml is invalid: colour: Extra inputs are not permitted" in problem


def test_an_unreadable_manifest_is_reported(tmp_path: Path):
    root = tmp_path / "broken"
    root.mkdir()
    (root / "workingset-plugin.toml").write_text("name = ")
    plugins, problems = discover_plugins([tmp_path], entry_points=[])
    assert plugins == []
    assert "cannot be read" in problems[0] and "fix or remove it" in problems[0]


def test_a_plugin_whose_module_fails_to_import_is_skipped(tmp_path: Path):
    write_plugin(tmp_path, "good")
    write_plugin(tmp_path, "broken", module="import not_installed_anywhere\n")
    plugins, _ = discover_plugins([tmp_path], entry_points=[])
    loaded = load_enabled(plugins, ["broken", "good"])
    assert loaded.names == ["good"]
    assert [t.name for t in loaded.tools] == ["good__Count"]
    [problem] = loaded.problems
    assert problem.startswith("plugin 'broken' (directory ")
    assert "ModuleNotFoundError: No module named 'not_installed_anywhere'" in problem


@pytest.mark.parametrize("where", ["import", "factory"])
def test_a_plugin_that_calls_sys_exit_is_skipped_and_the_run_goes_on(tmp_path: Path, where: str):
    module = (
        "import sys\nsys.exit(3)\n" + TOOL_MODULE
        if where == "import"
        else TOOL_MODULE + "\n\ndef make_tools():\n    raise SystemExit('bye')\n"
    )
    write_plugin(tmp_path, "good")
    write_plugin(tmp_path, "quitter", module=module)
    plugins, _ = discover_plugins([tmp_path], entry_points=[])
    loaded = load_enabled(plugins, ["good", "quitter"])
    assert loaded.names == ["good"]
    [problem] = loaded.problems
    assert problem.startswith("plugin 'quitter' (directory ") and "SystemExit" in problem


def test_a_failing_tool_factory_is_reported(tmp_path: Path):
    write_plugin(
        tmp_path, "flaky", module=TOOL_MODULE + "\n\ndef make_tools():\n    raise RuntimeError('no licence')\n"
    )
    plugins, _ = discover_plugins([tmp_path], entry_points=[])
    loaded = load_enabled(plugins, ["flaky"])
    assert loaded.tools == []
    assert "failed: RuntimeError: no licence" in loaded.problems[0]


def test_a_duplicate_tool_skips_the_whole_plugin(tmp_path: Path):
    write_plugin(
        tmp_path, "twice", module=TOOL_MODULE + "\n\ndef make_tools():\n    return [CountTool(), CountTool()]\n"
    )
    plugins, _ = discover_plugins([tmp_path], entry_points=[])
    loaded = load_enabled(plugins, ["twice"])
    assert (loaded.names, loaded.tools) == ([], [])
    assert "A tool named 'Count' is already registered" in loaded.problems[0]


def test_a_second_plugin_with_a_taken_name_is_reported(tmp_path: Path):
    write_plugin(tmp_path / "a", "lint")
    write_plugin(tmp_path / "b", "lint")
    plugins, problems = discover_plugins([tmp_path / "a", tmp_path / "b"], entry_points=[])
    assert len(plugins) == 1
    assert "plugin 'lint'" in problems[0] and "the name is taken by directory" in problems[0]


def test_skills_mcp_servers_and_hooks_are_collected_and_namespaced(tmp_path: Path):
    manifest = """
        skills_dir = "skills"
        [[mcp_servers]]
        name = "docs"
        command = "docs-server"
        args = ["--port", "0"]
        [[hooks]]
        event = "PreToolUse"
        matcher = "Bash"
        command = "exit 0"
    """
    root, _ = write_plugin(tmp_path, "lint", manifest=manifest)
    (root / "skills").mkdir()
    plugins, _ = discover_plugins([tmp_path], entry_points=[])
    loaded = load_enabled(plugins, ["lint"])
    assert loaded.skill_dirs == {"lint": (root / "skills").resolve()}
    assert loaded.mcp_servers == [{"name": "lint__docs", "command": "docs-server", "args": ["--port", "0"]}]
    [hook] = loaded.hooks
    assert (hook.source, hook.env) == ("lint", {"WORKINGSET_PLUGIN_ROOT": str(root.resolve())})


async def test_a_plugin_hook_can_run_a_script_from_its_own_directory(tmp_path: Path):
    manifest = """
        [[hooks]]
        event = "PreToolUse"
        command = "$WORKINGSET_PLUGIN_ROOT/guard.sh"
    """
    root, _ = write_plugin(tmp_path / "plugins", "guard", manifest=manifest, module=None)
    (root / "guard.sh").write_text("#!/bin/sh\necho 'guarded by plugin' >&2\nexit 2\n")
    (root / "guard.sh").chmod(0o755)
    plugins, _ = discover_plugins([tmp_path / "plugins"], entry_points=[])
    loaded = load_enabled(plugins, ["guard"])
    result = await HookRunner(loaded.hooks, tmp_path).run("PreToolUse", {"tool_name": "Bash", "tool_input": {}})
    assert (result.block, result.reason) == (True, "guarded by plugin")


def test_an_entry_point_given_directly_contributes_its_tool_objects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    module = unique("ep_plugin")
    (tmp_path / f"{module}.py").write_text(TOOL_MODULE + "\n\ndef declare():\n    return {'tools': make_tools()}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = EntryPoint(name="words", value=f"{module}:declare", group="workingset.plugins")
    plugins, problems = discover_plugins([], entry_points=[entry])
    assert problems == []
    assert [(p.name, p.kind) for p in plugins] == [("words", "entry_point")]
    assert [t.name for t in load_enabled(plugins, ["words"]).tools] == ["words__Count"]


def test_an_installed_entry_point_is_discovered_from_its_dist_info(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    module = unique("ep_installed")
    site = tmp_path / "site"
    dist = site / "wsplug_words-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: wsplug-words\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[workingset.plugins]\nwordy = {module}:declare\n")
    (site / f"{module}.py").write_text(
        TOOL_MODULE + "\n\ndef declare():\n    return {'description': 'word tools', 'tools': make_tools()}\n"
    )
    monkeypatch.syspath_prepend(str(site))
    installed_entry_points.cache_clear()  # scanned once per process; this test installs one
    try:
        plugins, problems = discover_plugins([])
    finally:
        installed_entry_points.cache_clear()
    assert problems == []
    [plugin] = [p for p in plugins if p.name == "wordy"]
    assert (plugin.manifest.description, plugin.root) == ("word tools", site.resolve())


def test_an_entry_point_that_fails_to_load_is_reported(tmp_path: Path):
    entry = EntryPoint(name="ghost", value="no_such_plugin_module:declare", group="workingset.plugins")
    plugins, problems = discover_plugins([], entry_points=[entry])
    assert plugins == []
    assert problems[0].startswith("plugin entry point 'ghost' (no_such_plugin_module:declare) failed to load")


def test_the_bundle_selects_tools_by_name_and_glob_in_registry_order():
    tools = default_workspace_tools()
    chosen = apply_bundle(tools, ["Grep", "Re*", "G?ob"])
    assert [t.name for t in chosen] == ["Read", "Grep", "Glob"]


def test_no_bundle_keeps_every_tool():
    tools = default_workspace_tools()
    assert apply_bundle(tools, None) == tools


def test_a_bundle_naming_unknown_tools_is_a_config_error_listing_the_available_ones():
    with pytest.raises(ConfigError) as caught:
        apply_bundle(default_workspace_tools(), ["Read", "Raed", "lint__*"])
    message = str(caught.value)
    assert "'Raed', 'lint__*'" in message
    assert "available tools: Read, Write, Edit, Bash, Grep, Glob" in message
