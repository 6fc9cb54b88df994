"""Plugins: directories or installed packages contributing tools, skills, MCP servers and hooks.

A directory plugin holds `workingset-plugin.toml`:

    name = "lint"                      # letters and digits, single '-' or '_' between
    version = "1.0.0"
    description = "Lint helpers"
    tools = ["lint_tools:make_tools"]  # callables returning a Tool or a list of Tools
    skills_dir = "skills"              # relative to the plugin directory
    [[mcp_servers]]                    # passed through; the name becomes "lint__docs"
    name = "docs"
    command = "docs-server"
    [[hooks]]                          # HookSpec fields; WORKINGSET_PLUGIN_ROOT is set
    event = "PreToolUse"
    matcher = "Bash"
    command = "$WORKINGSET_PLUGIN_ROOT/check.sh"

An installed package declares an entry point in the group `workingset.plugins`; it
loads to a callable returning the same fields as a dict or object, with `tools`
holding Tool objects (import paths work too); `name` defaults to the entry point's.

`discover_plugins` reads manifests and loads entry points; it imports no directory
plugin's code. `load_enabled` imports only the enabled plugins (their directories are
appended to sys.path) and namespaces what they give: tool `Count` of plugin `lint`
is `lint__Count`. A plugin is all or nothing: any problem skips the whole plugin
with a message naming it and the fix, never an exception.
"""

from __future__ import annotations

import copy
import functools
import importlib
import importlib.metadata
import sys
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agents.errors import ConfigError
from agents.sources._hooks import HookSpec
from tools.base import DiskEffectTool, PermissionSubjectTool, Tool, ToolContext, ToolOutput
from tools.registry import ToolRegistry

__all__ = [
    "ENTRY_POINT_GROUP",
    "MANIFEST_NAME",
    "LoadedPlugins",
    "NamespacedTool",
    "Plugin",
    "PluginManifest",
    "apply_bundle",
    "discover_plugins",
    "load_enabled",
]

MANIFEST_NAME = "workingset-plugin.toml"
ENTRY_POINT_GROUP = "workingset.plugins"
SEPARATOR = "__"
_NAME_PATTERN = r"^[A-Za-z0-9]+([-_][A-Za-z0-9]+)*$"  # never contains the "__" separator


