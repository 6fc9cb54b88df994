"""Cached prefix kept across the state changes of a session, with and without a stable prefix.

    python -m benchmarks.stable_prefix

A provider caches a request from its front — tools, system prompt, messages — up to the
first byte that differs from a cached one. One scripted session (an assembled one: the
real system prompt with its catalog, environment and memory index) reads a file, writes
a memory record, enters and leaves plan mode, sets a goal and clears it. For each change
the table gives the bytes of the previous request (in the provider's order, as the
Anthropic provider sends it, `cache_control` left out) that the next request repeats
before its first different byte, and of those the bytes in whole units (tool list,
system prompt, messages) — what the cache can still serve, since it stores blocks. Run once with
`agent.stable_prefix` off (the mode shapes the tool list, the goal sits in the system
prompt) and once on (the default: both reach the model as a state block in the next
user message).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import tempfile
from pathlib import Path
from typing import Any

from agents.modes import Mode
from agents.opening import RuntimePorts, build_session
from agents.ports import ModelRequest, ModelResponse
from agents.providers import Script, ScriptedModelClient, to_anthropic_params
from agents.session import Session
from agents.settings import AgentSettings, PermissionSettings, WorkingsetSettings

_README = "\n".join(f"line {n}: how to build and test the project, step {n}" for n in range(200))

# (what the user does before the turn, the user's input, the model's replies in that turn)
_SCRIPT: list[tuple[str, str, list[dict[str, Any]]]] = [
    (
        "start",
        "Read the README.",
        [{"tool_calls": [{"name": "Read", "input": {"path": "README.md"}}]}, {"text": "Read it."}],
    ),
    (
        "memory write",
        "Remember how to build.",
        [
            {
                "tool_calls": [
                    {
                        "name": "MemoryWrite",
                        "input": {
                            "name": "build",
                            "type": "project",
                            "description": "how to build",
                            "body": "make build",
                        },
                    }
                ]
            },
            {"text": "Noted."},
        ],
    ),
    ("plan mode on", "Plan the change.", [{"text": "Plan: edit the README."}]),
    ("plan mode off", "Do it.", [{"text": "Done."}]),
    ("goal set", "Now make the tests pass.", [{"text": "They pass."}]),
    ("goal cleared", "Thanks.", [{"text": "You are welcome."}]),
]


class _Recording:
    """The scripted model, keeping each request in the provider's wire form."""

    def __init__(self, inner: ScriptedModelClient):
        self.inner = inner
        self.name = inner.name
        self.sent: list[list[str]] = []

    async def create(self, request: ModelRequest) -> ModelResponse:
        self.sent.append(_wire(request))
        return await self.inner.create(request)


def _strip_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache_control(v) for v in value]
    return value


def _wire(request: ModelRequest) -> list[str]:
    """The request in cache order, one piece per cacheable unit: the tools, the system
    prompt, each message."""
    params = _strip_cache_control(to_anthropic_params(request, "claude-sonnet-4-5"))
    pieces = [params.get("tools", []), params.get("system", []), *params["messages"]]
    return [json.dumps(piece, sort_keys=True) for piece in pieces]


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _apply(session: Session, change: str) -> None:
    if change == "plan mode on":
        session.set_mode(Mode.PLAN)
    elif change == "plan mode off":
        session.set_mode(Mode.DEFAULT)
    elif change == "goal set":
        session.set_goal("all tests pass")
    elif change == "goal cleared":
        session.set_goal(None)


def _kept(previous: list[str], after: list[str]) -> tuple[int, int]:
    """Bytes of `previous` that `after` repeats before its first different byte, and of
    those the bytes up to the last whole unit repeated (what a cache that stores whole
    blocks, as the provider's does, can serve)."""
    kept = whole = 0
    for old, new in zip(previous, after, strict=False):
        if old != new:
            return kept + _common_prefix(old, new), whole
        kept += len(old)
        whole = kept
    return kept, whole


async def kept_bytes(root: Path, stable: bool) -> list[tuple[str, int, int, int]]:
    """(change, bytes of the request before it, bytes the request after it repeats, of
    them in whole units)."""
    workspace, home = root / "ws", root / "home"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "README.md").write_text(_README)
    turns = [turn for _, _, replies in _SCRIPT for turn in replies]
    script = Script.model_validate({"turns": turns, "judge": [{"verdict": "met", "reason": "shown"}]})
    script_file = root / "script.json"
    script_file.write_text(script.model_dump_json())
    settings = WorkingsetSettings(
        model=f"scripted:{script_file}",
        home=home,
        agent=AgentSettings(stable_prefix=stable, max_goal_auto_turns=0),
        permissions=PermissionSettings(mode="bypass"),
    )
    runtime = RuntimePorts(judge=ScriptedModelClient(script, role="judge"))
    session = build_session(settings, workspace, runtime=runtime)
    model = _Recording(ScriptedModelClient(script))  # the same script, its requests kept
    session.ports = dataclasses.replace(session.ports, model=model)
    rows = []
    for change, text, _ in _SCRIPT:
        _apply(session, change)
        before = len(model.sent)
        await session.run_turn(text)
        if change == "start":
            continue
        # A memory write changes things inside the turn (after the call); the others before it.
        first_after = before + 1 if change == "memory write" else before
        previous, after = model.sent[first_after - 1], model.sent[first_after]
        rows.append((change, sum(map(len, previous)), *_kept(previous, after)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    print(
        f"{'change':<14} {'stable_prefix':>13} {'request bytes':>13} {'same bytes':>10} {'cacheable':>10} {'cacheable %':>11}"
    )
    for stable in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            for change, previous, kept, whole in asyncio.run(kept_bytes(Path(tmp), stable)):
                print(
                    f"{change:<14} {str(stable):>13} {previous:>13} {kept:>10} {whole:>10} {100 * whole / previous:>10.1f}%"
                )


if __name__ == "__main__":
    main()
