"""`current`, the default strategy: nothing under its trigger, one large step over it
(superseded results first, then old turns folded into append-only digests), and a hard
fit that never leaves a request over the budget. The steps are exercised with the trigger
at the budget (`start=1.0`), so a request just over the budget starts them; the default's
own trigger, the window less its headroom, is tested in tests/agents/compaction/test_current_start.py."""

import random

import pytest

from agents.compaction import CompactionEnv, CompactionRequest, make_strategy
from agents.compaction.cache_points import compacted_breakpoint
from agents.compaction.notes import is_digest
from agents.compaction.strategies import CurrentWorkingSet
from agents.messages import (
    ClearedBody,
    ClippedBody,
    FoldedTurns,
    Message,
    SupersededBody,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    protocol_problems,
)
from agents.settings._config import CompactSettings, SessionSettings, SummarizerSettings
from agents.tokens import CharRatioEstimator, estimate_messages_tokens
from tests.support.fakes import random_conversation
from tools.artifacts import ArtifactStore

COUNTER = CharRatioEstimator()
OVERHEAD = 300


class FakeSummarizer:
    def __init__(self, text: str = "## Objective\nfix the parser"):
        self.text = text
        self.calls: list[list[Message]] = []

    async def summarize(self, messages: list[Message], *, focus: str | None = None) -> str:
        self.calls.append(list(messages))
        return self.text


def _env(summarizer=None, artifacts=None) -> CompactionEnv:
    return CompactionEnv(
        counter=COUNTER,
        summarizer=summarizer or FakeSummarizer(),
        artifacts=artifacts,
        settings=CompactSettings(manual_keep_messages=2),
        summarizer_settings=SummarizerSettings(),
        model_name="claude-sonnet-4-5",
    )


def _request(messages, budget, trigger="auto") -> CompactionRequest:
    return CompactionRequest(messages=messages, overhead_tokens=OVERHEAD, budget_tokens=budget, trigger=trigger)


def _tokens(messages) -> int:
    return OVERHEAD + estimate_messages_tokens(COUNTER, messages)


def _turn(k: int, command: str, body: str) -> list[Message]:
    use = ToolUseBlock(id=f"toolu_{k:02d}", name="bash", input={"command": command})
    return [
        Message.assistant(TextBlock(text=f"Step {k}."), use),
        Message.tool_results([ToolResultBlock(tool_use_id=use.id, content=body)]),
    ]


def _conversation(turns: int = 12, body_chars: int = 1_500) -> list[Message]:
    messages = [Message.user("Make the parser accept empty input.")]
    for k in range(turns):
        messages += _turn(k, f"cat src/part{k}.py", f"def part{k}():\n" + "x" * body_chars)
    return messages


async def test_under_the_budget_nothing_changes_and_the_messages_stay_the_same_objects():
    messages = _conversation()
    result = await make_strategy("current").compact(_request(messages, _tokens(messages)), _env())
    assert not result.changed and all(a is b for a, b in zip(result.messages, messages, strict=True))


async def test_over_the_budget_one_step_reaches_the_target_and_keeps_the_task_and_last_calls():
    messages = _conversation()
    budget = _tokens(messages) - 100
    result = await make_strategy("current:start=1.0,target=0.5,keep=3").compact(_request(messages, budget), _env())
    out = result.messages
    assert result.failure is None and _tokens(out) <= budget * 0.5
    assert out[0] is messages[0] and is_digest(out[2])
    assert all(m in out for m in messages[-6:])  # the last 3 calls and their results, untouched
    assert protocol_problems(out, allow_trailing_uses=False) == []


