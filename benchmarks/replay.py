"""Replay a recorded trajectory through the real agent loop under a compaction strategy.

The recorded model becomes a ModelClient that answers with the recorded assistant
messages in order, and each recorded tool becomes a tool that answers with the
recorded result. Everything between — per-result budget, compaction, summaries,
token estimates — is Workingset's own code path, unchanged.

Usage: given a `usage_counter`, the recorded model reports each request's input tokens
as that counter counts them, as a provider reports its own count, so the harness's
`CalibratedCounter` calibrates as it would live (the benchmark passes its measuring
counter: recorded usage or a real tokenizer). Without one it reports none and the harness
compacts by its estimator alone. A request the harness refuses to send (over the window
by its count, and not compacted to fit) ends the replay there: `refused` says why.
`raw` replays with no window at all, so it is the conversation exactly as recorded.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agents.compaction import CompactionEvent, ExtractiveSummarizer
from agents.errors import PromptTooLong
from agents.events import ModelCall
from agents.messages import RedactedThinkingBlock, TextBlock, ThinkingBlock, ToolUseBlock
from agents.ports import ModelRequest, ModelResponse, StopReason, Summarizer, Usage
from agents.session import Session, SessionKit, SessionPorts
from agents.settings import AgentSettings, CompactSettings, SessionSettings, ToolSettings
from agents.tokens import CalibratedCounter, TokenCounter, estimate_request_tokens
from benchmarks.traces import Trace
from tools import LocalToolExecutor, ToolContext, ToolRegistry
from tools.artifacts import ArtifactStore
from tools.base import ExecutionDomain, ToolOutput

__all__ = [
    "DEFAULT_RESULT_MAX_TOKENS",
    "MAX_OUTPUT_TOKENS",
    "NO_BUDGET",
    "ReplayResult",
    "replay_trace",
    "result_budget_for",
    "strategy_base_name",
]

END_OF_RECORDING = "(end of the recorded trajectory)"

# The output reserve of every replayed call (`agent.max_output_tokens`): the compact budget
# is (window - reserve) x ratio, and a request over window - reserve cannot be answered.
MAX_OUTPUT_TOKENS = 4_096

# `raw` measures the conversation as recorded: no compaction and no per-result clipping.
NO_BUDGET = 10_000_000
DEFAULT_RESULT_MAX_TOKENS = ToolSettings().result_max_tokens


def strategy_base_name(spec: str) -> str:
    """`window:keep=10` -> `window`: the registered name in a strategy spec."""
    return spec.split(":", 1)[0].strip()


def result_budget_for(spec: str) -> int:
    """The per-result budget a strategy is replayed with: `raw` disables clipping, every
    other strategy gets Workingset's default (`tools.result_max_tokens`)."""
    return NO_BUDGET if strategy_base_name(spec) == "raw" else DEFAULT_RESULT_MAX_TOKENS


class _AnyInput(BaseModel):
    model_config = ConfigDict(extra="allow")


def _key(name: str, args: dict) -> str:
    return name + json.dumps(args, sort_keys=True, default=str)


class RecordedTool:
    """A tool that answers with what the recording says it answered, in order."""

    input_model = _AnyInput
    is_read_only = True
    execution_domain = ExecutionDomain.LOCAL
    root_only = False

    def __init__(self, name: str, results: dict[str, deque[tuple[str, bool]]]):
        self.name = name
        self.description = f"Recorded tool {name}."
        self._results = results

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        queue = self._results[_key(self.name, args.model_dump())]
        content, is_error = queue.popleft() if queue else ("(no recorded result)", True)
        return ToolOutput(content=content, is_error=is_error)


