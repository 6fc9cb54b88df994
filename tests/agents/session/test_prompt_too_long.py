"""Prompt too long, exactly as designed: recompile once, re-check, retry once.

The recompiled request is sent only when the recompile succeeded, it is strictly
smaller than the refused request, it fits the refusal budget, and (where the provider
counts) the provider's own count is under its limit. Otherwise the error names the
cause, the provider is not called again, and the conversation is left as it was."""

from __future__ import annotations

import pytest

from agents.compaction import CompactionResult, refusal_budget
from agents.compaction.ledger import CompactionEvent
from agents.errors import ModelResponseError, PromptTooLong
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, protocol_problems
from agents.providers.anthropic import AnthropicModelClient
from agents.providers.openai import OpenAIModelClient
from agents.session._loop import Session
from agents.session._prompt_too_long import RetryCheck, retry_problem
from agents.settings._config import AgentSettings, CompactSettings, ProviderSettings, SessionSettings
from tests.support.fakes import RecordingModel, recall_session


def _session(tmp_path, model, *, compact=None, summarizer=None) -> tuple[Session, list]:
    settings = SessionSettings(agent=AgentSettings(max_turns=5), compact=compact or CompactSettings())
    return recall_session(tmp_path, model, settings=settings, summarizer=summarizer)


def _history(pairs: int = 20, body_chars: int = 2_000) -> list[Message]:
    messages = [Message.user("investigate")]
    for n in range(pairs):
        messages.append(
            Message.assistant(
                TextBlock(text=f"step {n}"), ToolUseBlock(id=f"h{n}", name="Read", input={"path": f"f{n}"})
            )
        )
        messages.append(
            Message.tool_results([ToolResultBlock(tool_use_id=f"h{n}", content=f"{n}:" + "x" * body_chars)])
        )
    return messages


def _estimate(session: Session, request) -> int:
    return session.compiler.compile(
        system=request.system,
        registry=session.kit.registry,
        messages=list(request.messages),
        max_tokens=request.max_tokens,
    ).estimated_tokens


class FailingSummarizer:
    async def summarize(self, messages, *, focus=None):
        raise RuntimeError("summarizer down")


class FixedStrategy:
    """A strategy whose prompt-too-long answer is given: a conversation (or a failure)."""

    name = "fixed"

    def __init__(self, make=None, failure=None):
        self.make = make
        self.failure = failure

    async def compact(self, request, env):
        if request.trigger != "prompt_too_long":
            return CompactionResult(list(request.messages))
        if self.failure:
            return CompactionResult(list(request.messages), failure=self.failure)
        messages = self.make(list(request.messages))
        event = CompactionEvent(
            kind="prompt_too_long", trigger="prompt_too_long", strategy=self.name, tokens_before=1, tokens_after=1
        )
        return CompactionResult(messages, [event])


class CountingModel(RecordingModel):
    """A model whose provider counts tokens exactly (like Anthropic's count_tokens)."""

    def __init__(self, replies, counts):
        super().__init__(replies)
        self.counts = list(counts)
        self.counted = 0

    async def count_tokens(self, request):
        self.counted += 1
        value = self.counts.pop(0)
        if isinstance(value, Exception):
            raise value
        return value


# --------------------------------------------------------------- the pure check


def test_a_failed_recompile_is_the_problem_named():
    assert (
        retry_problem(RetryCheck(refused_estimate=100, budget=50, failure="summarizer down"))
        == "the recompile failed: summarizer down"
    )


def test_no_recompiled_request_is_a_problem():
    assert "no request" in retry_problem(RetryCheck(refused_estimate=100, budget=50))


@pytest.mark.parametrize("retry", [100, 101, 5_000])
def test_a_retry_not_smaller_than_the_refused_request_is_a_problem(retry):
    assert "not smaller" in retry_problem(RetryCheck(refused_estimate=100, budget=500, retry_estimate=retry))


def test_a_smaller_retry_still_over_the_refusal_budget_is_a_problem():
    assert "over the refusal budget of 50" in retry_problem(
        RetryCheck(refused_estimate=100, budget=50, retry_estimate=60)
    )


def test_the_providers_count_at_or_over_its_limit_is_a_problem():
    check = RetryCheck(refused_estimate=100, budget=80, retry_estimate=70, retry_counted=200, limit=200)
    assert "not under its limit of 200" in retry_problem(check)


def test_the_providers_count_not_below_what_it_refused_is_a_problem():
    check = RetryCheck(refused_estimate=100, budget=80, retry_estimate=70, retry_counted=250, refused_actual=250)
    assert "not fewer than the 250" in retry_problem(check)


def test_a_smaller_retry_inside_the_budget_may_be_sent():
    assert retry_problem(RetryCheck(refused_estimate=100, budget=80, retry_estimate=80)) is None
    assert (
        retry_problem(
            RetryCheck(
                refused_estimate=100, budget=80, retry_estimate=70, retry_counted=150, refused_actual=250, limit=200
            )
        )
        is None
    )


