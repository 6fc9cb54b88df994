"""Fakes shipped with the tests: a recording model, a sleeping tool, random conversations."""

from __future__ import annotations

import asyncio
import random
from typing import ClassVar

from pydantic import BaseModel, Field

from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, protocol_problems
from agents.models import ModelInfo
from agents.ports import ModelRequest, ModelResponse, Usage
from tools.base import ExecutionDomain, ToolContext, ToolOutput


class RecordingModel:
    """Answers from a list of replies and records every request it saw.
    A reply that is an exception instance is raised instead; a ModelResponse is
    returned as it is (to end a reply with any stop reason)."""

    name = "fake:recording"
    model_info = ModelInfo(context_window=200_000, prices=None, pricing="scripted")  # a fake has no price

    def __init__(self, replies: list[list[TextBlock | ToolUseBlock] | ModelResponse | Exception]):
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    async def create(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        blocks = self.replies.pop(0) if self.replies else [TextBlock(text="done")]
        if isinstance(blocks, Exception):
            raise blocks
        if isinstance(blocks, ModelResponse):
            return blocks
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


def random_conversation(rng: random.Random, *, max_turns: int = 22) -> list[Message]:
    """A protocol-complete conversation with text, parallel tool batches (results in
    shuffled order) and plain user turns, for invariant tests over many seeds."""
    messages = [Message.user("task " * rng.randint(1, 50))]
    for t in range(rng.randint(2, max_turns)):
        n_uses = rng.choice([0, 1, 1, 2, 3])
        text = (TextBlock(text="thinking " * rng.randint(1, 40)),) if n_uses == 0 or rng.random() < 0.5 else ()
        uses = tuple(
            ToolUseBlock(id=f"toolu_{t}_{k}", name=rng.choice(["Bash", "Read", "Agent"]), input={"k": k})
            for k in range(n_uses)
        )
        messages.append(Message(role="assistant", content=(*text, *uses)))
        if uses:
            results = [ToolResultBlock(tool_use_id=u.id, content="out " * rng.randint(1, 800)) for u in uses]
            rng.shuffle(results)
            messages.append(Message.tool_results(results))
        else:
            messages.append(Message.user("go on " * rng.randint(1, 30)))
    assert protocol_problems(messages, allow_trailing_uses=False) == []
    return messages
