"""Summaries of older history: the next conversation, failures, chunking, the model summarizer."""

import asyncio

import pytest

from agents.compaction.model_summarizer import ModelSummarizer
from agents.compaction.notes import BOUNDARY_MARKER
from agents.compaction.summary import (
    HANDOFF_SECTIONS,
    SummaryFailed,
    handoff_instructions,
    is_summary_boundary,
    summarize_older,
    summarized_conversation,
)
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, is_protocol_complete
from agents.ports import ModelRequest, ModelResponse
from agents.providers.scripted import Script, ScriptedModelClient
from agents.tokens import CharRatioEstimator, estimate_messages_tokens

COUNTER = CharRatioEstimator()


class FakeSummarizer:
    """Records what it was given; answers `text`, or raises `error`."""

    def __init__(self, text: str = "## Objective\nfix the bug", error: Exception | None = None):
        self.text = text
        self.error = error
        self.calls: list[list[Message]] = []
        self.focuses: list[str | None] = []

    async def summarize(self, messages: list[Message], *, focus: str | None = None) -> str:
        self.calls.append(list(messages))
        self.focuses.append(focus)
        if self.error is not None:
            raise self.error
        return self.text


class RecordingModel:
    """Wraps a ModelClient and keeps every request."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.requests: list[ModelRequest] = []

    async def create(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return await self.inner.create(request)


class SlowModel:
    name = "fake:slow"

    async def create(self, request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(10)
        raise AssertionError("should have timed out")


def _history(pairs: int, body_chars: int = 400) -> list[Message]:
    messages = [Message.user("please make the tests pass")]
    for k in range(pairs):
        messages.append(
            Message.assistant(
                TextBlock(text=f"step {k}"),
                ToolUseBlock(id=f"t{k}", name="Bash", input={"command": f"cmd {k}"}),
            )
        )
        messages.append(Message.tool_results([ToolResultBlock(tool_use_id=f"t{k}", content="y" * body_chars)]))
    return messages


# -- summarized_conversation -------------------------------------------------------------


def test_next_conversation_is_boundary_then_original_recent_messages():
    history = _history(4)
    recent = history[5:]  # starts with an assistant message
    out = summarized_conversation("THE SUMMARY", recent, summarized_count=5)
    assert len(out) == 1 + len(recent)
    boundary = out[0]
    assert boundary.role == "user"
    assert is_summary_boundary(boundary)
    assert boundary.text.startswith(BOUNDARY_MARKER)
    assert "THE SUMMARY" in boundary.text
    assert "5 earlier messages" in boundary.text
    assert all(a is b for a, b in zip(out[1:], recent, strict=True))


def test_acknowledgement_is_added_only_when_recent_starts_with_a_user_message():
    history = _history(4)
    user_first = history[4:]
    assert user_first[0].role == "user"
    out = summarized_conversation("S", user_first, summarized_count=4)
    assert [m.role for m in out[:2]] == ["user", "assistant"]
    assert out[1].tool_uses == []
    assert all(a is b for a, b in zip(out[2:], user_first, strict=True))
    assistant_first = history[5:]
    out = summarized_conversation("S", assistant_first, summarized_count=5)
    assert len(out) == 1 + len(assistant_first)


def test_next_conversation_is_protocol_complete_and_alternates_roles():
    history = _history(5)
    for split in (1, 3, 5, 7):
        out = summarized_conversation("S", history[split:], summarized_count=split)
        assert is_protocol_complete(out)
        assert all(a.role != b.role for a, b in zip(out, out[1:], strict=False))


# -- summarize_older -------------------------------------------------------------------------


async def test_only_older_messages_go_to_the_summarizer():
    history = _history(6)
    older = history[:7]
    summarizer = FakeSummarizer()
    outcome = await summarize_older(summarizer, older, window_tokens=100_000, counter=COUNTER, focus="tests")
    assert outcome.calls == 1
    assert outcome.text == "## Objective\nfix the bug"
    assert len(summarizer.calls) == 1
    assert all(a is b for a, b in zip(summarizer.calls[0], older, strict=True))
    assert len(summarizer.calls[0]) == len(older)
    assert summarizer.focuses == ["tests"]


@pytest.mark.parametrize("text", ["", "   \n\t "])
async def test_empty_summary_raises_summary_failed(text):
    with pytest.raises(SummaryFailed, match="empty"):
        await summarize_older(FakeSummarizer(text=text), _history(2), window_tokens=100_000, counter=COUNTER)


async def test_summarizer_exception_becomes_summary_failed():
    summarizer = FakeSummarizer(error=RuntimeError("connection reset"))
    with pytest.raises(SummaryFailed, match="connection reset") as info:
        await summarize_older(summarizer, _history(2), window_tokens=100_000, counter=COUNTER)
    assert isinstance(info.value.__cause__, RuntimeError)


async def test_older_history_over_the_window_is_summarized_in_chunks_then_merged():
    history = _history(10, body_chars=800)
    window = 500
    assert estimate_messages_tokens(COUNTER, history) > 3 * window
    summarizer = FakeSummarizer(text="part summary")
    outcome = await summarize_older(summarizer, history, window_tokens=window, counter=COUNTER)
    chunk_calls, final_call = summarizer.calls[:-1], summarizer.calls[-1]
    assert len(chunk_calls) >= 2
    assert outcome.calls == len(summarizer.calls) == len(chunk_calls) + 1
    assert [m for chunk in chunk_calls for m in chunk] == history  # every message, in order, once
    for chunk in chunk_calls:
        assert is_protocol_complete(chunk)
    assert len(final_call) == 1
    assert f"Part {len(chunk_calls)} of {len(chunk_calls)}" in final_call[0].text
    assert outcome.text == "part summary"


async def test_chunks_respect_the_window_where_a_clean_cut_exists():
    history = _history(10, body_chars=800)
    window = 1_000
    summarizer = FakeSummarizer()
    await summarize_older(summarizer, history, window_tokens=window, counter=COUNTER)
    for chunk in summarizer.calls[:-1]:
        assert estimate_messages_tokens(COUNTER, chunk) <= window


async def test_a_failing_chunk_fails_the_whole_summary():
    summarizer = FakeSummarizer(text="")
    with pytest.raises(SummaryFailed):
        await summarize_older(summarizer, _history(10, body_chars=800), window_tokens=500, counter=COUNTER)
    assert len(summarizer.calls) == 1


# -- ModelSummarizer ------------------------------------------------------------------------


def _scripted_summarizer(*summaries: str) -> RecordingModel:
    return RecordingModel(ScriptedModelClient(Script(summaries=list(summaries)), role="summarizer"))


async def test_model_summarizer_sends_no_tools_and_ends_with_the_handoff_request():
    model = _scripted_summarizer("## Objective\nship it")
    history = _history(3)
    text = await ModelSummarizer(model, max_tokens=1_234).summarize(history)
    assert text == "## Objective\nship it"
    [request] = model.requests
    assert request.tools == ()
    assert request.max_tokens == 1_234
    last = request.messages[-1]
    assert last.role == "user"
    assert last.content[-1] == TextBlock(text=handoff_instructions(None))
    for name in HANDOFF_SECTIONS:
        assert f"## {name}" in last.text
    assert len(HANDOFF_SECTIONS) == 6


async def test_model_summarizer_keeps_the_history_and_adds_the_focus():
    model = _scripted_summarizer("s")
    history = _history(2) + [Message.assistant(TextBlock(text="done"))]
    await ModelSummarizer(model).summarize(history, focus="the flaky test")
    [request] = model.requests
    assert request.messages[: len(history)] == tuple(history)
    assert "Give particular attention to: the flaky test" in request.messages[-1].text


async def test_model_summarizer_history_starting_with_assistant_gets_a_leading_user_turn():
    model = _scripted_summarizer("s")
    history = _history(3)[1:]  # starts with the assistant's tool call
    await ModelSummarizer(model).summarize(history)
    [request] = model.requests
    assert request.messages[0].role == "user"
    assert all(a.role != b.role for a, b in zip(request.messages, request.messages[1:], strict=False))
    assert is_protocol_complete(request.messages)


async def test_model_summarizer_replies_in_script_order():
    model = _scripted_summarizer("first", "second")
    summarizer = ModelSummarizer(model)
    assert await summarizer.summarize(_history(1)) == "first"
    assert await summarizer.summarize(_history(1)) == "second"


async def test_model_summarizer_timeout_is_summary_failed():
    summarizer = ModelSummarizer(SlowModel(), timeout_s=0.01)
    with pytest.raises(SummaryFailed, match="timed out"):
        await summarizer.summarize(_history(1))


async def test_model_summarizer_timeout_fails_summarize_older():
    with pytest.raises(SummaryFailed, match="timed out"):
        await summarize_older(
            ModelSummarizer(SlowModel(), timeout_s=0.01),
            _history(1),
            window_tokens=100_000,
            counter=COUNTER,
        )
