"""Hooks: shell commands or Python callables run at fixed points of a session.

Events and their payloads (every payload also carries "hook_event_name"):

    PreToolUse    session_id, tool_name, tool_input                          may block
    PostToolUse   session_id, tool_name, tool_input, tool_result, is_error
    PreCompact    session_id, trigger ("auto" | "manual" | "prompt_too_long"), tokens_before
    PostCompact   session_id, trigger, tokens_before, tokens_after
    SessionStart  session_id, cwd, source ("startup" | "resume" | "clear")
    SubagentStop  session_id (the parent's), child_session_id, description, reason

Command hooks run `bash -c COMMAND` in the session's cwd, in a process group of
their own, with the payload as JSON on stdin and WORKINGSET_HOOK_EVENT,
WORKINGSET_PROJECT_DIR (and the spec's `env`) in the environment. They answer by
exit code and stdout:

    exit 0 + JSON object   {"decision": "block", "reason": "..."} blocks ("deny" too);
                           {"message": "..."} is additional output
    exit 0 + other text    the text is additional output
    exit 2                 block, with stderr as the reason
    any other exit code    a warning; the session goes on
    over timeout_s         the whole process group is killed; a warning, never a block

Python hooks ("pkg.module:function") are sync or async callables taking the payload
dict and returning None, a dict (the JSON answer's keys) or a HookResult. Sync ones
run on a daemon thread, so a stuck one is abandoned at its timeout and never holds
up the loop or interpreter exit.

Matching hooks run in declaration order; at PreToolUse the first block stops the
rest. Only PreToolUse can block: a block answer to any other event is a warning.
A hook that crashes, hangs or answers nonsense becomes a warning; nothing here
raises into the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import importlib
import inspect
import json
import os
import re
import signal
import tempfile
import threading
from collections.abc import Callable, Iterable
from enum import StrEnum
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["TOOL_EVENTS", "HookEvent", "HookResult", "HookRunner", "HookSpec"]


class HookEvent(StrEnum):
    PRE_TOOL_USE = "PreToolUse"
    POST_TOOL_USE = "PostToolUse"
    PRE_COMPACT = "PreCompact"
    POST_COMPACT = "PostCompact"
    SESSION_START = "SessionStart"
    SUBAGENT_STOP = "SubagentStop"


TOOL_EVENTS = frozenset({HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE})
_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_MAX_TEXT = 8_000  # hook output kept per answer; it may reach the model
_KILL_GRACE_S = 5.0
_UNBLOCKING = (None, "allow", "approve", "continue")


class HookSpec(BaseModel):
    """One hook as configured (settings or a plugin manifest)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    event: HookEvent = Field(description="When the hook runs.")
    matcher: str = Field(
        "*", description="Tool-name glob for PreToolUse/PostToolUse; '|' separates alternatives ('Write|Edit')."
    )
    command: str | None = Field(None, description="A shell command (bash -c); the payload arrives as JSON on stdin.")
    python: str | None = Field(None, description="A callable as 'pkg.module:function', sync or async.")
    timeout_s: float = Field(60.0, gt=0, description="Seconds before the hook is killed (command) or abandoned.")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment for a command hook.")
    source: str | None = Field(None, description="Where the hook came from (a plugin name); shown in warnings.")

    @model_validator(mode="after")
    def _check(self) -> HookSpec:
        if (self.command is None) == (self.python is None):
            raise ValueError("a hook needs exactly one of 'command' or 'python'")
        if self.command is not None and not self.command.strip():
            raise ValueError("'command' is empty")
        if self.python is not None and not _IMPORT_PATH.match(self.python):
            raise ValueError(f"'python' must look like 'pkg.module:function', got {self.python!r}")
        if self.matcher != "*" and self.event not in TOOL_EVENTS:
            raise ValueError(f"'matcher' only applies to PreToolUse and PostToolUse, not {self.event.value}")
        return self

    def matches(self, event: HookEvent, tool_name: str | None = None) -> bool:
        if self.event != event:
            return False
        if event not in TOOL_EVENTS or self.matcher == "*":
            return True
        return tool_name is not None and any(fnmatchcase(tool_name, p.strip()) for p in self.matcher.split("|"))

    @property
    def label(self) -> str:
        action = f"command {_short(self.command)!r}" if self.command is not None else f"python {self.python}"
        origin = f" from plugin {self.source!r}" if self.source else ""
        return f"{self.event.value} hook ({action}{origin})"


