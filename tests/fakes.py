"""Fakes shipped with the tests: a recording model and a sleeping tool."""

from __future__ import annotations

import asyncio
from typing import ClassVar

from pydantic import BaseModel, Field

from agents.messages import TextBlock, ToolUseBlock
from agents.ports import ModelRequest, ModelResponse, Usage
from tools.base import ExecutionDomain, ToolContext, ToolOutput


class RecordingModel:
    """Answers from a list of replies and records every request it saw.
    A reply that is an exception instance is raised instead."""

    name = "fake:recording"

    def __init__(self, replies: list[list[TextBlock | ToolUseBlock] | Exception]):
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    async def create(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        blocks = self.replies.pop(0) if self.replies else [TextBlock(text="done")]
        if isinstance(blocks, Exception):
            raise blocks
        stop = "tool_use" if any(isinstance(b, ToolUseBlock) for b in blocks) else "end_turn"
        return ModelResponse(content=tuple(blocks), stop_reason=stop, usage=Usage(input_tokens=10, output_tokens=2))


class SleepInput(BaseModel):
    seconds: float = Field(description="How long to sleep.")
    label: str = Field(description="Echoed back.")


class SleepTool:
    """Sleeps, then echoes its label: shows concurrency and result order."""

    name: ClassVar[str] = "Sleep"
    description: ClassVar[str] = "Sleep for a while and echo a label."
    input_model: ClassVar[type[BaseModel]] = SleepInput
    is_read_only: ClassVar[bool] = True
    execution_domain: ClassVar[ExecutionDomain] = ExecutionDomain.LOCAL
    root_only: ClassVar[bool] = False

    async def run(self, args: SleepInput, ctx: ToolContext) -> ToolOutput:
        await asyncio.sleep(args.seconds)
        return ToolOutput(content=args.label)
