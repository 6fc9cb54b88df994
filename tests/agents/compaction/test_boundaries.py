"""Split points: never between a tool_use and its tool_result."""

import random

from agents.compaction.boundaries import (
    clean_boundaries,
    split_keeping_recent,
    split_largest_fitting_suffix,
)
from agents.messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    is_protocol_complete,
    protocol_problems,
)
from agents.tokens import CharRatioEstimator, estimate_messages_tokens

COUNTER = CharRatioEstimator()
SEEDS = range(12)


def _random_conversation(rng: random.Random, *, turns: int | None = None) -> list[Message]:
    """A protocol-complete conversation: text turns, single calls and parallel batches
    (results sometimes in a different order, sometimes followed by user text)."""
    messages = [Message.user("task: " + "x" * rng.randint(5, 200))]
    for t in range(turns if turns is not None else rng.randint(3, 14)):
        n_uses = rng.choice([0, 1, 1, 2, 3])
        blocks: list[TextBlock | ToolUseBlock] = []
        if n_uses == 0 or rng.random() < 0.5:
            blocks.append(TextBlock(text="thinking " * rng.randint(1, 30)))
        uses = [
            ToolUseBlock(id=f"toolu_{t}_{k}", name=rng.choice(["Bash", "Read", "Grep"]), input={"k": k})
            for k in range(n_uses)
        ]
        messages.append(Message.assistant(*blocks, *uses))
        if uses:
            results = [ToolResultBlock(tool_use_id=u.id, content="out " * rng.randint(1, 400)) for u in uses]
            rng.shuffle(results)
            extra = (TextBlock(text="note"),) if rng.random() < 0.2 else ()
            messages.append(Message(role="user", content=(*results, *extra)))
        else:
            messages.append(Message.user("continue " * rng.randint(1, 20)))
    assert is_protocol_complete(messages)
    return messages


def _assert_clean_split(messages: list[Message], split: int) -> None:
    older, recent = messages[:split], messages[split:]
    assert older and recent
    assert protocol_problems(recent) == [], (split, protocol_problems(recent))
    assert protocol_problems(older, allow_trailing_uses=False) == []


def test_clean_boundaries_reject_splits_inside_a_tool_interaction():
    messages = [
        Message.user("go"),
        Message.assistant(ToolUseBlock(id="a", name="Read"), ToolUseBlock(id="b", name="Read")),
        Message.tool_results([ToolResultBlock(tool_use_id="b"), ToolResultBlock(tool_use_id="a")]),
        Message.assistant(TextBlock(text="done")),
    ]
    assert clean_boundaries(messages) == [False, True, False, True, False]


def test_split_keeping_recent_never_separates_a_use_from_its_result():
    for seed in SEEDS:
        messages = _random_conversation(random.Random(seed))
        for keep in range(0, len(messages) + 2):
            split = split_keeping_recent(messages, keep)
            if split is not None:
                _assert_clean_split(messages, split)


def test_split_largest_fitting_suffix_never_separates_a_use_from_its_result():
    for seed in SEEDS:
        messages = _random_conversation(random.Random(seed))
        total = estimate_messages_tokens(COUNTER, messages)
        for budget in range(0, total + 50, 7):
            split = split_largest_fitting_suffix(messages, budget, COUNTER)
            if split is not None:
                _assert_clean_split(messages, split)


def test_split_keeping_recent_keeps_at_least_keep_messages():
    for seed in SEEDS:
        messages = _random_conversation(random.Random(seed))
        for keep in range(1, len(messages)):
            split = split_keeping_recent(messages, keep)
            if split is not None:
                assert len(messages) - split >= keep


def test_split_keeping_recent_is_the_latest_clean_split():
    for seed in SEEDS:
        messages = _random_conversation(random.Random(seed))
        clean = clean_boundaries(messages)
        for keep in range(1, len(messages)):
            split = split_keeping_recent(messages, keep)
            candidates = [i for i in range(1, len(messages) - keep + 1) if clean[i]]
            assert split == (max(candidates) if candidates else None)


def test_split_keeping_recent_is_none_when_nothing_would_be_older():
    messages = _random_conversation(random.Random(1), turns=3)
    assert split_keeping_recent(messages, len(messages)) is None
    assert split_keeping_recent(messages, len(messages) + 5) is None
    assert split_keeping_recent([Message.user("only")], 0) is None
    assert split_keeping_recent([], 1) is None


def test_split_keeping_recent_is_none_when_the_only_split_is_inside_a_pair():
    messages = [
        Message.assistant(ToolUseBlock(id="a", name="Read")),
        Message.tool_results([ToolResultBlock(tool_use_id="a")]),
    ]
    assert split_keeping_recent(messages, 1) is None


def test_largest_fitting_suffix_fits_and_is_maximal_among_clean_splits():
    for seed in SEEDS:
        messages = _random_conversation(random.Random(seed))
        clean = clean_boundaries(messages)
        total = estimate_messages_tokens(COUNTER, messages)
        for budget in range(0, total + 50, 11):
            split = split_largest_fitting_suffix(messages, budget, COUNTER)
            fitting = [
                i
                for i in range(1, len(messages))
                if clean[i] and estimate_messages_tokens(COUNTER, messages[i:]) <= budget
            ]
            assert split == (min(fitting) if fitting else None), (seed, budget)
            if split is not None:
                assert estimate_messages_tokens(COUNTER, messages[split:]) <= budget


def test_largest_fitting_suffix_is_none_when_nothing_fits():
    messages = _random_conversation(random.Random(3))
    assert split_largest_fitting_suffix(messages, 0, COUNTER) is None