def test_the_refusal_budget_aims_under_the_providers_counts_or_at_half():
    counted = PromptTooLong("too long", actual_tokens=250_000, limit_tokens=200_000)
    assert refusal_budget(100_000, counted, 150_000) == int(100_000 * 200_000 / 250_000 * 0.9)
    assert refusal_budget(100_000, PromptTooLong("too long"), 150_000) == 50_000
    assert refusal_budget(400_000, PromptTooLong("too long"), 150_000) == 150_000


# ------------------------------------------------------------------- the loop


async def test_a_failed_recompile_names_its_cause_and_calls_the_provider_no_more(tmp_path):
    model = RecordingModel([PromptTooLong("prompt is too long"), [TextBlock(text="never")]])
    summarizing = CompactSettings(strategy="clear-then-summarize")  # its recompile needs the summarizer
    session, events = _session(tmp_path, model, summarizer=FailingSummarizer(), compact=summarizing)
    session.conversation = _history()
    before = list(session.conversation)
    with pytest.raises(PromptTooLong, match="the recompile failed: .*summarizer down.*not sent again"):
        await session.run_turn("continue")
    assert len(model.requests) == 1
    assert session.conversation == [*before, Message.user("continue")]  # nothing lost, nothing rewritten
    failed = [e for e in events if isinstance(e, CompactionEvent)]
    assert failed and failed[-1].failed and not failed[-1].applied


async def test_a_strategy_that_never_compacts_is_not_retried(tmp_path):
    model = RecordingModel([PromptTooLong("prompt is too long"), [TextBlock(text="never")]])
    session, _ = _session(tmp_path, model, compact=CompactSettings(strategy="raw"))
    session.conversation = _history()
    with pytest.raises(PromptTooLong, match="never compacts"):
        await session.run_turn("continue")
    assert len(model.requests) == 1


async def test_a_recompile_that_reports_its_own_failure_is_not_retried(tmp_path):
    model = RecordingModel([PromptTooLong("prompt is too long")])
    session, _ = _session(tmp_path, model)
    session.strategy = FixedStrategy(failure="no boundary found")
    session.conversation = _history()
    with pytest.raises(PromptTooLong, match="no boundary found"):
        await session.run_turn("continue")
    assert len(model.requests) == 1


@pytest.mark.parametrize("grow", [0, 1, 30])
async def test_a_recompiled_request_not_smaller_than_the_refused_one_is_never_sent(tmp_path, grow):
    def same_or_larger(messages):
        return (
            [Message.user("x" * 4 * grow + "investigate"), *messages[1:]]
            if grow
            else [m.model_copy() for m in messages]
        )

    model = RecordingModel([PromptTooLong("prompt is too long"), [TextBlock(text="never")]])
    session, _ = _session(tmp_path, model)
    session.strategy = FixedStrategy(make=same_or_larger)
    session.conversation = _history()
    with pytest.raises(PromptTooLong, match="not smaller than the refused one"):
        await session.run_turn("continue")
    assert len(model.requests) == 1


async def test_a_smaller_request_still_over_the_refusal_budget_is_never_sent(tmp_path):
    model = RecordingModel([PromptTooLong("prompt is too long"), [TextBlock(text="never")]])
    session, _ = _session(tmp_path, model)
    session.strategy = FixedStrategy(make=lambda messages: messages[:1] + messages[3:])  # drops one pair only
    session.conversation = _history()
    with pytest.raises(PromptTooLong, match="still over the refusal budget"):
        await session.run_turn("continue")
    assert len(model.requests) == 1


async def test_a_successful_recompile_is_retried_once_smaller_and_inside_the_budget(tmp_path):
    refusal = PromptTooLong(
        "prompt is too long: 250000 tokens > 200000 maximum", actual_tokens=250_000, limit_tokens=200_000
    )
    model = RecordingModel([refusal, [TextBlock(text="fine")]])
    session, events = _session(tmp_path, model)
    session.conversation = _history()
    outcome = await session.run_turn("continue")
    assert (outcome.reason, outcome.model_calls, len(model.requests)) == ("end_turn", 1, 2)
    refused, retried = (_estimate(session, r) for r in model.requests)
    assert retried < refused
    assert retried <= refusal_budget(refused, refusal, session.budget_tokens)
    assert protocol_problems(model.requests[1].messages) == []
    assert [e.kind for e in events if isinstance(e, CompactionEvent)] == ["prompt_too_long"]


async def test_a_second_refusal_is_an_error_and_no_third_call_is_made(tmp_path):
    model = RecordingModel([PromptTooLong("too long"), PromptTooLong("too long"), [TextBlock(text="never")]])
    session, _ = _session(tmp_path, model)
    session.conversation = _history()
    with pytest.raises(PromptTooLong, match=r"refused the request twice .*estimate \d+ tokens, compact budget \d+"):
        await session.run_turn("continue")
    assert len(model.requests) == 2


