"""What a subagent actor pays to call the root's MCP tools through the root's actor.

    python -m benchmarks.mcp_proxy [--calls 30]

On the embedded Ray cluster a root session connects one MCP server (the published
`mcp-server-time`), calls its tool `--calls` times itself, and starts one subagent
actor that calls it `--calls` times through the root's SessionActor
(cluster.subagents._root_tools). Prints the median tool-call time of each (the tool_result
events' duration_ms) and, for the alternative of one connection per child, what
starting that server costs (connect + list tools, in this process).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from agents.opening import OpenSpec
from agents.settings import load_settings
from tools.mcp import McpManager, McpServerConfig

_TOOL = "mcp__time__get_current_time"


def _server() -> McpServerConfig:
    return McpServerConfig(
        name="time",
        command=sys.executable,
        args=["-m", "mcp_server_time", "--local-timezone", "UTC"],
        trusted=True,
        timeout_s=60,
    )


def _script(path: Path, calls: int) -> Path:
    call = {"tool_calls": [{"name": _TOOL, "input": {"timezone": "UTC"}}]}
    path.write_text(
        json.dumps(
            {
                "turns": [
                    *([call] * calls),
                    {"tool_calls": [{"name": "Agent", "input": {"description": "child", "prompt": "Time."}}]},
                ],
                "final_text": "done",
                "subagents": {"child": {"turns": [call] * calls, "final_text": "timed"}},
            }
        )
    )
    return path


async def proxied_and_direct(workspace: Path, calls: int) -> tuple[list[float], list[float]]:
    from cluster.ray_run import open_remote_session

    settings = load_settings(
        workspace,
        {
            "model": f"scripted:{_script(workspace / 'mcp.json', calls)}",
            "home": str(workspace / ".home"),
            "permissions": {"mode": "bypass"},
            "mcp_servers": [_server().model_dump(mode="json")],
        },
    )
    events: list = []
    remote = await open_remote_session(OpenSpec(settings, workspace), emit=events.append, approver=None)
    try:
        await remote.run_turn("Time it.")
    finally:
        await remote.aclose()
    timed = [e for e in events if e.type == "tool_result" and e.name == _TOOL and not e.is_error]
    direct = [e.duration_ms for e in timed if e.session_id == remote.session_id]
    proxied = [e.duration_ms for e in timed if e.session_id != remote.session_id]
    return direct, proxied


async def start_seconds(runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        async with McpManager([_server()]) as manager:
            assert manager.tools, manager.problems
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        direct, proxied = asyncio.run(proxied_and_direct(Path(tmp), args.calls))
    start = asyncio.run(start_seconds())
    print(f"{_TOOL}, {args.calls} calls each (median ms per call):")
    print(f"  root, its own connection:          {statistics.median(direct):7.2f} ms  ({len(direct)} calls)")
    print(f"  subagent actor, through the root:  {statistics.median(proxied):7.2f} ms  ({len(proxied)} calls)")
    print(f"  a connection per child instead: server start {start * 1000:.0f} ms per child, before its first call")


if __name__ == "__main__":
    main()