async def test_a_superseded_result_is_cleared_first_naming_the_call_that_superseded_it(tmp_path):
    messages = [Message.user("Fix the test.")]
    messages += _turn(0, "python -m pytest tests/test_a.py", "FAILED tests/test_a.py::test_one\n" + "trace\n" * 300)
    messages += _turn(1, "sed -i 's/a/b/' src/a.py", "")
    messages += _turn(2, "python -m pytest tests/test_a.py", "1 passed in 0.1s")
    store = ArtifactStore(tmp_path / "artifacts")
    budget = _tokens(messages) - 10
    result = await make_strategy("current:start=1.0,target=0.9").compact(
        _request(messages, budget), _env(artifacts=store)
    )
    first = result.messages[2].content[0]
    assert first.marker == SupersededBody(
        original_chars=len(messages[2].content[0].content), by="toolu_02", reason="re-run"
    )
    assert first.content.startswith("[superseded: the same call ran again later (call toolu_02)")
    assert store.get("toolu_00") == messages[2].content[0].content  # Recall returns the full body
    assert result.messages[-1] is messages[-1]


async def test_without_currentness_stale_results_are_not_singled_out():
    messages = [Message.user("task")]
    messages += _turn(0, "make test", "y" * 4_000) + _turn(1, "make test", "ok")
    result = await make_strategy("current:start=1.0,currentness=false,target=0.9,keep=1").compact(
        _request(messages, _tokens(messages) - 10), _env()
    )
    assert not any(isinstance(b.marker, SupersededBody) for m in result.messages for b in m.tool_results_in)


async def test_a_fold_keeps_each_calls_residue_in_the_digest_and_the_body_for_recall(tmp_path):
    messages = [Message.user("Fix the import.")]
    messages += _turn(
        0,
        "python run.py",
        "Traceback (most recent call last):\n"
        + "  noise\n" * 400
        + '  File "src/loader.py", line 42, in load\nImportError: cannot import name spam',
    )
    messages += _turn(1, "ls", "a\nb\n" * 500) + _turn(2, "ls src", "c\n") + _turn(3, "ls tests", "d\n")
    store = ArtifactStore(tmp_path / "artifacts")
    result = await make_strategy("current:start=1.0,keep=2,target=0.3").compact(
        _request(messages, _tokens(messages) - 10), _env(artifacts=store)
    )
    digest = next(m for m in result.messages if is_digest(m))
    assert isinstance(digest.content[0].marker, FoldedTurns)
    line = next(line for line in digest.content[1].text.split("\n") if "toolu_00" in line)
    assert "$ python run.py" in line and "ImportError: cannot import name spam" in line and "src/loader.py:42" in line
    assert store.get("toolu_00") == messages[2].content[0].content


async def test_digests_are_append_only_so_the_prefix_up_to_the_last_one_stays_identical():
    strategy = make_strategy("current:start=1.0,target=0.5,keep=2")
    messages = _conversation(turns=10)
    budget = _tokens(messages) - 100
    first = (await strategy.compact(_request(messages, budget), _env())).messages
    grown = first + [m for k in range(10, 22) for m in _turn(k, f"cat src/more{k}.py", "z" * 1_500)]
    second = (await strategy.compact(_request(grown, budget), _env())).messages
    digests = [i for i, m in enumerate(second) if is_digest(m)]
    assert len(digests) == 2
    assert all(a is b for a, b in zip(second[: digests[0] + 1], first, strict=False))  # byte-identical prefix
    assert compacted_breakpoint(second) == digests[-1]


async def test_without_append_every_fold_rewrites_one_merged_digest():
    strategy = make_strategy("current:start=1.0,target=0.5,keep=2,append=false")
    messages = _conversation(turns=10)
    budget = _tokens(messages) - 100
    first = (await strategy.compact(_request(messages, budget), _env())).messages
    grown = first + [m for k in range(10, 22) for m in _turn(k, f"cat src/more{k}.py", "z" * 1_500)]
    second = (await strategy.compact(_request(grown, budget), _env())).messages
    assert sum(is_digest(m) for m in second) == 1
    assert "toolu_00" in next(m for m in second if is_digest(m)).text


