"""Hooks run as real processes and real imported callables; no mocks."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from agents.sources._hooks import HookEvent, HookResult, HookRunner, HookSpec

_ids = itertools.count()


def pre_tool(name: str = "Bash", **extra) -> dict:
    return {"session_id": "s1", "tool_name": name, "tool_input": {"command": "ls"}, **extra}


def command_hook(command: str, *, event: str = "PreToolUse", **fields) -> HookSpec:
    return HookSpec(event=event, command=command, **fields)


@pytest.fixture
def hook_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Write a Python module of hooks under a unique name; returns that name."""
    written: list[str] = []
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(source: str) -> str:
        name = f"ws_hooks_{os.getpid()}_{next(_ids)}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        written.append(name)
        return name

    yield write
    for name in written:
        sys.modules.pop(name, None)


async def test_json_block_answer_blocks_pre_tool_use_with_its_reason(tmp_path: Path):
    hook = command_hook("""echo '{"decision": "block", "reason": "no shell on Fridays"}'""")
    result = await HookRunner([hook], tmp_path).run(HookEvent.PRE_TOOL_USE, pre_tool())
    assert result.block is True
    assert result.reason == "no shell on Fridays"


async def test_exit_code_2_blocks_with_stderr_as_the_reason(tmp_path: Path):
    hook = command_hook("echo 'rm is not allowed here' >&2; exit 2")
    result = await HookRunner([hook], tmp_path).run("PreToolUse", pre_tool())
    assert result.block is True
    assert result.reason == "rm is not allowed here"


async def test_matcher_limits_a_hook_to_matching_tool_names(tmp_path: Path):
    hook = command_hook("exit 2", matcher="Write|mcp__*")
    runner = HookRunner([hook], tmp_path)
    assert (await runner.run("PreToolUse", pre_tool("Write"))).block
    assert (await runner.run("PreToolUse", pre_tool("mcp__docs__search"))).block
    assert not (await runner.run("PreToolUse", pre_tool("Read"))).block


async def test_post_tool_use_hook_receives_the_tool_result_on_stdin(tmp_path: Path):
    seen = tmp_path / "payload.json"
    hook = command_hook(f"cat > {seen}", event="PostToolUse")
    payload = pre_tool(tool_result="3 files", is_error=False)
    result = await HookRunner([hook], tmp_path).run("PostToolUse", payload)
    assert result == HookResult()
    assert json.loads(seen.read_text()) == {**payload, "hook_event_name": "PostToolUse"}


async def test_command_hook_runs_in_the_session_cwd(tmp_path: Path):
    result = await HookRunner([command_hook("pwd", event="SessionStart")], tmp_path).run(
        "SessionStart", {"session_id": "s1", "cwd": str(tmp_path), "source": "startup"}
    )
    assert result.messages == [str(tmp_path)]


async def test_sync_python_hook_can_block(tmp_path: Path, hook_module):
    module = hook_module(
        """
        def guard(payload):
            if payload["tool_input"]["command"] == "ls":
                return {"decision": "block", "reason": "sync says no"}
        """
    )
    hook = HookSpec(event="PreToolUse", python=f"{module}:guard")
    result = await HookRunner([hook], tmp_path).run("PreToolUse", pre_tool())
    assert (result.block, result.reason) == (True, "sync says no")


async def test_async_python_hook_can_block_with_a_hook_result(tmp_path: Path, hook_module):
    module = hook_module(
        """
        import asyncio
        from agents.sources._hooks import HookResult

        async def guard(payload):
            await asyncio.sleep(0)
            return HookResult(block=True, reason=f"async says no to {payload['tool_name']}")
        """
    )
    hook = HookSpec(event="PreToolUse", python=f"{module}:guard")
    result = await HookRunner([hook], tmp_path).run("PreToolUse", pre_tool())
    assert (result.block, result.reason) == (True, "async says no to Bash")


async def test_python_hook_cannot_change_the_callers_payload(tmp_path: Path, hook_module):
    module = hook_module(
        """
        def meddle(payload):
            payload["tool_input"]["command"] = "rm -rf /"
        """
    )
    payload = pre_tool()
    await HookRunner([HookSpec(event="PreToolUse", python=f"{module}:meddle")], tmp_path).run("PreToolUse", payload)
    assert payload["tool_input"] == {"command": "ls"}


