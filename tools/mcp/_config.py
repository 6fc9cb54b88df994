"""MCP server configuration and tool naming (see tools.mcp._tool)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["McpServerConfig", "mcp_tool_name"]

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_MAX_NAME = 64


class McpServerConfig(BaseModel):
    """One MCP server the session connects to (settings: `mcp_servers`)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        min_length=1,
        description="Short name of the server; its tools are named mcp__<name>__<tool>.",
    )
    transport: Literal["stdio", "http"] = Field(
        "stdio",
        description="stdio: run `command` as a subprocess; http: connect to `url` (streamable HTTP).",
    )
    command: str | None = Field(None, description="stdio: the executable that starts the server (looked up on PATH).")
    args: list[str] = Field(default_factory=list, description="stdio: arguments to `command`.")
    env: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "stdio: environment variables for the server, added to a minimal inherited set "
            "(HOME, PATH, USER, ...); the harness's other variables, such as API keys, are not passed."
        ),
    )
    cwd: Path | None = Field(None, description="stdio: working directory of the server (default: the harness's).")
    url: str | None = Field(None, description="http: the server's MCP endpoint, e.g. http://127.0.0.1:8000/mcp.")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="http: headers sent with every request, e.g. Authorization.",
    )
    trusted: bool = Field(
        False,
        description=(
            "Believe the server's tool annotations: a tool with readOnlyHint is then read-only "
            "(usable in Plan mode). Untrusted servers' tools are all treated as mutating."
        ),
    )
    timeout_s: float = Field(
        30.0, gt=0, description="Seconds the server may take to start, connect and list its tools."
    )
    call_timeout_s: float | None = Field(
        300.0,
        gt=0,
        description="Seconds one tool call may take before it fails; null for no limit.",
    )
    enabled: bool = Field(True, description="False keeps the entry in the config without starting it.")

    @model_validator(mode="after")
    def _transport_fields(self) -> McpServerConfig:
        if self.transport == "stdio" and not self.command:
            raise ValueError(f"MCP server {self.name!r}: transport 'stdio' needs a command")
        if self.transport == "http" and not self.url:
            raise ValueError(f"MCP server {self.name!r}: transport 'http' needs a url")
        return self


def mcp_tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, made to fit the registry's name rule.

    Characters outside [a-zA-Z0-9_-] become '_'. A name over 64 characters keeps
    its head and ends in a short hash of the full name, so it stays unique.
    """
    raw = f"mcp__{server}__{tool}"
    name = _UNSAFE.sub("_", raw)
    if len(name) > _MAX_NAME:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
        name = f"{name[: _MAX_NAME - 9]}_{digest}"
    return name