class PluginManifest(BaseModel):
    """What a plugin declares (its TOML manifest, or an entry point's answer)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=32, pattern=_NAME_PATTERN, description="Namespace of everything it adds.")
    version: str = Field("0.0.0", description="The plugin's version.")
    description: str = Field("", description="One line about the plugin.")
    tools: list[Any] = Field(
        default_factory=list, description="'pkg.module:factory' paths (or Tool objects from an entry point)."
    )
    skills_dir: str | None = Field(None, description="Directory of skills, relative to the plugin.")
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list, description="MCP server configs, passed through.")
    hooks: list[HookSpec] = Field(default_factory=list, description="Hooks the plugin adds.")

    @field_validator("tools")
    @classmethod
    def _tool_paths(cls, items: list[Any]) -> list[Any]:
        for item in items:
            if isinstance(item, str) and item.count(":") != 1:
                raise ValueError(f"tool factory {item!r} must look like 'pkg.module:factory'")
        return items


@dataclass(frozen=True)
class Plugin:
    """A discovered plugin; nothing of it is imported or active yet."""

    manifest: PluginManifest
    kind: Literal["directory", "entry_point"]
    origin: str  # for messages: the directory, or the entry point
    root: Path | None  # where relative paths resolve (the package directory for an entry point)

    @property
    def name(self) -> str:
        return self.manifest.name


@dataclass
class LoadedPlugins:
    """What the enabled plugins contribute, namespaced."""

    names: list[str] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)
    skill_dirs: dict[str, Path] = field(default_factory=dict)  # plugin name -> skills directory
    mcp_servers: list[dict[str, Any]] = field(default_factory=list)
    hooks: list[HookSpec] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class NamespacedTool:
    """A plugin's tool under `<plugin>__<tool>`; everything else is the original's."""

    def __init__(self, inner: Tool, plugin: str):
        self.inner = inner
        self.plugin = plugin
        self.name = f"{plugin}{SEPARATOR}{inner.name}"
        self.description = inner.description
        self.input_model = inner.input_model
        self.is_read_only = inner.is_read_only
        self.execution_domain = inner.execution_domain
        self.root_only = inner.root_only

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        return await self.inner.run(args, ctx)

    # The optional capabilities, forwarded by name: a runtime Protocol check need not
    # see what `__getattr__` finds. None is what a tool without the capability means.
    def permission_subject(self, args: BaseModel, workspace: Path) -> str | None:
        inner = self.inner
        return inner.permission_subject(args, workspace) if isinstance(inner, PermissionSubjectTool) else None

    def effect_on_disk(self, args: BaseModel, ctx: ToolContext) -> bool | None:
        inner = self.inner
        return inner.effect_on_disk(args, ctx) if isinstance(inner, DiskEffectTool) else None

    def __getattr__(self, name: str) -> Any:  # metadata declared later reaches the original too
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


class _Problem(Exception):
    """Why one plugin is skipped."""


@functools.cache
def installed_entry_points() -> tuple[importlib.metadata.EntryPoint, ...]:
    """The installed `workingset.plugins` entry points, scanned once per process
    (scanning every distribution costs ~10 ms, and a batch builds many sessions)."""
    return tuple(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def discover_plugins(
    dirs: Iterable[Path], *, entry_points: Iterable[importlib.metadata.EntryPoint] | None = None
) -> tuple[list[Plugin], list[str]]:
    """Plugins in `dirs` (each a plugin directory, or a directory of them; missing ones
    are skipped) and in the `workingset.plugins` entry points (`entry_points` replaces
    the installed ones when given). Returns (plugins, problems); first name wins."""
    found: list[Plugin] = []
    problems: list[str] = []
    if entry_points is None:
        entry_points = installed_entry_points()
    candidates: list[Callable[[], Plugin]] = [functools.partial(_directory_plugin, d) for d in _plugin_dirs(dirs)]
    candidates += [functools.partial(_entry_point_plugin, ep) for ep in entry_points]
    for read in candidates:
        try:
            plugin = read()
        except _Problem as exc:
            problems.append(str(exc))
            continue
        taken = next((p for p in found if p.name == plugin.name), None)
        if taken is not None:
            problems.append(f"plugin {plugin.name!r} from {plugin.origin} skipped: the name is taken by {taken.origin}")
            continue
        found.append(plugin)
    return found, problems


def load_enabled(plugins: Iterable[Plugin], enabled: Iterable[str]) -> LoadedPlugins:
    """Import and collect the enabled plugins, in `enabled` order; problems are reported."""
    by_name = {p.name: p for p in plugins}
    loaded = LoadedPlugins()
    for name in dict.fromkeys(enabled):
        plugin = by_name.get(name)
        if plugin is None:
            known = ", ".join(sorted(by_name)) or "(none)"
            loaded.problems.append(f"plugin {name!r} is enabled but was not found; discovered plugins: {known}")
            continue
        added = _add_to_path(plugin)
        try:
            _load_into(loaded, plugin)
        except _Problem as exc:
            if added:
                sys.path.remove(str(plugin.root))
            loaded.problems.append(f"plugin {name!r} ({plugin.origin}) skipped: {exc}")
    return loaded


def apply_bundle(tools: Iterable[Tool], bundle: list[str] | None) -> list[Tool]:
    """The effective tools: those a name or glob in `bundle` selects (None = all), in
    their original order. A name or glob selecting nothing is a ConfigError."""
    tools = list(tools)
    if bundle is None:
        return tools
    names = [t.name for t in tools]
    keep: set[str] = set()
    unknown: list[str] = []
    for pattern in bundle:
        hits = {n for n in names if fnmatchcase(n, pattern)}
        if not hits:
            unknown.append(pattern)
        keep |= hits
    if unknown:
        raise ConfigError(
            f"the tool bundle names {', '.join(map(repr, unknown))}, which match no tool; available tools: "
            f"{', '.join(names) or '(none)'}. Fix the bundle setting (tool names or globs such as 'lint__*')."
        )
    return [t for t in tools if t.name in keep]


# -- discovery ----------------------------------------------------------------------------


def _plugin_dirs(dirs: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    for d in map(Path, dirs):
        if (d / MANIFEST_NAME).is_file():
            out.append(d)
        elif d.is_dir():
            out.extend(sorted(c for c in d.iterdir() if (c / MANIFEST_NAME).is_file()))
    return out


def _directory_plugin(root: Path) -> Plugin:
    path = root / MANIFEST_NAME
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise _Problem(f"plugin manifest {path} cannot be read ({exc}); fix or remove it") from exc
    return Plugin(_manifest(raw, path), "directory", f"directory {root}", root.resolve())


def _entry_point_plugin(ep: importlib.metadata.EntryPoint) -> Plugin:
    origin = f"entry point {ep.name!r} ({ep.value})"
    try:
        declare = ep.load()
        raw = declare()
    except Exception as exc:
        raise _Problem(f"plugin {origin} failed to load: {type(exc).__name__}: {exc}") from exc
    if isinstance(raw, dict):
        raw = {"name": ep.name, **raw}
    module = sys.modules.get(ep.module)
    file = getattr(module, "__file__", None)
    return Plugin(_manifest(raw, origin), "entry_point", origin, Path(file).resolve().parent if file else None)


def _manifest(raw: Any, where: object) -> PluginManifest:
    if isinstance(raw, PluginManifest):
        return raw
    try:
        if isinstance(raw, dict):
            return PluginManifest.model_validate(raw)
        return PluginManifest.model_validate(raw, from_attributes=True)
    except ValidationError as exc:
        errors = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'manifest'}: {e['msg']}" for e in exc.errors())
        raise _Problem(f"plugin manifest {where} is invalid: {errors}") from exc


# -- loading ------------------------------------------------------------------------------


def _add_to_path(plugin: Plugin) -> bool:
    """Append (never prepend: a plugin must not shadow other modules) a directory plugin's root."""
    if plugin.kind != "directory" or plugin.root is None or str(plugin.root) in sys.path:
        return False
    sys.path.append(str(plugin.root))
    importlib.invalidate_caches()
    return True


