"""Each benchmark metric on small hand-made cases, plus one real trajectory end to end."""

from __future__ import annotations

import pytest

from agents.compaction import ExtractiveSummarizer
from agents.compaction.clearing import cleared_note
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.ports import ModelRequest, ToolSchema
from agents.tokens import CharRatioEstimator
from benchmarks.compaction.cache_cost import (
    MeteredSummarizer,
    SummarizerCall,
    common_prefix_tokens,
    request_costs,
    summarizer_cost_usd,
)
from benchmarks.compaction.evidence import extract_items, find_item, trace_evidence
from benchmarks.compaction.metrics import measure_replay
from benchmarks.compaction.runner import BenchConfig, measure
from benchmarks.replay import ReplayResult, replay_trace
from benchmarks.traces import Trace, load_trace_file
from benchmarks.traces.corpus import corpus_dir

COUNTER = CharRatioEstimator()
PRICE = 3.0 / 1_000_000  # claude-sonnet-4-5, USD per input token
REAL = (
    corpus_dir()
    / "swe-agent"
    / "tests"
    / "test_data"
    / "trajectories"
    / "gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1"
    / "pydicom__pydicom-1458.traj"
)


# -- evidence ---------------------------------------------------------------------------------


def test_evidence_items_of_a_text():
    text = (
        "The failure in src/pkg/resolver.py at line 212: `Resolver.resolve_path` calls "
        "self.root.opts; see fields.py and getAttr. AttributeError: 'Tuple' object has no attribute 'opts'\n"
        'grep "missing value" 42 1234'
    )
    items = extract_items(text)
    assert {"src/pkg/resolver.py", "212", "Resolver.resolve_path", "self.root.opts", "fields.py"} <= items
    assert {"resolve_path", "getAttr", "AttributeError", "1234", "missing value"} <= items
    assert "'Tuple' object has no attribute 'opts'" in items  # the error message
    assert "42" not in items and "The" not in items and "at" not in items  # < 3 digits, plain words


def test_an_item_occurs_only_as_a_whole_token():
    assert find_item("see src/a/b.py:12", "a/b.py") == 8  # a path's tail: "/" is not a word character
    assert find_item("see data/b.py:12", "a/b.py") == -1
    assert find_item("value 12345", "1234") == -1
    assert find_item("call resolve_path_x()", "resolve_path") == -1
    assert find_item("call resolve_path()", "resolve_path") == 5


def _trace() -> Trace:
    """Task -> grep (its result names a path, a line, a function and its parameter) -> an
    action using the first three -> a read -> a final answer using the function and the
    parameter, which only the grep result showed."""
    grep = ToolUseBlock(id="toolu_1", name="bash", input={"command": "grep -rn 'def resolve' src/"})
    sed = ToolUseBlock(id="toolu_2", name="bash", input={"command": "sed -n 200,230p src/pkg/resolver.py"})
    return Trace(
        source="hand",
        task_id="t1",
        system="You fix bugs.",
        path="<hand>",
        messages=[
            Message.user("Fix the resolver bug."),
            Message.assistant(TextBlock(text="Search first."), grep),
            Message.tool_results(
                [
                    ToolResultBlock(
                        tool_use_id="toolu_1",
                        content="src/pkg/resolver.py:212:    def resolve_path(self, strict_mode):",
                    )
                ]
            ),
            Message.assistant(TextBlock(text="resolve_path is at line 212."), sed),
            Message.tool_results([ToolResultBlock(tool_use_id="toolu_2", content="x = 1\n" * 200)]),
            Message.assistant(TextBlock(text="The bug: resolve_path ignores strict_mode.")),
        ],
    )


def test_needed_evidence_is_what_the_action_uses_that_came_first_from_a_tool_result():
    evidence = trace_evidence(_trace(), COUNTER)
    assert evidence.calls[1].items == ()  # the first action only has the task
    # 200 and 230 first appear in the action itself; "resolver" nowhere as a whole token in the grep.
    assert evidence.calls[3].items == ("212", "resolve_path", "resolver.py", "src/pkg/resolver.py")
    assert all(p == ("toolu_1",) for p in evidence.calls[3].producers)
    assert evidence.calls[5].items == ("resolve_path", "strict_mode")


def test_oracle_tokens_are_task_plus_the_producing_use_and_result():
    trace = _trace()
    evidence = trace_evidence(trace, COUNTER)
    task = COUNTER.count_message(trace.messages[0])
    uses = COUNTER.count_message(Message.assistant(trace.messages[1].tool_uses[0]))
    results = COUNTER.count_message(trace.messages[2])
    assert evidence.calls[1].oracle_tokens == task
    assert evidence.calls[3].oracle_tokens == task + uses + results


# -- legacy grounding and recoverable recall ---------------------------------------------------------


def _replay(trace: Trace, histories: list[list[Message]]) -> ReplayResult:
    """A replay whose k-th request holds histories[k] (k-th recorded action)."""
    requests = [ModelRequest(system=trace.system, messages=tuple(h)) for h in histories]
    answered = [i for i, m in enumerate(trace.messages) if m.role == "assistant"]
    tokens = [COUNTER.count_text(trace.system) + sum(COUNTER.count_message(m) for m in h) for h in histories]
    return ReplayResult(trace=trace, strategy="hand", requests=requests, estimated_tokens=tokens, answered=answered)