class RecordedModel:
    """Answers each call with the next recorded assistant message; keeps every request."""

    def __init__(self, trace: Trace, usage_counter: TokenCounter | None = None):
        self.name = f"replay:{trace.model or 'unknown'}"
        self.usage_counter = usage_counter
        self._replies = deque((i, m) for i, m in enumerate(trace.messages) if m.role == "assistant")
        self.requests: list[ModelRequest] = []
        # For each request: the index in trace.messages of the recorded reply it got
        # (None once the recording is used up).
        self.answered: list[int | None] = []

    @property
    def remaining(self) -> int:
        return len(self._replies)

    async def create(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        index, message = self._replies.popleft() if self._replies else (None, None)
        self.answered.append(index)
        recorded = message.content if message else (TextBlock(text=END_OF_RECORDING),)
        # An assistant turn holds only reply blocks (text, tool uses, reasoning).
        content = tuple(
            b for b in recorded if isinstance(b, TextBlock | ToolUseBlock | ThinkingBlock | RedactedThinkingBlock)
        )
        stop: StopReason = "tool_use" if any(isinstance(b, ToolUseBlock) for b in content) else "end_turn"
        return ModelResponse(content=content, stop_reason=stop, usage=self._usage(request))

    def _usage(self, request: ModelRequest) -> Usage:
        if self.usage_counter is None:
            return Usage()  # nothing reported: the harness's calibration learns nothing
        tokens = estimate_request_tokens(
            self.usage_counter, system=request.system, tools=request.tools, messages=request.messages
        )
        return Usage(input_tokens=tokens)


def _recorded_results(trace: Trace) -> dict[str, deque[tuple[str, bool]]]:
    uses = {u.id: u for u in trace.tool_uses}
    results: dict[str, deque[tuple[str, bool]]] = defaultdict(deque)
    for message in trace.messages:
        for r in message.tool_results_in:
            use = uses.get(r.tool_use_id)
            if use is not None:
                results[_key(use.name, use.input)].append((r.content, r.is_error))
    return results


@dataclass
class ReplayResult:
    """`requests[k]` is the k-th compiled working set; `answered[k]` the index in
    `trace.messages` of the recorded reply it got (None for the extra call a replay makes
    after the recording ends, which the recorded agent never made)."""

    trace: Trace
    strategy: str
    requests: list[ModelRequest]
    estimated_tokens: list[int] = field(default_factory=list)
    compactions: list[CompactionEvent] = field(default_factory=list)
    answered: list[int | None] = field(default_factory=list)
    refused: str | None = None  # the harness would not send a request: why (the replay ended there)

    @property
    def total_tokens(self) -> int:
        return sum(self.estimated_tokens)

    @property
    def peak_tokens(self) -> int:
        return max(self.estimated_tokens, default=0)


def _next_user_text(trace: Trace, answered: list[int | None]) -> str | None:
    """After a turn ended on a reply without tool uses: the user text the recording
    continues with (a later outer turn), if any."""
    last = next((i for i in reversed(answered) if i is not None), None)
    if last is None or last + 1 >= len(trace.messages):
        return None
    following = trace.messages[last + 1]
    if following.role != "user" or following.tool_results_in or not following.text.strip():
        return None
    return following.text


async def replay_trace(
    trace: Trace,
    *,
    strategy: str = "clear-then-summarize",
    context_window: int | None = None,
    result_max_tokens: int | None = None,
    summarizer: Summarizer | None = None,
    compact: CompactSettings | None = None,
    usage_counter: TokenCounter | None = None,
) -> ReplayResult:
    """Replay `trace` under `strategy` (a spec as `make_strategy` takes it). The agent's
    steps are walked in order: the task opens the first outer turn, and a recorded user
    message after a reply without tool uses opens the next one. `result_max_tokens`
    defaults to `result_budget_for(strategy)`; `usage_counter`: the module docstring."""
    if result_max_tokens is None:
        result_max_tokens = result_budget_for(strategy)
    if strategy_base_name(strategy) == "raw":
        context_window = NO_BUDGET  # nothing is removed, and nothing is refused as over the window
    results = _recorded_results(trace)
    names = sorted({u.name for u in trace.tool_uses})
    model = RecordedModel(trace, usage_counter)
    refused: str | None = None
    events: list = []
    compact = compact or CompactSettings(strategy=strategy, context_window=context_window)
    steps = sum(1 for m in trace.messages if m.role == "assistant")
    settings = SessionSettings(
        agent=AgentSettings(max_turns=steps + 1, max_output_tokens=MAX_OUTPUT_TOKENS),
        compact=compact,
        result_max_tokens=result_max_tokens,
    )
    with tempfile.TemporaryDirectory(prefix="workingset-replay-") as tmp:
        ports = SessionPorts(
            model=model,
            executor=LocalToolExecutor(),
            summarizer=summarizer or ExtractiveSummarizer(),
        )
        artifacts = ArtifactStore(Path(tmp) / "artifacts")
        kit = SessionKit(
            registry=ToolRegistry(RecordedTool(n, results) for n in names),
            tool_context=ToolContext(workspace=Path(tmp)),
            artifacts=artifacts,
            emit=events.append,
            counter=CalibratedCounter(),  # as `workingset run` wires it (agents.opening._assembly)
        )
        session = Session(ports, kit, system_prompt=trace.system or "(no system prompt recorded)", settings=settings)
        text: str | None = trace.task
        try:
            while text is not None:
                await session.run_turn(text)
                text = _next_user_text(trace, model.answered) if model.remaining else None
        except PromptTooLong as exc:  # a live run would end here too
            refused = str(exc)
        artifacts.close()
    return ReplayResult(
        trace=trace,
        strategy=compact.strategy,
        requests=model.requests,
        estimated_tokens=[e.estimated_input_tokens for e in events if isinstance(e, ModelCall)],
        compactions=[e for e in events if isinstance(e, CompactionEvent)],
        answered=model.answered,
        refused=refused,
    )
