"""MCP tools against real server processes: tests/support/mcp_test_server.py (written with the
`mcp` SDK) and the published `mcp-server-time` from PyPI. No mocks.

Most tests share one manager (module scope) so each server process starts once.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import mcp_types
import pytest
import pytest_asyncio
from mcp import Client, StdioServerParameters
from pydantic import ValidationError

from agents.modes import Mode, is_visible, visible_registry
from tests.support import MCP_TEST_SERVER as SERVER
from tools.base import ExecutionDomain, ToolContext, ToolError
from tools.executor import LocalToolExecutor
from tools.mcp._tool import (
    McpManager,
    McpServerConfig,
    McpTool,
    mcp_tool_name,
    render_content,
)
from tools.registry import ToolRegistry, validate_input

# Tests on the shared manager run on its (module) event loop.
shared_loop = pytest.mark.asyncio(loop_scope="module")

KV_TOOLS = {"lookup", "store", "fail", "sleep", "meet", "crash"}
STEP_TIMEOUT_S = 15  # no single step may hang a test


def kv_config(name: str, store: Path, *, trusted: bool, **extra: object) -> McpServerConfig:
    return McpServerConfig(
        name=name,
        command=sys.executable,
        args=[str(SERVER)],
        env={"MCP_TEST_STORE": str(store), "HOME": str(store.parent)},
        trusted=trusted,
        timeout_s=STEP_TIMEOUT_S,
        call_timeout_s=STEP_TIMEOUT_S,
        **extra,  # type: ignore[arg-type]
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def manager(store_dir: Path) -> AsyncIterator[McpManager]:
    configs = [
        kv_config("kv", store_dir / "kv.json", trusted=True),
        kv_config("kv-untrusted", store_dir / "untrusted.json", trusted=False),
        McpServerConfig(name="missing", command="workingset-no-such-mcp-server"),
        McpServerConfig(
            name="dies",
            command=sys.executable,
            args=["-c", "import sys; sys.stderr.write('bad config: no token\\n'); sys.exit(2)"],
        ),
        # Reads its input and never answers: only the start timeout ends it.
        McpServerConfig(
            name="mute",
            command=sys.executable,
            args=["-c", "import sys; sys.stdin.read()"],
            timeout_s=1,
        ),
        McpServerConfig(name="nohttp", transport="http", url=f"http://127.0.0.1:{free_port()}/mcp"),
        McpServerConfig(name="off", command="workingset-no-such-mcp-server", enabled=False),
        kv_config("kv", store_dir / "dup.json", trusted=True),  # a duplicate name
        McpServerConfig(
            name="time",
            command=sys.executable,
            args=["-m", "mcp_server_time", "--local-timezone", "UTC"],
            trusted=True,
            timeout_s=STEP_TIMEOUT_S,
        ),
    ]
    mgr = McpManager(configs, log_dir=store_dir / "logs")
    async with asyncio.timeout(30):
        await mgr.start()
    yield mgr
    async with asyncio.timeout(30):
        await mgr.aclose()


def tools_of(mgr: McpManager) -> dict[str, McpTool]:
    return {t.name: t for t in mgr.tools}


async def call(tool: McpTool, raw: object, tmp: Path = Path(".")) -> tuple[str, bool]:
    """Run a tool the way the session does: validate, execute, ToolError -> is_error."""
    async with asyncio.timeout(STEP_TIMEOUT_S):
        out = await LocalToolExecutor().execute(tool, validate_input(tool, raw), ToolContext(workspace=tmp))
    return out.content, out.is_error


# --- listing, naming and metadata ---


@shared_loop
async def test_tools_are_listed_and_named_per_server(manager: McpManager) -> None:
    names = set(tools_of(manager))
    assert {f"mcp__kv__{t}" for t in KV_TOOLS} <= names
    assert {f"mcp__kv-untrusted__{t}" for t in KV_TOOLS} <= names
    assert {"mcp__time__get_current_time", "mcp__time__convert_time"} <= names
    assert not any("missing" in n or "dies" in n or "mute" in n or "off" in n for n in names)
    registry = ToolRegistry(manager.tools)  # validates every declaration and name
    assert len(registry) == len(manager.tools) == 14
    lookup = tools_of(manager)["mcp__kv__lookup"]
    assert lookup.description == "[MCP server 'kv'] Look up the value stored under a key."
    assert lookup.execution_domain is ExecutionDomain.REMOTE
    assert lookup.root_only is False


@shared_loop
async def test_trusted_server_annotations_decide_read_only(manager: McpManager) -> None:
    tools = tools_of(manager)
    assert tools["mcp__kv__lookup"].is_read_only is True
    assert tools["mcp__kv__fail"].is_read_only is True
    assert tools["mcp__kv__store"].is_read_only is False
    assert tools["mcp__kv__crash"].is_read_only is False


@shared_loop
async def test_untrusted_server_tools_are_never_read_only(manager: McpManager) -> None:
    untrusted = [t for t in manager.tools if t.server_name == "kv-untrusted"]
    assert {t.remote_name for t in untrusted} == KV_TOOLS
    assert untrusted[0].definition.annotations is not None  # the hint is there, and ignored
    assert all(t.is_read_only is False for t in untrusted)


@shared_loop
async def test_plan_mode_shapes_mcp_tools_by_metadata_alone(manager: McpManager) -> None:
    tools = tools_of(manager)
    assert is_visible(tools["mcp__kv__lookup"], Mode.PLAN)
    assert not is_visible(tools["mcp__kv__store"], Mode.PLAN)
    assert not is_visible(tools["mcp__kv-untrusted__lookup"], Mode.PLAN)
    plan = visible_registry(ToolRegistry(manager.tools), Mode.PLAN)
    assert set(plan.names()) == {
        "mcp__kv__lookup",
        "mcp__kv__fail",
        "mcp__kv__sleep",
        "mcp__kv__meet",
        "mcp__time__get_current_time",
        "mcp__time__convert_time",
    }
    assert all(is_visible(t, Mode.DEFAULT) for t in manager.tools)


@shared_loop
async def test_model_sees_the_servers_input_schema(manager: McpManager) -> None:
    # An independent connection to the same server, straight through the SDK.
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    async with asyncio.timeout(STEP_TIMEOUT_S), Client(params) as client:
        listed = {t.name: t.input_schema for t in (await client.list_tools()).tools}
    schemas = {s["name"]: s["input_schema"] for s in ToolRegistry(manager.tools).schemas()}
    for remote in KV_TOOLS:
        assert schemas[f"mcp__kv__{remote}"] == listed[remote]
        assert tools_of(manager)[f"mcp__kv__{remote}"].input_model.model_json_schema() == listed[remote]
    assert listed["store"]["required"] == ["key", "value"]


# --- calling ---


@shared_loop
async def test_calls_return_text_and_map_is_error(manager: McpManager, store_dir: Path) -> None:
    tools = tools_of(manager)
    assert await call(tools["mcp__kv__store"], {"key": "colour", "value": "teal"}) == (
        "stored colour",
        False,
    )
    assert json.loads((store_dir / "kv.json").read_text()) == {"colour": "teal"}
    assert await call(tools["mcp__kv__lookup"], {"key": "colour"}) == ("colour = teal", False)
    text, is_error = await call(tools["mcp__kv__fail"], {"reason": "disk full"})
    assert is_error and "failed on purpose: disk full" in text
    # The input model lets anything through; the server validates its own input.
    text, is_error = await call(tools["mcp__kv__lookup"], {"nokey": 1})
    assert is_error and "key" in text
    # Servers are separate processes with separate state.
    assert await call(tools["mcp__kv-untrusted__lookup"], {"key": "colour"}) == (
        "colour is not set",
        False,
    )


@shared_loop
async def test_published_time_server_from_pypi(manager: McpManager) -> None:
    tools = tools_of(manager)
    current = tools["mcp__time__get_current_time"]
    assert current.is_read_only  # trusted, and its tools carry readOnlyHint
    assert "timezone" in current.input_model.model_json_schema()["properties"]
    text, is_error = await call(current, {"timezone": "UTC"})
    assert not is_error
    assert json.loads(text)["timezone"] == "UTC"
    text, is_error = await call(
        tools["mcp__time__convert_time"],
        {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
    )
    assert not is_error and "21:00" in text
    text, is_error = await call(current, {"timezone": "Not/AZone"})
    assert is_error


# --- failures ---


@shared_loop
async def test_start_failures_are_clear_problems_and_others_still_work(
    manager: McpManager,
) -> None:
    problems = manager.problems
    by_server = {
        name: [p for p in problems if f"'{name}'" in p] for name in ("missing", "dies", "mute", "nohttp", "kv", "off")
    }
    assert by_server["missing"] == [
        "MCP server 'missing' did not start: command 'workingset-no-such-mcp-server' "
        "was not found; continuing without its tools"
    ]
    assert "exited or crashed" in by_server["dies"][0]
    assert "bad config: no token" in by_server["dies"][0]  # the server's stderr is quoted
    assert "did not start within 1s" in by_server["mute"][0]
    assert "did not start" in by_server["nohttp"][0] and "ConnectError" in by_server["nohttp"][0]
    assert by_server["kv"] == ["MCP server name 'kv' is configured twice; only the first one is used"]
    assert by_server["off"] == []  # disabled: neither started nor reported
    assert all(p.endswith("continuing without its tools") for p in problems if "did not start" in p)
    assert len(problems) == 5
    assert await call(tools_of(manager)["mcp__kv__lookup"], {"key": "x"}) == ("x is not set", False)


async def test_crash_after_start_gives_tool_error_not_hang(tmp_path: Path) -> None:
    mgr = McpManager([kv_config("kv", tmp_path / "kv.json", trusted=True)])
    # Opened in one task and closed in another, as a session may do.
    async with asyncio.timeout(STEP_TIMEOUT_S):
        await asyncio.create_task(mgr.start())
    try:
        assert mgr.problems == []
        tools = tools_of(mgr)
        started = time.monotonic()
        text, is_error = await call(tools["mcp__kv__crash"], {})
        assert is_error
        assert "MCP server 'kv' is unavailable" in text and "exited or crashed" in text
        text, is_error = await call(tools["mcp__kv__lookup"], {"key": "a"})
        assert is_error and "MCP server 'kv' is unavailable" in text
        assert time.monotonic() - started < 5
        with pytest.raises(ToolError, match="unavailable"):
            await tools["mcp__kv__lookup"].run(
                validate_input(tools["mcp__kv__lookup"], {"key": "a"}),
                ToolContext(workspace=tmp_path),
            )
        assert mgr.problems == [
            "MCP server 'kv' stopped: the server closed the connection (it exited or crashed); "
            "its tools are unavailable"
        ]
    finally:
        async with asyncio.timeout(STEP_TIMEOUT_S):
            await mgr.aclose()
    await mgr.aclose()  # idempotent


async def test_slow_call_times_out_and_the_server_stays_usable(tmp_path: Path) -> None:
    cfg = kv_config("kv", tmp_path / "kv.json", trusted=True).model_copy(update={"call_timeout_s": 0.5})
    async with asyncio.timeout(STEP_TIMEOUT_S), McpManager([cfg]) as mgr:
        tools = tools_of(mgr)
        text, is_error = await call(tools["mcp__kv__sleep"], {"seconds": 10})
        assert is_error
        assert text == "MCP server 'kv' did not answer sleep within 0.5s; the call was abandoned"
        assert await call(tools["mcp__kv__sleep"], {"seconds": 0}) == ("slept 0.0s", False)
        # Calls on one connection run concurrently (the session runs read-only batches in
        # parallel): one after another, three calls of `meet` would never all be under way.
        results = await asyncio.gather(*(call(tools["mcp__kv__meet"], {"count": 3}) for _ in range(3)))
        assert results == [("met 3", False)] * 3
        assert mgr.problems == []


async def test_calls_after_close_are_tool_errors(tmp_path: Path) -> None:
    async with (
        asyncio.timeout(STEP_TIMEOUT_S),
        McpManager([kv_config("kv", tmp_path / "kv.json", trusted=False)]) as mgr,
    ):
        lookup = tools_of(mgr)["mcp__kv__lookup"]
        assert await call(lookup, {"key": "a"}) == ("a is not set", False)
    text, is_error = await call(lookup, {"key": "a"})
    assert is_error and "unavailable" in text
    assert mgr.problems == []  # closing is not a problem


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", str(port)],
        env={**os.environ, "MCP_TEST_STORE": str(tmp_path / "http.json")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the HTTP test server did not come up") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait(timeout=STEP_TIMEOUT_S)


async def test_streamable_http_server_and_its_crash(http_server: str, tmp_path: Path) -> None:
    cfg = McpServerConfig(
        name="remote kv",  # sanitized into the tool names
        transport="http",
        url=http_server,
        headers={"X-Test": "1"},
        trusted=True,
        timeout_s=STEP_TIMEOUT_S,
    )
    async with asyncio.timeout(2 * STEP_TIMEOUT_S), McpManager([cfg]) as mgr:
        assert mgr.problems == []
        tools = tools_of(mgr)
        assert set(tools) == {f"mcp__remote_kv__{t}" for t in KV_TOOLS}
        assert tools["mcp__remote_kv__lookup"].is_read_only
        assert await call(tools["mcp__remote_kv__store"], {"key": "k", "value": "v"}) == (
            "stored k",
            False,
        )
        assert await call(tools["mcp__remote_kv__lookup"], {"key": "k"}) == ("k = v", False)
        # The HTTP server dies mid-call: the caller gets an error result, not a hang or a cancel.
        text, is_error = await call(tools["mcp__remote_kv__crash"], {})
        assert is_error and "MCP server 'remote kv'" in text
        text, is_error = await call(tools["mcp__remote_kv__lookup"], {"key": "k"})
        assert is_error and "unavailable" in text
        assert any("stopped" in p for p in mgr.problems)


# --- pieces that need no server ---


def test_tool_names_fit_the_registry_rule() -> None:
    assert mcp_tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert mcp_tool_name("my.server", "files/read file") == "mcp__my_server__files_read_file"
    long_a = mcp_tool_name("s" * 40, "t" * 40 + "a")
    long_b = mcp_tool_name("s" * 40, "t" * 40 + "b")
    assert len(long_a) == len(long_b) == 64 and long_a != long_b
    assert long_a.startswith("mcp__sss")


def test_config_requires_the_fields_of_its_transport() -> None:
    with pytest.raises(ValidationError, match="needs a command"):
        McpServerConfig(name="x")
    with pytest.raises(ValidationError, match="needs a url"):
        McpServerConfig(name="x", transport="http")
    with pytest.raises(ValidationError):
        McpServerConfig(name="x", command="y", bogus=1)  # type: ignore[call-arg]
    cfg = McpServerConfig.model_validate(
        {"name": "gh", "command": "npx", "args": ["-y", "server"], "env": {"TOKEN": "t"}}
    )
    assert cfg.transport == "stdio" and cfg.trusted is False and cfg.enabled is True
    assert all(f.description for f in McpServerConfig.model_fields.values())


def test_non_text_content_is_described_briefly() -> None:
    result = mcp_types.CallToolResult(
        content=[
            mcp_types.TextContent(type="text", text="see below"),
            mcp_types.ImageContent(type="image", data="aGVsbG8=", mime_type="image/png"),
            mcp_types.ResourceLink(type="resource_link", name="log", uri="file:///tmp/log"),
            mcp_types.EmbeddedResource(
                type="resource",
                resource=mcp_types.TextResourceContents(uri="file:///a.txt", text="alpha"),
            ),
            mcp_types.EmbeddedResource(
                type="resource",
                resource=mcp_types.BlobResourceContents(
                    uri="file:///b.bin", blob="AAAA", mime_type="application/octet-stream"
                ),
            ),
        ]
    )
    assert render_content(result).splitlines() == [
        "see below",
        "[image: image/png, 8 base64 chars, not shown]",
        "[resource link: log <file:///tmp/log>]",
        "[resource <file:///a.txt>]",
        "alpha",
        "[binary resource <file:///b.bin> (application/octet-stream), not shown]",
    ]
    structured = mcp_types.CallToolResult(content=[], structured_content={"n": 1})
    assert render_content(structured) == '{"n": 1}'
    assert render_content(mcp_types.CallToolResult(content=[])) == "(no output)"