class HookResult(BaseModel):
    """What the matching hooks of one event said, together."""

    block: bool = Field(False, description="True: the tool call must not run (PreToolUse only).")
    reason: str | None = Field(None, description="Why it was blocked, in the hook's words.")
    messages: list[str] = Field(default_factory=list, description="Additional output the hooks printed.")
    warnings: list[str] = Field(default_factory=list, description="Hooks that failed, timed out or misanswered.")

    @property
    def message(self) -> str:
        return "\n".join(self.messages)


class HookRunner:
    """Runs the configured hooks of an event, in order, never raising into the session."""

    def __init__(self, specs: Iterable[HookSpec], cwd: Path):
        self.specs = list(specs)
        self.cwd = Path(cwd)
        self._callables: dict[str, Callable[..., Any]] = {}

    def matching(self, event: HookEvent | str, tool_name: str | None = None) -> list[HookSpec]:
        event = HookEvent(event)
        return [s for s in self.specs if s.matches(event, tool_name)]

    async def run(self, event: HookEvent | str, payload: dict[str, Any]) -> HookResult:
        event = HookEvent(event)
        data = {**payload, "hook_event_name": event.value}
        result = HookResult()
        for spec in self.matching(event, payload.get("tool_name")):
            one = await self._run_one(spec, data)
            result.messages.extend(one.messages)
            result.warnings.extend(one.warnings)
            if not one.block:
                continue
            if event is HookEvent.PRE_TOOL_USE:
                result.block, result.reason = True, one.reason or f"blocked by {spec.label}"
                break
            why = f" (reason: {one.reason})" if one.reason else ""
            result.warnings.append(f"{spec.label} answered block, but only PreToolUse hooks can block; ignored{why}")
        return result

    async def _run_one(self, spec: HookSpec, data: dict[str, Any]) -> HookResult:
        try:
            if spec.command is not None:
                return await self._run_command(spec, data)
            return await self._run_python(spec, data)
        except Exception as exc:  # a hook must never take the session down
            return HookResult(warnings=[f"{spec.label} failed: {type(exc).__name__}: {exc}"])

    async def _run_command(self, spec: HookSpec, data: dict[str, Any]) -> HookResult:
        assert spec.command is not None
        env = {
            **os.environ,
            **spec.env,
            "WORKINGSET_HOOK_EVENT": spec.event.value,
            "WORKINGSET_PROJECT_DIR": str(self.cwd),
        }
        # Files, not pipes: a background child that inherits stdout cannot hold the hook
        # open after bash exits, and waiting needs only the process itself.
        with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            stdin.write(json.dumps(data, default=str).encode())
            stdin.seek(0)
            proc = await asyncio.create_subprocess_exec(
                "bash",
                "-c",
                spec.command,
                stdin=stdin,
                stdout=out,
                stderr=err,
                cwd=self.cwd,
                env=env,
                start_new_session=True,  # its own process group, so a timeout kills its children too
            )
            try:
                await asyncio.wait_for(proc.wait(), spec.timeout_s)
            except TimeoutError:
                await _kill_group(proc)
                return HookResult(
                    warnings=[f"{spec.label} timed out after {spec.timeout_s:g}s and was killed; it did not block"]
                )
            except asyncio.CancelledError:  # the session stopped waiting: leave nothing running
                await _kill_group(proc)
                raise
            return _command_answer(spec, proc.returncode, _read(out), _read(err))

    async def _run_python(self, spec: HookSpec, data: dict[str, Any]) -> HookResult:
        assert spec.python is not None
        func = self._resolve(spec.python)
        try:
            answer = await asyncio.wait_for(_call(func, copy.deepcopy(data)), spec.timeout_s)
        except TimeoutError:
            return HookResult(
                warnings=[f"{spec.label} timed out after {spec.timeout_s:g}s and was abandoned; it did not block"]
            )
        if answer is None:
            return HookResult()
        if isinstance(answer, HookResult):
            return answer.model_copy(deep=True)
        if isinstance(answer, dict):
            return _parse_answer(spec, answer)
        return HookResult(
            warnings=[f"{spec.label} returned {type(answer).__name__}; expected None, a dict or a HookResult"]
        )

    def _resolve(self, path: str) -> Callable[..., Any]:
        if path not in self._callables:
            module_name, _, attr = path.partition(":")
            target: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                target = getattr(target, part)
            if not callable(target):
                raise TypeError(f"{path} is not callable")
            self._callables[path] = target
        return self._callables[path]


