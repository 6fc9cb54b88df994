"""Peer presets: each peer's published defaults written as a spec over Workingset's
strategies, with the source of every number and what the spec cannot yet say.

A preset name can stand in `--strategies` like a strategy spec (`--presets` adds them all);
results carry the preset name, and `results.json` records the spec it ran. `exact` says
whether the spec reproduces the peer's rule in the peer's own units on every trace;
`gap` says what differs and which strategy parameter would close it.
"""

from __future__ import annotations

from pydantic import BaseModel

__all__ = ["PRESETS", "Preset", "resolve_spec"]


class Preset(BaseModel):
    name: str
    spec: str
    peer: str
    source: str
    exact: bool
    gap: str = ""


PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset(
        name="swe-agent-last5", spec="mask:keep=5", peer="SWE-agent LastNObservations (n=5, polling=1)",
        source="SWE-agent sweagent/agent/history_processors.py (LastNObservations; n=5 in the 0.7 config "
               "config/sweagent_0_7/07.yaml and the original paper; polling defaults to 1)",
        exact=True,
        gap="SWE-agent's placeholder is 'Old environment output: (N lines omitted)'; ours names the Recall id "
            "(a few tokens longer). polling>1 (update the elision only every `polling` steps, keeping between n "
            "and n+polling observations, for the prompt cache) needs a new `mask` parameter `polling: int = 1`.",
    ),
    Preset(
        name="complexity-trap-masking", spec="mask:keep=10", peer="The Complexity Trap, observation masking M=10",
        source="Lindenbauer et al. 2025, arXiv:2508.21433; repo config last_n_observations n: 10",
        exact=True,
    ),
    Preset(
        name="complexity-trap-summary", spec="hybrid:keep=1000000,every=21,last=20",
        peer="The Complexity Trap, LLM-Summary N=21, M=10 (summarize_every_n_turns, keep_last_m_turns)",
        source="arXiv:2508.21433; repo config summarize_every_n_turns n: 21, keep_last_m_turns: 10 "
               "(a turn = one action + its observation = two of our messages)",
        exact=False,
        gap="The peer summarizes when >= n + m = 31 turns are unsummarized, the oldest 21 of them; `hybrid` "
            "counts `every` turns after the kept ones, so its first summary comes at turn 21 (covering 11) and "
            "the later ones match. Needs a `hybrid` parameter `count_kept: bool` (first trigger at every + last/2 "
            "turns). Masking is switched off by keep=1000000.",
    ),
    Preset(
        name="complexity-trap-hybrid", spec="hybrid:keep=10,every=21,last=20",
        peer="The Complexity Trap, hybrid: LLM-Summary N=21, M=10 plus observation masking M=10",
        source="arXiv:2508.21433; repo config default_no_demo_checkpoint_same_model_openhands_N=21_M=10_masking_M=10.yaml",
        exact=False,
        gap="As complexity-trap-summary: the first summary comes 10 turns early without `count_kept`.",
    ),
    Preset(
        name="openhands-masking", spec="mask:keep=50",
        peer="OpenHands ObservationMaskingCondenser (attention_window=100 events)",
        source="OpenHands openhands/core/config/condenser_config.py, ObservationMaskingCondenserConfig "
               "attention_window default 100 (the class itself defaults to 5)",
        exact=False,
        gap="OpenHands counts events (each action and each observation is one); `mask` counts tool results, "
            "so keep=50 matches only where every step makes one call. Needs a `mask` parameter "
            "`unit: results|events` (events = tool uses + tool results + text messages).",
    ),
    Preset(
        name="openhands-recent", spec="window:first=1,last=99",
        peer="OpenHands RecentEventsCondenser (keep_first=1, max_events=100)",
        source="OpenHands condenser_config.py, RecentEventsCondenserConfig defaults",
        exact=False,
        gap="Events, not messages: a message with k tool uses is k events (its results k more). Needs a "
            "`window` parameter `unit: messages|events`.",
    ),
    Preset(
        name="openhands-summarizing", spec="summarize:first=1,last=49,max_events=100,max_tokens=1000000000",
        peer="OpenHands LLMSummarizingCondenser (keep_first=1, max_size=100)",
        source="OpenHands condenser_config.py, LLMSummarizingCondenserConfig defaults; the condenser keeps "
               "keep_first events and the last max_size // 2 - keep_first, the rest becomes one summary",
        exact=False,
        gap="Events, not messages (as openhands-recent): needs `summarize` parameter `unit: messages|events`. "
            "No token trigger: max_tokens=1000000000 switches ours off, as OpenHands has none.",
    ),
    Preset(
        name="anthropic-clear-tool-uses", spec="clear-tool-uses:trigger=100000,keep=3",
        peer="Anthropic context management clear_tool_uses_20250919 (trigger 100,000 input tokens, keep 3 "
             "tool uses, clear_at_least none, clear_tool_inputs false)",
        source="Anthropic Messages API context-editing documentation and SDK types "
               "(BetaClearToolUses20250919Edit)",
        exact=True,
        gap="The API counts the trigger with Claude's tokenizer; the harness with its estimator (see the "
            "token check for how far apart they are). At windows of 100K tokens or less the default trigger "
            "is never reached before the window: that is the peer's default, not a bug.",
    ),
)}

# Published defaults that no spec over today's strategies can express.
NOT_EXPRESSIBLE: dict[str, str] = {
    "openhands-amortized": (
        "OpenHands AmortizedForgettingCondenser (keep_first=1, max_size=100 events): when the history passes "
        "100 events keep the first event and the last 49, drop the rest (no summary). `amortized` triggers "
        "on tokens and halves what follows the head. Needs `amortized` parameters `max_events: int | None` "
        "(trigger on events) and `keep_last: int | None` (keep max_size // 2 - keep_first recent events "
        "instead of halving), plus `unit: messages|events`."
    ),
}


def resolve_spec(name: str) -> str:
    """The strategy spec to replay for a `--strategies` entry (a preset name or a spec)."""
    preset = PRESETS.get(name)
    return preset.spec if preset is not None else name
