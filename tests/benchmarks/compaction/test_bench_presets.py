"""Each peer preset against its peer's own rule, written out here from the peer's source
(`benchmarks/compaction/presets.py` names the files) and run on a growing conversation:
what the preset's strategy keeps at every call is what the peer would keep.

The peers' rules are stated on their own histories: SWE-agent's observations (the task
message is observation 0), the Complexity Trap's turns, OpenHands' events (a system
event first), the Messages API's full client history. Conversations here make one call
per step (or reply in text), two events a step, the case the peers define exactly; the
residual gaps the presets document (parallel batches; with steps of one event, an
OpenHands observation kept in its view without its action) are not asserted."""

import random

import pytest

from agents.compaction import make_strategy
from agents.compaction.clearing import is_cleared, is_elided
from agents.compaction.notes import is_summary_boundary, is_synthetic
from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.tokens import estimate_messages_tokens
from benchmarks.compaction.presets import PRESETS
from tests.support.fakes import (
    COMPACTION_COUNTER,
    COMPACTION_OVERHEAD,
    FakeSummarizer,
    compaction_env,
    compaction_request,
    tool_interaction,
)
from tools.artifacts import ArtifactStore

TASK = "Make the parser accept empty input."


def _strategy(preset: str):
    return make_strategy(PRESETS[preset].spec)


def _elided_ids(messages) -> list[str]:
    return [b.tool_use_id for m in messages for b in m.tool_results_in if is_elided(b)]


# -- SWE-agent LastNObservations and the Complexity Trap's masking ----------------------------