def _measure(trace: Trace, histories: list[list[Message]]):
    return measure_replay(
        _replay(trace, histories),
        trace_evidence(trace, COUNTER),
        trace_label="t",
        pricing_model="claude-sonnet-4-5",
        counter=COUNTER,
    )


def test_recall_is_one_when_nothing_is_compacted():
    trace = _trace()
    m = _measure(trace, [trace.messages[:1], trace.messages[:3], trace.messages[:5]])
    assert (m.needed_items, m.visible_items, m.recoverable_items) == (6, 6, 6)
    assert m.grounding_recall == 1.0 and m.recoverable_recall == 1.0


def test_clearing_the_evidence_result_lowers_grounding_but_recall_keeps_it_recoverable():
    trace = _trace()
    first = trace.messages[2].tool_results_in[0]
    cleared = Message.tool_results(
        [ToolResultBlock(tool_use_id="toolu_1", content=cleared_note("toolu_1", len(first.content)))]
    )
    m = _measure(trace, [trace.messages[:1], trace.messages[:3], [*trace.messages[:2], cleared, *trace.messages[3:5]]])
    # Call 3 sees everything; call 5 lost the grep output: resolve_path is still in the
    # text of action 3, strict_mode was only in the cleared result.
    assert (m.needed_items, m.visible_items) == (6, 5)
    assert m.grounding_recall == pytest.approx(5 / 6)
    assert m.recoverable_recall == 1.0  # the ToolUse is kept and the note names its Recall id


def test_a_dropped_result_is_recoverable_only_when_its_recall_id_is_shown():
    trace = _trace()
    summary = Message.user("[Conversation compacted] earlier: [bash toolu_1, ok] $ grep -rn ... → 1 hit")
    dropped = [trace.messages[0], Message.assistant(TextBlock(text="ok")), *trace.messages[3:5]]
    named = [summary, Message.assistant(TextBlock(text="ok")), *trace.messages[3:5]]
    gone = _measure(trace, [trace.messages[:1], trace.messages[:3], dropped])
    shown = _measure(trace, [trace.messages[:1], trace.messages[:3], named])
    assert gone.grounding_recall == shown.grounding_recall == pytest.approx(5 / 6)
    assert gone.recoverable_recall == pytest.approx(5 / 6)
    assert shown.recoverable_recall == 1.0


# -- cache-aware cost -------------------------------------------------------------------------


def _request(system: str, *texts: str, tools: tuple[ToolSchema, ...] = ()) -> ModelRequest:
    roles = ["user", "assistant"]
    messages = tuple(Message(role=roles[i % 2], content=(TextBlock(text=t),)) for i, t in enumerate(texts))
    return ModelRequest(system=system, tools=tools, messages=messages)


def test_cache_cost_reads_the_longest_common_prefix_and_writes_the_rest():
    # 400 chars = 100 tokens; a one-block message adds 4 + 3 framing tokens -> 107.
    s, a, b, c, d = ("S" * 400, "a" * 400, "b" * 400, "c" * 400, "d" * 400)
    first = _request(s, a)
    grown = _request(s, a, b, c)
    rewritten = _request(s, d, b, c)
    costs = request_costs([first, grown, rewritten], COUNTER, "claude-sonnet-4-5")
    assert [(x.tokens, x.cached_tokens) for x in costs] == [(207, 0), (421, 207), (421, 100)]
    assert costs[0].cost_usd == pytest.approx(1.25 * 207 * PRICE)
    assert costs[1].cost_usd == pytest.approx((0.1 * 207 + 1.25 * 214) * PRICE)
    assert costs[2].cost_usd == pytest.approx((0.1 * 100 + 1.25 * 321) * PRICE)


def test_a_changed_system_prompt_or_tool_list_caches_nothing():
    tool = ToolSchema(name="bash", description="run", input_schema={"type": "object"})
    base = _request("S" * 400, "a" * 400, tools=(tool,))
    assert common_prefix_tokens(base, _request("T" * 400, "a" * 400, tools=(tool,)), COUNTER) == 0
    assert common_prefix_tokens(base, _request("S" * 400, "a" * 400), COUNTER) == 0
    assert (
        common_prefix_tokens(base, base, COUNTER)
        == COUNTER.count_text("S" * 400) + 8 + COUNTER.count_json(tool.model_dump()) + 107
    )


def test_summarizer_cost_is_input_at_one_and_output_at_five_times_the_input_price():
    assert summarizer_cost_usd(SummarizerCall(1_000, 200), "claude-sonnet-4-5") == pytest.approx(2_000 * PRICE)
    assert summarizer_cost_usd(SummarizerCall(1_000, 200), "claude-opus-4-5") == pytest.approx(2_000 * 5 / 1e6)