def _command_answer(spec: HookSpec, code: int | None, out: str, err: str) -> HookResult:
    out, err = out.strip(), err.strip()
    if code == 2:
        return HookResult(block=True, reason=_clip(err or out or f"{spec.label} exited with code 2"))
    if code != 0:
        detail = f": {_clip(err)}" if err else ""
        return HookResult(warnings=[f"{spec.label} exited with code {code}{detail}"])
    if not out:
        return HookResult()
    if not out.startswith("{"):
        return HookResult(messages=[_clip(out)])
    try:
        answer = json.loads(out)
    except json.JSONDecodeError as exc:
        return HookResult(warnings=[f"{spec.label} printed invalid JSON ({exc}); its answer was ignored"])
    return _parse_answer(spec, answer)


def _parse_answer(spec: HookSpec, answer: Any) -> HookResult:
    """The JSON answer of a command, or the dict a Python hook returned."""
    if not isinstance(answer, dict):
        return HookResult(warnings=[f"{spec.label} answered {type(answer).__name__}, not an object; ignored"])
    result = HookResult()
    decision = answer.get("decision")
    if decision in ("block", "deny") or answer.get("block") is True:
        result.block = True
    elif decision not in _UNBLOCKING:
        result.warnings.append(f"{spec.label} answered unknown decision {decision!r} (use 'block'); ignored")
    if answer.get("reason") is not None:
        result.reason = _clip(str(answer["reason"]))
    if answer.get("message") is not None:
        result.messages.append(_clip(str(answer["message"])))
    return result


async def _call(func: Callable[..., Any], payload: dict[str, Any]) -> Any:
    if inspect.iscoroutinefunction(func):
        return await func(payload)
    answer = await _in_daemon_thread(func, payload)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer


def _in_daemon_thread(func: Callable[..., Any], payload: dict[str, Any]) -> asyncio.Future[Any]:
    """Run a sync hook off the loop. Unlike the default executor, an abandoned
    (timed-out) daemon thread never delays loop shutdown or interpreter exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():  # timed out and abandoned
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def target() -> None:
        value, error = None, None
        try:
            value = func(payload)
        except BaseException as exc:  # reported as the hook's failure, never raised in this thread
            error = exc if isinstance(exc, Exception) else RuntimeError(f"{type(exc).__name__}: {exc}")
        with contextlib.suppress(RuntimeError):  # the loop may be closed by now
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=target, name="workingset-hook", daemon=True).start()
    return future


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), _KILL_GRACE_S)


def _read(file: Any) -> str:
    """A command's output file, head and tail only when it is huge."""
    size = file.seek(0, os.SEEK_END)
    file.seek(0)
    if size <= 8 * _MAX_TEXT:
        return file.read().decode(errors="replace")
    head = file.read(4 * _MAX_TEXT)
    file.seek(-4 * _MAX_TEXT, os.SEEK_END)
    return (head + b"\n[...]\n" + file.read()).decode(errors="replace")


def _clip(text: str) -> str:
    if len(text) <= _MAX_TEXT:
        return text
    half = _MAX_TEXT // 2
    return f"{text[:half]}\n[hook output truncated: {len(text) - 2 * half} chars removed]\n{text[-half:]}"


def _short(command: str | None, limit: int = 60) -> str:
    text = " ".join((command or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
