"""A small real MCP server for the MCP tool tests, written with the official SDK.

Run over stdio (the default) or streamable HTTP (`--http PORT`). Tools:
- lookup(key): read-only (annotated readOnlyHint=True); reads the store.
- store(key, value): mutating, no hints; writes to the JSON file named by
  MCP_TEST_STORE (or a file in the temp dir when unset).
- fail(reason): always fails, so the result carries isError.
- sleep(seconds): read-only; answers after a delay (for call timeouts).
- meet(count): read-only; answers once `count` calls of it are under way at the same
  time (for concurrency, shown by events rather than by the clock; gives up after 60 s).
- crash(): exits the process without answering, like a server that dies mid-call.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("workingset-test", instructions="A key-value store for tests.", log_level="WARNING")


def _store_path() -> Path:
    default = Path(tempfile.gettempdir()) / f"mcp-test-store-{os.getpid()}.json"
    return Path(os.environ.get("MCP_TEST_STORE") or default)


def _load() -> dict[str, str]:
    path = _store_path()
    return json.loads(path.read_text()) if path.exists() else {}


@server.tool(
    description="Look up the value stored under a key.",
    annotations=ToolAnnotations(read_only_hint=True),
)
def lookup(key: str) -> str:
    data = _load()
    return f"{key} = {data[key]}" if key in data else f"{key} is not set"


@server.tool(description="Store a value under a key, replacing any previous value.")
def store(key: str, value: str) -> str:
    data = _load()
    data[key] = value
    _store_path().write_text(json.dumps(data))
    return f"stored {key}"


@server.tool(
    description="Always fails with the given reason.",
    annotations=ToolAnnotations(read_only_hint=True),
)
def fail(reason: str = "no reason") -> str:
    raise ToolError(f"failed on purpose: {reason}")


@server.tool(
    description="Wait, then answer.",
    annotations=ToolAnnotations(read_only_hint=True),
)
async def sleep(seconds: float) -> str:
    await anyio.sleep(seconds)
    return f"slept {seconds}s"


_met = {"arrived": 0}
_all_met = anyio.Event()


@server.tool(
    description="Answer once `count` calls of this tool are under way at the same time.",
    annotations=ToolAnnotations(read_only_hint=True),
)
async def meet(count: int) -> str:
    _met["arrived"] += 1
    if _met["arrived"] >= count:
        _all_met.set()
    with anyio.move_on_after(60):
        await _all_met.wait()
        return f"met {count}"
    return f"only {_met['arrived']} of {count} met"


@server.tool(description="Exit the server process at once, without answering.")
def crash() -> str:
    os._exit(3)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT")
    args = parser.parse_args()
    if args.http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