async def test_command_hook_that_times_out_is_killed_and_does_not_block(tmp_path: Path):
    child = tmp_path / "child.pid"
    hook = command_hook(f'sleep 30 & echo $! > {child}; wait; echo \'{{"decision": "block"}}\'', timeout_s=0.5)
    started = time.monotonic()
    result = await HookRunner([hook], tmp_path).run("PreToolUse", pre_tool())
    assert time.monotonic() - started < 25  # killed at its timeout, not waited for (the sleep is 30 s)
    assert result.block is False
    assert "timed out after 0.5s and was killed" in result.warnings[0]
    assert await _gone(int(child.read_text()))


async def test_cancelling_a_running_hook_kills_its_processes(tmp_path: Path):
    child = tmp_path / "child.pid"
    hook = command_hook(f"sleep 30 & echo $! > {child}; wait", timeout_s=60)
    task = asyncio.create_task(HookRunner([hook], tmp_path).run("PreToolUse", pre_tool()))
    while not child.exists() or not child.read_text().strip():
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _gone(int(child.read_text()))


async def test_command_hook_returns_when_bash_exits_even_if_a_child_lingers(tmp_path: Path):
    child = tmp_path / "child.pid"
    hook = command_hook(f"sleep 60 & echo $! > {child}; echo done", timeout_s=90)
    started = time.monotonic()
    result = await HookRunner([hook], tmp_path).run("PreToolUse", pre_tool())
    assert time.monotonic() - started < 45  # bash's exit, not the child's 60 s
    assert result.messages == ["done"]
    os.kill(int(child.read_text()), 9)


async def test_python_hook_that_times_out_is_abandoned_and_does_not_block(tmp_path: Path, hook_module):
    module = hook_module(
        """
        import time

        def stuck(payload):
            time.sleep(30)
        """
    )
    hook = HookSpec(event="PreToolUse", python=f"{module}:stuck", timeout_s=0.2)
    result = await HookRunner([hook], tmp_path).run("PreToolUse", pre_tool())
    assert result.block is False
    assert "timed out after 0.2s" in result.warnings[0]


async def test_crashing_python_hook_is_reported_as_a_warning(tmp_path: Path, hook_module):
    module = hook_module(
        """
        def broken(payload):
            raise KeyError("tool_output")
        """
    )
    hooks = [HookSpec(event="PostToolUse", python=f"{module}:broken"), command_hook("echo after", event="PostToolUse")]
    result = await HookRunner(hooks, tmp_path).run("PostToolUse", pre_tool(tool_result="x", is_error=False))
    assert result.block is False
    assert f"python {module}:broken" in result.warnings[0] and "KeyError" in result.warnings[0]
    assert result.messages == ["after"]  # the next hook still ran


async def test_unimportable_python_hook_is_reported_as_a_warning(tmp_path: Path):
    hook = HookSpec(event="PreToolUse", python="no_such_module_here:hook")
    result = await HookRunner([hook], tmp_path).run("PreToolUse", pre_tool())
    assert result.block is False
    assert "ModuleNotFoundError" in result.warnings[0]


async def test_failing_command_hook_is_a_warning_not_a_block(tmp_path: Path):
    result = await HookRunner([command_hook("echo oops >&2; exit 1")], tmp_path).run("PreToolUse", pre_tool())
    assert result.block is False
    assert result.warnings == ["PreToolUse hook (command 'echo oops >&2; exit 1') exited with code 1: oops"]


async def test_block_answer_to_another_event_is_only_a_warning(tmp_path: Path):
    hook = command_hook("echo 'compaction forbidden' >&2; exit 2", event="PreCompact")
    result = await HookRunner([hook], tmp_path).run(
        "PreCompact", {"session_id": "s1", "trigger": "auto", "tokens_before": 9000}
    )
    assert result.block is False
    assert "only PreToolUse hooks can block" in result.warnings[0]
    assert "compaction forbidden" in result.warnings[0]


async def test_first_block_stops_the_later_hooks(tmp_path: Path):
    marker = tmp_path / "second-ran"
    hooks = [command_hook("exit 2"), command_hook(f"touch {marker}")]
    result = await HookRunner(hooks, tmp_path).run("PreToolUse", pre_tool())
    assert result.block is True
    assert not marker.exists()


def test_hook_spec_needs_exactly_one_of_command_or_python():
    with pytest.raises(ValidationError, match="exactly one of 'command' or 'python'"):
        HookSpec(event="PreToolUse", command="true", python="pkg.mod:fn")


def test_matcher_is_refused_on_events_without_a_tool():
    with pytest.raises(ValidationError, match="only applies to PreToolUse and PostToolUse"):
        HookSpec(event="SessionStart", matcher="Bash", command="true")


async def _gone(pid: int, within_s: float = 3.0) -> bool:
    """Dead or a zombie within a moment: SIGKILL is delivered asynchronously."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        await asyncio.sleep(0.02)
    return False
