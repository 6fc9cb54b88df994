"""`scripted:<file>` — a deterministic, offline model read from a JSON or YAML script.

The script holds the root session's assistant turns, scripts for subagents keyed by
the Agent call's description, and the judge's verdicts. Each client replays its own
part from the start; when it runs out it answers `final_text` and ends the turn.

A turn may also end the way a real provider's reply can (`stop_reason: max_tokens`,
`refusal`, `pause_turn`), carry a reasoning block (`thinking`), or send tool arguments
that are not JSON (`raw_input`), so every stop reason can be run offline.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.errors import ConfigError, Overloaded, PromptTooLong
from agents.messages import TextBlock, ThinkingBlock, ToolUseBlock
from agents.ports import ModelRequest, ModelResponse, ReplyBlock, StopReason, ToolSchema, Usage
from agents.providers.base import ProviderContext
from agents.tokens import CharRatioEstimator, IncrementalEstimate, estimate_prefix_tokens

__all__ = ["Script", "ScriptedModelClient", "ScriptedTurn", "load_script", "make_client"]

_STRICT = ConfigDict(extra="forbid")


class ScriptedToolCall(BaseModel):
    model_config = _STRICT
    name: str = Field(description="Tool name, e.g. Read.")
    input: dict[str, Any] = Field(default_factory=dict, description="Tool input.")
    id: str | None = Field(None, description="tool_use id; generated when absent.")
    raw_input: str | None = Field(
        None, description="Arguments sent as this text instead of `input` (e.g. broken JSON)."
    )


class ScriptedTurn(BaseModel):
    """One assistant reply."""

    model_config = _STRICT
    text: str | None = Field(None, description="Text block before any tool calls.")
    thinking: str | None = Field(None, description="An (unsigned) reasoning block before the text.")
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list, description="tool_use blocks.")
    sleep_ms: int = Field(0, ge=0, description="Simulated latency before answering.")
    error: Literal["prompt_too_long", "overloaded"] | None = Field(
        None, description="Raise this provider error instead of answering (consumes the turn)."
    )
    stop_reason: Literal["max_tokens", "refusal", "pause_turn"] | None = Field(
        None, description="End the reply this way instead of naturally (or with tool_use)."
    )


class ScriptedAgent(BaseModel):
    model_config = _STRICT
    turns: list[ScriptedTurn] = Field(default_factory=list)
    final_text: str = "Done."


class JudgeVerdict(BaseModel):
    model_config = _STRICT
    verdict: Literal["met", "not_met", "error"]
    reason: str = ""


class Script(ScriptedAgent):
    """The whole file: the root agent's turns plus subagent scripts and judge verdicts."""

    subagents: dict[str, ScriptedAgent] = Field(default_factory=dict)
    judge: list[JudgeVerdict] = Field(default_factory=list)
    summaries: list[str] = Field(default_factory=list, description="Replies of the summarizer role, in order.")


def load_script(path: Path) -> Script:
    """Read and validate a script; every problem is a ConfigError naming the file.
    Parsed scripts are kept per (path, size, mtime): a batch opens the same file many times."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise ConfigError(f"scripted model file {path} cannot be read ({exc.strerror}); check the path") from exc
    return _load_script(path, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _load_script(path: Path, size: int, mtime_ns: int) -> Script:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"scripted model file {path} cannot be read ({exc.strerror}); check the path") from exc
    try:
        raw = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(
            f"scripted model file {path} is not valid {path.suffix.lstrip('.') or 'YAML'}: {exc}"
        ) from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"scripted model file {path} must hold a mapping with a 'turns' list")
    try:
        return Script.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ConfigError(
            f"scripted model file {path}: '{loc}': {first['msg']} (see docs/running-agents.md, 'Scripted models')"
        ) from exc


def make_client(name: str, context: ProviderContext) -> ScriptedModelClient:
    """The `scripted:` provider factory: `name` is the script's path."""
    return ScriptedModelClient.from_file(context.resolve(name), role=context.role)