def _load_into(loaded: LoadedPlugins, plugin: Plugin) -> None:
    m = plugin.manifest
    tools = _plugin_tools(plugin)
    skills = _skill_dir(plugin) if m.skills_dir else None
    servers = [_namespaced_server(m.name, i, s) for i, s in enumerate(m.mcp_servers)]
    env = {"WORKINGSET_PLUGIN_ROOT": str(plugin.root)} if plugin.root else {}
    hooks = [h.model_copy(update={"source": m.name, "env": {**env, **h.env}}) for h in m.hooks]
    loaded.names.append(m.name)
    loaded.tools.extend(tools)
    if skills is not None:
        loaded.skill_dirs[m.name] = skills
    loaded.mcp_servers.extend(servers)
    loaded.hooks.extend(hooks)


def _plugin_tools(plugin: Plugin) -> list[Tool]:
    originals = ToolRegistry()  # checks each declaration and refuses duplicates
    namespaced = ToolRegistry()
    for item in plugin.manifest.tools:
        made = _call_factory(plugin, item) if isinstance(item, str) else item
        for tool in made if isinstance(made, list | tuple) else [made]:
            try:
                originals.register(tool)
                namespaced.register(NamespacedTool(tool, plugin.name))
            except ValueError as exc:
                source = f"factory {item!r}" if isinstance(item, str) else "the entry point"
                raise _Problem(f"a tool from {source} is unusable: {exc}") from exc
    return list(namespaced)


def _call_factory(plugin: Plugin, path: str) -> Any:
    module_name, _, attr = path.partition(":")
    # SystemExit too: a plugin that calls sys.exit() is a broken plugin, not the end of the run.
    try:
        target: Any = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:
        raise _Problem(f"cannot import {module_name!r} for tool factory {path!r}: {type(exc).__name__}: {exc}") from exc
    _check_module_home(plugin, target, module_name)
    try:
        for part in attr.split("."):
            target = getattr(target, part)
        return target()
    except (Exception, SystemExit) as exc:
        raise _Problem(f"tool factory {path!r} failed: {type(exc).__name__}: {exc}") from exc


def _check_module_home(plugin: Plugin, module: Any, module_name: str) -> None:
    """Module names are shared by every plugin: refuse one that resolved elsewhere."""
    file = getattr(module, "__file__", None)
    if plugin.kind != "directory" or plugin.root is None or file is None:
        return
    if not Path(file).resolve().is_relative_to(plugin.root):
        raise _Problem(
            f"module {module_name!r} was imported from {file}, not from the plugin directory; "
            "another plugin or package already uses that module name, rename the plugin's module"
        )


def _skill_dir(plugin: Plugin) -> Path:
    assert plugin.manifest.skills_dir is not None
    if plugin.root is None:
        raise _Problem("skills_dir is set but the plugin has no directory to resolve it against")
    path = (plugin.root / plugin.manifest.skills_dir).resolve()
    if not path.is_dir():
        raise _Problem(f"skills_dir {plugin.manifest.skills_dir!r} is not a directory ({path})")
    return path


def _namespaced_server(plugin: str, index: int, server: dict[str, Any]) -> dict[str, Any]:
    name = server.get("name")
    if not isinstance(name, str) or not name:
        raise _Problem(f"mcp_servers[{index}] has no 'name'; give every server a name")
    return {**copy.deepcopy(server), "name": f"{plugin}{SEPARATOR}{name}"}