async def test_digests_that_outgrow_their_share_are_merged_keeping_the_newest_lines():
    strategy = make_strategy("current:start=1.0,target=0.5,keep=1,digest=0.05")
    messages = [Message.user("task")]
    for k in range(60):
        messages += _turn(
            k, f"grep -n name{k} src/module{k}.py", f"src/module{k}.py:{k + 100}:def name{k}():\n" + "w" * 600
        )
    budget = _tokens(messages) // 3
    for _ in range(3):
        messages = (await strategy.compact(_request(messages, budget), _env())).messages
        messages += [m for k in range(60, 70) for m in _turn(k, f"cat f{k}", "v" * 1_500)]
    digests = [m for m in messages if is_digest(m)]
    assert sum(COUNTER.count_message(m) for m in digests) <= budget * 0.05 + 50
    assert "older digest lines dropped" in digests[0].text


async def test_the_hard_fit_clears_and_clips_until_even_a_huge_last_result_fits():
    messages = [Message.user("task")]
    messages += _turn(0, "cat big.log", "b" * 6_000) + _turn(1, "cat huge.log", "h" * 40_000)
    budget = OVERHEAD + 3_000
    result = await make_strategy("current").compact(_request(messages, budget), _env())
    assert result.failure is None and _tokens(result.messages) <= budget
    last = result.messages[-1].content[0]
    assert isinstance(last.marker, ClippedBody | ClearedBody)


async def test_prompt_too_long_fits_the_lowered_budget_and_manual_summarizes():
    messages = _conversation()
    lowered = _tokens(messages) // 2
    refused = await make_strategy("current").compact(_request(messages, lowered, "prompt_too_long"), _env())
    assert refused.failure is None and _tokens(refused.messages) <= lowered
    assert refused.events and all(e.kind == "prompt_too_long" for e in refused.events)
    summarizer = FakeSummarizer()
    manual = await make_strategy("current").compact(_request(messages, 10**9, "manual"), _env(summarizer))
    assert manual.failure is None and len(summarizer.calls) == 1 and manual.messages[-2:] == messages[-2:]


@pytest.mark.parametrize(
    "spec",
    ["current:start=1.0", "current:start=1.0,target=0.2,keep=0,residue=0", "current:start=1.0,edits=true,append=false"],
)
async def test_every_request_fits_the_budget_for_random_conversations(spec):
    for seed in range(25):
        messages = random_conversation(random.Random(seed))
        total = _tokens(messages)
        for fraction in (0.2, 0.5, 0.9):
            budget = max(OVERHEAD + 400, int(total * fraction))
            for trigger in ("auto", "prompt_too_long"):
                result = await make_strategy(spec).compact(_request(messages, budget, trigger), _env())
                where = (spec, seed, fraction, trigger)
                assert protocol_problems(result.messages, allow_trailing_uses=False) == [], where
                assert result.failure is not None or _tokens(result.messages) <= budget, where
                assert all(a.role != b.role for a, b in zip(result.messages, result.messages[1:], strict=False)), where


def test_current_is_the_default_strategy_and_its_parameters_are_checked():
    assert SessionSettings().compact.strategy == "current"
    assert make_strategy("current") == CurrentWorkingSet()
    for bad in ("current:target=0", "current:target=1.5", "current:keep=-1", "current:digest=0"):
        with pytest.raises(Exception, match="must be"):
            make_strategy(bad)


def _late_rerun() -> list[Message]:
    """Ten small reads, then a large test run re-run at once: the stale output sits late."""
    messages = [Message.user("task")]
    for k in range(10):
        messages += _turn(k, f"cat src/f{k}.py", "r" * 1_600)
    return messages + _turn(10, "make test", "E" * 12_000) + _turn(11, "make test", "ok")


async def test_clearing_a_late_superseded_result_alone_is_enough_when_that_small_step_pays():
    messages = _late_rerun()
    result = await make_strategy("current:start=1.0,target=0.5,pay=true").compact(
        _request(messages, _tokens(messages) - 100), _env()
    )
    assert not any(is_digest(m) for m in result.messages)
    assert isinstance(result.messages[-3].content[0].marker, SupersededBody)


async def test_without_pay_the_step_goes_on_to_fold_down_to_the_target():
    messages = _late_rerun()
    budget = _tokens(messages) - 100
    result = await make_strategy("current:start=1.0,target=0.5,pay=false").compact(_request(messages, budget), _env())
    assert any(is_digest(m) for m in result.messages) and _tokens(result.messages) <= budget * 0.5