async def test_metered_summarizer_counts_what_a_model_would_read_and_write():
    meter = MeteredSummarizer(ExtractiveSummarizer(), COUNTER)
    trace = _trace()
    text = await meter.summarize(trace.messages[:3])
    [call] = meter.calls
    assert call.output_tokens == COUNTER.count_text(text)
    assert call.input_tokens > sum(COUNTER.count_message(m) for m in trace.messages[:3])  # + handoff + system


def test_legacy_lcp_cost_of_a_measured_run_leaves_output_out():
    trace = _trace()
    replay = _replay(trace, [trace.messages[:1], trace.messages[:3], trace.messages[:5]])
    m = measure_replay(
        replay,
        trace_evidence(trace, COUNTER),
        trace_label="t",
        pricing_model="claude-sonnet-4-5",
        summarizer_calls=[SummarizerCall(1_000, 200)],
        counter=COUNTER,
    )
    main = sum(c.cost_usd for c in request_costs(replay.requests, COUNTER, "claude-sonnet-4-5"))
    assert m.cost_lcp_usd == pytest.approx(main + 2_000 * PRICE)
    assert m.cumulative_tokens == sum(replay.estimated_tokens) and m.peak_tokens == max(replay.estimated_tokens)


def test_api_cost_of_a_measured_run_prices_output_and_the_summarizer_as_its_own_request():
    trace = _trace()
    replay = _replay(trace, [trace.messages[:1], trace.messages[:3], trace.messages[:5]])
    m = measure_replay(
        replay,
        trace_evidence(trace, COUNTER),
        trace_label="t",
        pricing_model="claude-sonnet-4-5",
        summarizer_calls=[SummarizerCall(1_000, 200)],
        counter=COUNTER,
    )
    # Every request here is under the 1,024-token minimum: nothing is cached, all input at 1x.
    assert (m.cache_read_tokens, m.cache_write_tokens) == (0, 0)
    assert m.plain_input_tokens == m.cumulative_tokens
    replies = sum(COUNTER.count_message(trace.messages[i]) for i in (1, 3, 5))  # no usage recorded: estimated
    assert m.output_tokens == replies
    assert m.main_cost_usd == pytest.approx((m.cumulative_tokens + 5 * replies) * PRICE)
    assert m.summarizer_cost_usd == pytest.approx((1_000 + 5 * 200) * PRICE)  # under the minimum: not written
    assert m.cost_usd == pytest.approx(m.main_cost_usd + m.summarizer_cost_usd)
    assert m.summarizer_share == pytest.approx(m.summarizer_cost_usd / m.cost_usd)


# -- a real trajectory, replayed --------------------------------------------------------------


@pytest.fixture(scope="module")
def real() -> Trace:
    if not REAL.is_file():
        pytest.fail(f"trace corpus not found: {REAL} (these tests need ../shared/traces)", pytrace=False)
    return load_trace_file(REAL)[0]


async def test_raw_replay_of_a_real_trace_sees_all_evidence(real):
    config = BenchConfig(strategies=["raw"], context_window=32_000, tokenizer="estimate")
    m = await measure("real", real, trace_evidence(real), "raw", config)
    assert m.error is None and m.calls == 12 and m.needed_items > 0
    assert m.grounding_recall == 1.0 and m.compactions == {}
    replay = await replay_trace(real, strategy="raw")
    assert m.tokens_per_call == replay.estimated_tokens[:12]


async def test_compaction_of_a_real_trace_saves_tokens_and_loses_some_evidence(real):
    # 14K: at 8K clear-then-summarize cannot bring this trace under the window, and the
    # harness now refuses to send a request over it (the run ends there).
    config = BenchConfig(strategies=["raw"], context_window=14_000)
    evidence = trace_evidence(real)
    raw = await measure("real", real, evidence, "raw", config)
    default = await measure("real", real, evidence, "clear-then-summarize", config)
    assert default.error is None and default.refused is None and default.compactions == {"summary": 2}
    # Attempts that left it over budget (then keeping fewer messages) are summarizer calls too.
    assert default.summarizer_calls > 2
    assert default.cumulative_tokens < raw.cumulative_tokens and default.peak_tokens < raw.peak_tokens
    assert 0 < default.summarizer_share < 1
    masked = await measure("real", real, evidence, "mask:keep=1", config)
    assert masked.grounding_recall < 1.0 and masked.recoverable_recall == 1.0  # elided, with Recall ids
    window = await measure("real", real, evidence, "window:first=1,last=2", config)
    assert window.recoverable_recall == window.grounding_recall < 1.0  # dropped: nothing names the ids


async def test_mask_keep_0_scores_near_zero_tool_evidence_on_a_real_trace(real):
    config = BenchConfig(strategies=["raw"], context_window=32_000)
    evidence = trace_evidence(real)
    raw = await measure("real", real, evidence, "raw", config)
    masked = await measure("real", real, evidence, "mask:keep=0", config)
    assert raw.tool_evidence_recall == 1.0 and raw.tool_evidence_items > 10
    assert masked.tool_evidence_recall is not None and masked.tool_evidence_recall <= 0.05
    assert masked.tool_evidence_recoverable_recall == 1.0  # every body is one Recall away
    assert masked.grounding_recall > 0.3  # what the legacy measure said