async def test_the_providers_own_count_over_its_limit_stops_the_retry(tmp_path):
    refusal = PromptTooLong("too long", actual_tokens=250_000, limit_tokens=200_000)
    model = CountingModel([refusal, [TextBlock(text="never")]], counts=[200_000])
    session, _ = _session(tmp_path, model)
    session.conversation = _history()
    with pytest.raises(PromptTooLong, match="provider counts the recompiled request at 200000"):
        await session.run_turn("continue")
    assert len(model.requests) == 1 and model.counted == 1


async def test_a_failing_token_count_falls_back_to_the_estimate(tmp_path):
    model = CountingModel(
        [PromptTooLong("too long"), [TextBlock(text="fine")]], counts=[ModelResponseError("count failed")]
    )
    session, _ = _session(tmp_path, model)
    session.conversation = _history()
    assert (await session.run_turn("continue")).reason == "end_turn"
    assert len(model.requests) == 2


async def test_an_auth_error_never_recompiles(tmp_path):
    from agents.errors import AuthError

    model = RecordingModel([AuthError("bad key")])
    session, events = _session(tmp_path, model)
    session.conversation = _history(5, 100)
    with pytest.raises(AuthError):
        await session.run_turn("go")
    assert len(model.requests) == 1 and not [e for e in events if isinstance(e, CompactionEvent)]


# --------------------------------------------------- through the real SDKs


async def test_through_anthropic_the_retry_body_is_smaller_and_counted_first(tmp_path, messages_server):
    messages_server.push_prompt_too_long(250_000, 200_000)
    messages_server.push_text("fine")
    client = AnthropicModelClient(
        "claude-sonnet-4-5", api_key="k", base_url=messages_server.url, settings=ProviderSettings()
    )
    try:
        session, _ = _session(tmp_path, client)
        session.conversation = _history()
        assert (await session.run_turn("continue")).reason == "end_turn"
    finally:
        await client.aclose()
    paths = [r.path for r in messages_server.requests]
    assert paths == ["/v1/messages", "/v1/messages/count_tokens", "/v1/messages"]
    refused, retried = messages_server.bodies[0], messages_server.bodies[2]
    assert len(retried["messages"]) < len(refused["messages"]) and messages_server.problems == []


async def test_through_anthropic_a_retry_the_provider_counts_too_large_is_not_sent(tmp_path, messages_server):
    messages_server.push_prompt_too_long(250_000, 200_000)
    messages_server.token_counts.append(230_000)
    client = AnthropicModelClient(
        "claude-sonnet-4-5", api_key="k", base_url=messages_server.url, settings=ProviderSettings()
    )
    try:
        session, _ = _session(tmp_path, client)
        session.conversation = _history()
        with pytest.raises(PromptTooLong, match="230000 tokens, not under its limit of 200000"):
            await session.run_turn("continue")
    finally:
        await client.aclose()
    assert [r.path for r in messages_server.requests] == ["/v1/messages", "/v1/messages/count_tokens"]


async def test_through_openai_a_context_length_refusal_is_recompiled_and_retried(tmp_path, openai_server):
    openai_server.push_context_length(140_000, 128_000)
    openai_server.push_text("fine")
    client = OpenAIModelClient("gpt-4o", api_key="k", base_url=f"{openai_server.url}/v1", settings=ProviderSettings())
    try:
        session, _ = _session(tmp_path, client)
        session.conversation = _history()
        assert (await session.run_turn("continue")).reason == "end_turn"
    finally:
        await client.aclose()
    refused, retried = openai_server.bodies
    assert len(retried["messages"]) < len(refused["messages"]) and openai_server.problems == []


def test_a_refusal_without_counts_halves_the_conversation_not_the_fixed_part():
    # Half of the whole request would leave nothing of the conversation once the system
    # prompt and the tool schemas (which no compaction shrinks) are half of it.
    refusal = PromptTooLong("prompt is too long")
    assert refusal_budget(10_000, refusal, 50_000, fixed=6_000) == 8_000
    assert refusal_budget(10_000, refusal, 7_000, fixed=6_000) == 7_000  # never over the compact budget


async def test_clear_then_summarize_recovers_from_a_refusal_without_counts_of_a_short_conversation(tmp_path):
    # The live run of issue 28: a provider refused a request of a few thousand tokens with no
    # counts in its error; the retry budget is the fixed part and half of the conversation.
    model = RecordingModel([PromptTooLong("prompt is too long"), [TextBlock(text="recovered")]])
    session, _ = _session(tmp_path, model, compact=CompactSettings(strategy="clear-then-summarize"))
    session.conversation = _history(pairs=2)
    await session.run_turn("continue")
    assert len(model.requests) == 2 and _estimate(session, model.requests[1]) < _estimate(session, model.requests[0])
