"""A workspace's `.mcp.json` (Claude Code's project MCP servers) as Workingset MCP servers.

    {"mcpServers": {"kv": {"command": "python3", "args": ["server.py"], "env": {"TOKEN": "${TOKEN}"}},
                    "docs": {"type": "http", "url": "https://example.com/mcp",
                             "headers": {"Authorization": "Bearer ${DOCS_TOKEN:-none}"}}}}

Each entry becomes a `tools.mcp._tool.McpServerConfig`: `type` stdio (the default when a
command is given) or http (streamable HTTP), `command`, `args`, `env`, `url`, `headers`,
with `${VAR}` and `${VAR:-default}` expanded from the host's environment as Claude Code
does. A stdio server runs in the workspace (its `cwd`), as Claude Code runs it. An entry
Workingset cannot start as written — an SSE server, a key it does not read, a variable
that is not set — is skipped and named, never started half-configured. Only a trusted
workspace's servers start (agents.settings._config); the file is read through a handle on the
workspace, never through a link out of it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tools.files import is_present, read_text_beneath
from tools.mcp import McpServerConfig

__all__ = ["MCP_FILE", "McpFile", "read_mcp_file"]

MCP_FILE = ".mcp.json"
MCP_FILE_MAX_BYTES = 1_000_000
_KEYS = {"type", "command", "args", "env", "url", "headers"}
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass
class McpFile:
    """What `.mcp.json` holds: servers Workingset can start, and entries it cannot."""

    servers: list[McpServerConfig] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "name: why", one per entry not usable
    problem: str | None = None  # the file exists but cannot be used at all


def read_mcp_file(workspace: Path, environ: Mapping[str, str] | None = None) -> McpFile | None:
    """The servers of `<workspace>/.mcp.json`; None when there is no such file."""
    text = read_text_beneath(workspace, MCP_FILE, MCP_FILE_MAX_BYTES)
    if text is None:
        if not is_present(workspace / MCP_FILE):
            return None
        return McpFile(problem="it is a link leading outside the workspace, or not a regular file")
    try:
        data = json.loads(text)
    except ValueError as exc:
        return McpFile(problem=f"it is not valid JSON ({exc})")
    entries = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return McpFile(problem='it has no "mcpServers" object')
    found = McpFile()
    for name, entry in entries.items():
        try:
            found.servers.append(_server(str(name), entry, workspace, os.environ if environ is None else environ))
        except ValueError as exc:
            found.skipped.append(f"{name}: {exc}")
    return found


def _server(name: str, entry: object, workspace: Path, environ: Mapping[str, str]) -> McpServerConfig:
    if not isinstance(entry, dict):
        raise ValueError("its entry is not an object")
    unread = sorted(set(entry) - _KEYS)
    if unread:
        raise ValueError(f"Workingset does not read {', '.join(unread)} (it reads {', '.join(sorted(_KEYS))})")
    kind = entry.get("type", "stdio" if "command" in entry else "http")
    if kind not in ("stdio", "http"):
        raise ValueError(f"type {kind!r} is not one Workingset connects (stdio, or http for streamable HTTP)")
    fields: dict[str, Any] = {"name": name, "transport": kind}
    for key in sorted(_KEYS - {"type"}):
        if key in entry:
            fields[key] = _expanded(entry[key], environ)
    if kind == "stdio":
        fields["cwd"] = workspace
    try:
        return McpServerConfig.model_validate(fields)
    except ValidationError as exc:
        raise ValueError(
            "; ".join(f"{'.'.join(map(str, e['loc'])) or 'entry'}: {e['msg']}" for e in exc.errors())
        ) from None


def _expanded(value: Any, environ: Mapping[str, str]) -> Any:
    """`value` with `${VAR}` and `${VAR:-default}` replaced in every string in it."""
    if isinstance(value, str):

        def one(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in environ:
                return environ[name]
            if default is not None:
                return default
            raise ValueError(f"${{{name}}} is not set in the environment (set it, or write ${{{name}:-default}})")

        return _VARIABLE.sub(one, value)
    if isinstance(value, list):
        return [_expanded(v, environ) for v in value]
    if isinstance(value, dict):
        return {k: _expanded(v, environ) for k, v in value.items()}
    return value