def _swe_agent_omitted(results: int, n: int, polling: int = 1) -> list[int]:
    """LastNObservations._get_omit_indices on [instance template, results...]: the indices
    (1-based, among the results) of the observations it elides."""
    observations = list(range(results + 1))  # 0 is the instance template
    last_removed = max(0, (len(observations) // polling) * polling - n)
    return observations[1:last_removed]


@pytest.mark.parametrize(("preset", "n"), [("swe-agent-last5", 5), ("complexity-trap-masking", 10)])
@pytest.mark.parametrize("steps", [1, 5, 6, 10, 11, 17, 30])
async def test_swe_agent_style_masking_elides_what_last_n_observations_elides(preset, n, steps):
    conversation = [Message.user(TASK)] + [m for k in range(steps) for m in tool_interaction(k, body_chars=300)]
    result = await _strategy(preset).compact(compaction_request(conversation), compaction_env())
    assert _elided_ids(result.messages) == [f"toolu_{i - 1}" for i in _swe_agent_omitted(steps, n)]


@pytest.mark.parametrize("polling", [2, 3, 5])
@pytest.mark.parametrize("steps", range(1, 25))
async def test_swe_agent_polling_elides_what_last_n_observations_elides(polling, steps):
    conversation = [Message.user(TASK)] + [m for k in range(steps) for m in tool_interaction(k, body_chars=300)]
    spec = f"{PRESETS['swe-agent-last5'].spec},polling={polling}"
    result = await make_strategy(spec).compact(compaction_request(conversation), compaction_env())
    assert _elided_ids(result.messages) == [f"toolu_{i - 1}" for i in _swe_agent_omitted(steps, 5, polling)]


# -- the Complexity Trap's summaries ---------------------------------------------------------


def _real_steps(messages) -> list[int]:
    """The steps (by tool id) whose messages are in the conversation verbatim."""
    return [int(u.id.split("_")[1]) for m in messages if not is_synthetic(m) for u in m.tool_uses]


def _complexity_trap_kept(turns: int, n: int = 21, m: int = 10) -> tuple[list[int], int]:
    """SummarizeEveryNTurns, called before each model call: when at least n + m turns are
    unsummarized, the oldest n are summarized. The unsummarized turns, and the summaries."""
    summarized = summaries = 0
    for t in range(1, turns + 1):
        if t - summarized >= n + m:
            summarized += n
            summaries += 1
    return list(range(summarized, turns)), summaries


@pytest.mark.parametrize("preset", ["complexity-trap-summary", "complexity-trap-hybrid"])
async def test_complexity_trap_presets_summarize_when_the_paper_does(preset, tmp_path):
    summarizer = FakeSummarizer()
    env = compaction_env(summarizer, artifacts=ArtifactStore(tmp_path / "artifacts"))
    strategy = _strategy(preset)
    conversation = [Message.user(TASK)]
    for k in range(80):
        conversation = [*conversation, *tool_interaction(k, body_chars=300)]
        conversation = (await strategy.compact(compaction_request(conversation), env)).messages
        kept, summaries = _complexity_trap_kept(k + 1)
        assert _real_steps(conversation) == kept and len(summarizer.calls) == summaries, k
    assert conversation[0].text == TASK


async def test_complexity_trap_hybrid_masks_all_but_ten_and_summarizes_unmasked_turns(tmp_path):
    summarizer = FakeSummarizer()
    env = compaction_env(summarizer, artifacts=ArtifactStore(tmp_path / "artifacts"))
    strategy = _strategy("complexity-trap-hybrid")
    conversation = [Message.user(TASK)]
    for k in range(31):
        conversation = [*conversation, *tool_interaction(k, body_chars=300)]
        conversation = (await strategy.compact(compaction_request(conversation), env)).messages
    [read] = summarizer.calls
    assert _real_steps(read) == list(range(21)) and not any(is_elided(b) for m in read for b in m.tool_results_in)
    verbatim = [b for m in conversation for b in m.tool_results_in if not is_elided(b)]
    assert [b.tool_use_id for b in verbatim] == [f"toolu_{k}" for k in range(21, 31)]


# -- OpenHands: events, with its system event first --------------------------------------------


def _single_call_conversation(rng: random.Random, steps: int) -> list[list[Message]]:
    """Steps of one tool call (use, then result), or a text reply and a user nudge."""
    out = []
    for k in range(steps):
        if rng.random() < 0.8:
            out.append(tool_interaction(k, body_chars=rng.randint(100, 400)))
        else:
            out.append([Message.assistant(TextBlock(text=f"Thinking {k}.")), Message.user(f"Go on {k}.")])
    return out


def _openhands_events(messages) -> list[tuple[str, str]]:
    """The conversation as OpenHands' event list: (kind, key), the system event first."""
    events = [("system", "")]
    for m in messages:
        if m.role == "assistant":
            events += [("action", u.id) for u in m.tool_uses] or [("message", m.text)]
        else:
            events += [("observation", r.tool_use_id) for r in m.tool_results_in]
            if m.text:
                events.append(("message", m.text))
    return events


def _sent(view: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """What OpenHands' conversation memory sends of a view, less its system event and
    summary: a tool call without its result and a result without its call are dropped."""
    actions = {k for kind, k in view if kind == "action"}
    observations = {k for kind, k in view if kind == "observation"}
    return [
        (kind, k)
        for kind, k in view
        if kind == "message" or (kind == "action" and k in observations) or (kind == "observation" and k in actions)
    ]


def _ours(messages) -> list[tuple[str, str]]:
    real = [m for m in messages if not is_synthetic(m) and not is_summary_boundary(m)]
    return _openhands_events(real)[1:]


@pytest.mark.parametrize("seed", range(4))
async def test_openhands_masking_masks_the_observations_outside_the_last_100_events(seed):
    rng = random.Random(seed)
    conversation = [Message.user(TASK)] + [m for step in _single_call_conversation(rng, 90) for m in step]
    result = await _strategy("openhands-masking").compact(compaction_request(conversation), compaction_env())
    view = _openhands_events(conversation)
    masked = [k for i, (kind, k) in enumerate(view) if kind == "observation" and i < len(view) - 100]
    assert _elided_ids(result.messages) == masked


@pytest.mark.parametrize("seed", range(4))
async def test_openhands_recent_keeps_the_system_event_and_the_last_99(seed):
    rng = random.Random(seed)
    strategy = _strategy("openhands-recent")
    history, conversation = [Message.user(TASK)], [Message.user(TASK)]
    for step in _single_call_conversation(rng, 90):
        history, conversation = [*history, *step], [*conversation, *step]
        conversation = (await strategy.compact(compaction_request(conversation), compaction_env())).messages
        view = _openhands_events(history)
        if len(view) > 100:
            view = view[:1] + view[-99:]
        assert _ours(conversation) == _sent(view)


async def _rolling(preset: str, seed: int, condense) -> None:
    """Grow a conversation; after each call, ours sends what OpenHands' rolling condenser
    (`condense(view)` once the view passes 100 events) sends."""
    strategy, summarizer = _strategy(preset), FakeSummarizer()
    view, conversation = _openhands_events([Message.user(TASK)]), [Message.user(TASK)]
    for k, step in enumerate(_single_call_conversation(random.Random(seed), 150)):
        view += _openhands_events(step)[1:]
        conversation = [*conversation, *step]
        summarizer.calls.clear()  # many summaries: not a runaway loop
        conversation = (await strategy.compact(compaction_request(conversation), compaction_env(summarizer))).messages
        if len(view) > 100:
            view = condense(view)
        assert _ours(conversation) == _sent(view), k


@pytest.mark.parametrize("seed", range(6))
async def test_openhands_summarizing_summarizes_as_the_llm_summarizing_condenser(seed):
    # keep_first=1 (the system event), one summary, the last 100 // 2 - 1 - 1 = 48.
    await _rolling("openhands-summarizing", seed, lambda view: [view[0], ("summary", ""), *view[-48:]])


@pytest.mark.parametrize("seed", range(6))
async def test_openhands_amortized_forgets_as_the_amortized_forgetting_condenser(seed):
    # keep_first=1 (the system event) and the last 100 // 2 - 1 = 49.
    await _rolling("openhands-amortized", seed, lambda view: [view[0], *view[-49:]])


# -- Anthropic clear_tool_uses_20250919 ----------------------------------------------------------


async def test_anthropic_clear_tool_uses_clears_as_the_api_does_on_the_full_history(tmp_path):
    env = compaction_env(artifacts=ArtifactStore(tmp_path / "artifacts"))
    strategy = _strategy("anthropic-clear-tool-uses")
    history, conversation, cleared_calls = [Message.user(TASK)], [Message.user(TASK)], 0
    for k in range(70):
        step = [
            Message.assistant(ToolUseBlock(id=f"t{k}", name="Read", input={"path": f"f{k}.py"})),
            Message.tool_results([ToolResultBlock(tool_use_id=f"t{k}", content=f"{k} " + "z" * 8_000)]),
        ]
        history, conversation = [*history, *step], [*conversation, *step]
        conversation = (await strategy.compact(compaction_request(conversation), env)).messages
        full = COMPACTION_OVERHEAD + estimate_messages_tokens(COMPACTION_COUNTER, history)
        # The API: over 100,000 input tokens, every result but the last 3 tool uses' is cleared.
        expected = [f"t{i}" for i in range(k + 1 - 3)] if full > 100_000 else []
        assert [b.tool_use_id for m in conversation for b in m.tool_results_in if is_cleared(b)] == expected, k
        cleared_calls += bool(expected)
    assert cleared_calls > 10  # the rule was exercised past the trigger, not only under it


# -- window-aware presets and the sweep grids ------------------------------------------------------


def test_window_aware_presets_follow_the_window_as_their_peers_document():
    from benchmarks.compaction.presets import resolve_spec

    # 16,000: a request may hold 11,904 tokens; the compact budget is 0.8 of that, 9,523.
    assert resolve_spec("anthropic-clear-tool-uses-budget", 16_000) == (
        "clear-tool-uses:count_cleared=true,trigger=9523,clear_at_least=1587,keep=3"
    )
    assert (
        resolve_spec("complexity-trap-limit-aware", 16_000)
        == "clear-tool-uses:count_cleared=true,trigger=14400,keep=10"
    )
    assert resolve_spec("openhands-v1-window", 64_000) == (
        "benchmarks.compaction.peer_rules:OpenHandsV1Condenser:max_size=240,keep_first=2,max_tokens=59904"
    )
    assert resolve_spec("swe-agent-last5", 16_000) == "mask:keep=5"  # a count, whatever the window


def test_every_family_grid_has_as_many_points_as_the_defaults_tuning_grid():
    from benchmarks.compaction.presets import (
        CURRENT_TUNING_GRID,
        FAMILIES,
        PRESETS,
        family_members,
        resolve_spec,
    )

    assert {name: len(f.points) for name, f in FAMILIES.items()} == dict.fromkeys(
        FAMILIES, len(CURRENT_TUNING_GRID.points)
    )
    # Each window-aware preset is its family's first grid point: the same spec at every window.
    for name, preset in PRESETS.items():
        if preset.window_aware:
            first = FAMILIES[preset.family].points[0].name
            assert all(resolve_spec(name, w) == resolve_spec(first, w) for w in (16_000, 32_000, 64_000))
    assert family_members(["raw", "swe-agent-last5", "openhands-v1/0.8"]) == {
        "swe-agent-masking": ["swe-agent-last5"],
        "openhands-v1": ["openhands-v1/0.8"],
    }


def _v1(**params):
    return make_strategy(
        "benchmarks.compaction.peer_rules:OpenHandsV1Condenser:" + ",".join(f"{k}={v}" for k, v in params.items())
    )


async def test_openhands_v1_over_max_size_keeps_the_task_a_summary_and_max_size_over_2_minus_3_events():
    summarizer = FakeSummarizer()
    conversation = [Message.user(TASK)] + [m for k in range(10) for m in tool_interaction(k, body_chars=300)]
    # 21 events + the system event = 22 > max_size 20: keep 20 // 2 - 2 - 1 = 7 events, whole interactions: 3.
    result = await _v1(max_size=20, keep_first=2).compact(compaction_request(conversation), compaction_env(summarizer))
    assert result.messages[0].text == TASK and _real_steps(result.messages) == [7, 8, 9]
    [read] = summarizer.calls
    assert _real_steps(read) == list(range(7))


async def test_openhands_v1_under_both_limits_changes_nothing():
    conversation = [Message.user(TASK)] + [m for k in range(9) for m in tool_interaction(k, body_chars=300)]
    result = await _v1(max_size=20, keep_first=2).compact(compaction_request(conversation), compaction_env())
    assert result.messages == conversation and not result.events


async def test_openhands_v1_over_max_tokens_keeps_the_longest_suffix_within_half_of_it():
    conversation = [Message.user(TASK)] + [m for k in range(30) for m in tool_interaction(k, body_chars=800)]
    total = COMPACTION_OVERHEAD + estimate_messages_tokens(COMPACTION_COUNTER, conversation)
    limit = total - 1
    head = COMPACTION_OVERHEAD + estimate_messages_tokens(COMPACTION_COUNTER, conversation[:1])
    kept = max(
        n
        for n in range(31)
        if head + estimate_messages_tokens(COMPACTION_COUNTER, conversation[len(conversation) - 2 * n :] if n else [])
        <= limit // 2
    )
    result = await _v1(max_tokens=limit).compact(compaction_request(conversation), compaction_env())
    assert _real_steps(result.messages) == list(range(30 - kept, 30)) and kept > 0