class ScriptedModelClient:
    """Replays one agent's turns. `role` is "root", "judge" or "subagent:<description>"."""

    def __init__(self, script: Script, *, role: str = "root", source: str = "script"):
        self.script = script
        self.role = role
        self.name = f"scripted:{source}"
        self._counter = CharRatioEstimator()
        self._estimate = IncrementalEstimate(self._counter)
        self._prefix: tuple[str, tuple[ToolSchema, ...], int] | None = None  # system, tools, their tokens
        self._cursor = 0
        self._id_prefix = hashlib.sha1(role.encode()).hexdigest()[:6]
        if role in ("root", "judge", "summarizer"):
            self._agent: ScriptedAgent = script
        elif role.startswith("subagent:"):
            description = role.removeprefix("subagent:")
            self._agent = script.subagents.get(
                description, ScriptedAgent(final_text=f"No script for subagent '{description}'.")
            )
        else:
            raise ConfigError(f"unknown scripted role '{role}': use root, judge, summarizer or subagent:<description>")

    @classmethod
    def from_file(cls, path: Path, *, role: str = "root") -> ScriptedModelClient:
        return cls(load_script(path), role=role, source=str(path))

    def seek(self, calls_made: int) -> None:
        """Continue a resumed session where it was: `calls_made` replies already given."""
        self._cursor = calls_made

    async def create(self, request: ModelRequest) -> ModelResponse:
        stop: StopReason | None = None
        if self.role == "judge":
            blocks: list[ReplyBlock] = list(self._judge_reply())
        elif self.role == "summarizer":
            blocks = list(self._summary_reply())
        else:
            blocks, stop = await self._next_turn()
        if stop is None:
            stop = "tool_use" if any(isinstance(b, ToolUseBlock) for b in blocks) else "end_turn"
        usage = Usage(
            input_tokens=self._prefix_tokens(request) + self._estimate.total(request.messages),
            output_tokens=sum(self._counter.count_text(b.model_dump_json()) for b in blocks),
        )
        return ModelResponse(content=tuple(blocks), stop_reason=stop, usage=usage, model=self.name)

    def _prefix_tokens(self, request: ModelRequest) -> int:
        # Counted again only when the system text or the tools tuple changes. The tuple is
        # compared by identity and held here (so its id cannot be reused); a compiler hands
        # out the same tuple of frozen schemas until the registry changes.
        if self._prefix is None or self._prefix[0] != request.system or self._prefix[1] is not request.tools:
            tokens = estimate_prefix_tokens(self._counter, system=request.system, tools=request.tools)
            self._prefix = (request.system, request.tools, tokens)
        return self._prefix[2]

    def _judge_reply(self) -> list[TextBlock]:
        verdicts = self.script.judge
        if self._cursor < len(verdicts):
            verdict = verdicts[self._cursor]
        else:
            verdict = JudgeVerdict(verdict="met", reason="script has no further verdicts")
        self._cursor += 1
        return [TextBlock(text=verdict.model_dump_json())]

    def _summary_reply(self) -> list[TextBlock]:
        summaries = self.script.summaries
        text = summaries[self._cursor] if self._cursor < len(summaries) else "## Objective\n(scripted summary)"
        self._cursor += 1
        return [TextBlock(text=text)]

    async def _next_turn(self) -> tuple[list[ReplyBlock], StopReason | None]:
        turns = self._agent.turns
        if self._cursor >= len(turns):
            return [TextBlock(text=self._agent.final_text)], None
        turn = turns[self._cursor]
        self._cursor += 1
        if turn.sleep_ms:
            await asyncio.sleep(turn.sleep_ms / 1000)
        if turn.error == "prompt_too_long":
            raise PromptTooLong("scripted: prompt is too long")
        if turn.error == "overloaded":
            raise Overloaded("scripted: overloaded", status_code=529, attempts=1)
        blocks: list[ReplyBlock] = []
        if turn.thinking:
            blocks.append(ThinkingBlock(thinking=turn.thinking))
        if turn.text:
            blocks.append(TextBlock(text=turn.text))
        for n, call in enumerate(turn.tool_calls):
            tool_id = call.id or f"toolu_{self._id_prefix}_{self._cursor:04d}_{n}"
            if call.raw_input is not None:
                blocks.append(ToolUseBlock(id=tool_id, name=call.name, raw_input=call.raw_input))
            else:
                blocks.append(ToolUseBlock(id=tool_id, name=call.name, input=call.input))
        if not any(not isinstance(b, ThinkingBlock) for b in blocks) and turn.stop_reason is None:
            blocks.append(TextBlock(text=self._agent.final_text))
        return blocks, turn.stop_reason
