"""Peer presets: each peer's published defaults written as a spec over Workingset's
strategies, with the source of every number and what still differs.

A preset name can stand in `--strategies` like a strategy spec (`--presets` adds them all);
results carry the preset name, and `results.json` records the spec it ran. `exact` says
whether the spec reproduces the peer's rule in the peer's own units on every trace (the
words of a placeholder or a summary aside); `gap` says what differs, and why.

Units. SWE-agent and the Complexity Trap count observations (one tool result each) and
turns (one assistant message and its result); OpenHands counts events: each action and
each observation is one (`agents.compaction.units` defines an event for our typed
conversation). OpenHands V0 histories begin with a system-message event (the recorded
OpenHands traces in the corpus do), so its keep_first=1 keeps the system prompt and not
the task; Workingset always sends its system prompt as request overhead and never
counts it, so keep_first=k is first=k-1 here and max_size=M is M-1 conversation events.
"""

from __future__ import annotations

from pydantic import BaseModel

__all__ = ["PRESETS", "Preset", "resolve_spec"]

OPENHANDS_CONFIG = ("OpenHands openhands/core/config/condenser_config.py (V0; github.com/OpenHands/OpenHands, "
                    "the condensers in openhands/memory/condenser/impl/)")
COMPLEXITY_TRAP = ("Lindenbauer et al. 2025, 'The Complexity Trap', arXiv:2508.21433; "
                   "github.com/Recursive-Safeguarding/the-complexity-trap")
SWE_AGENT = "SWE-agent sweagent/agent/history_processors.py (github.com/SWE-agent/SWE-agent)"


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
        source=f"{SWE_AGENT}, LastNObservations: n (no default; 5 in config/sweagent_0_7/07.yaml and the "
               "original paper), polling default 1; the instance template is observation 0 and never elided",
        exact=True,
        gap="Only the placeholder differs: SWE-agent writes 'Old environment output: (N lines omitted)', ours "
            "names the Recall id. SWE-agent's polling option is `mask:keep=5,polling=P` (the elision moves "
            "every P results, counting the task as the first observation, as SWE-agent does).",
    ),
    Preset(
        name="complexity-trap-masking", spec="mask:keep=10", peer="The Complexity Trap, observation masking M=10",
        source=f"{COMPLEXITY_TRAP}: config last_n_observations n: 10 (SWE-agent's LastNObservations, polling 1)",
        exact=True,
        gap="Only the placeholder differs (as swe-agent-last5).",
    ),
    Preset(
        name="complexity-trap-summary", spec="hybrid:keep=1000000,every=31,last=20,count_kept=true",
        peer="The Complexity Trap, LLM-Summary N=21, M=10 (summarize_every_n_turns, keep_last_m_turns)",
        source=f"{COMPLEXITY_TRAP}: config/default_no_demo_checkpoint_same_model_openhands_N=21_M=10.yaml "
               "(summarize_every_n_turns n: 21, keep_last_m_turns: 10, enable_static_checkpointing: true); "
               "sweagent/agent/history_processors.py SummarizeEveryNTurns summarizes the oldest n turns when "
               "n + m are unsummarized, and keeps one checkpoint",
        exact=True,
        gap="every=31 counts all unsummarized turns (count_kept), so the first summary comes at turn 31 covering "
            "turns 1-21, and every 21 turns after; last=20 messages are the M=10 turns where a turn is one "
            "assistant message and its result message (SWE-agent makes one call per step). keep=1000000 switches "
            "masking off. The summary's words come from the benchmark's summarizer, not the peer's prompt.",
    ),
    Preset(
        name="complexity-trap-hybrid", spec="hybrid:keep=10,every=31,last=20,count_kept=true,summarize_unmasked=true",
        peer="The Complexity Trap, hybrid: LLM-Summary N=21, M=10 plus observation masking M=10",
        source=f"{COMPLEXITY_TRAP}: config/default_no_demo_checkpoint_same_model_openhands_N=21_M=10_masking_M=10"
               ".yaml (summarize_every_n_turns n: 21, keep_last_m_turns: 10, then last_n_observations n: 10; "
               "the processors run in that order on the full history, so the summary reads unmasked turns)",
        exact=False,
        gap="Triggers and kept turns as complexity-trap-summary; summarize_unmasked gives the summarizer the "
            "elided bodies as they were. A result the per-result budget clipped before it was masked reaches "
            "the summarizer as its placeholder (the clipped view is not kept); the peer's summarizer reads it.",
    ),
    Preset(
        name="openhands-masking", spec="mask:keep=100,unit=events",
        peer="OpenHands ObservationMaskingCondenser (attention_window=100 events)",
        source=f"{OPENHANDS_CONFIG}: ObservationMaskingCondenserConfig attention_window default 100 (the class "
               "itself defaults to 5); an observation is masked when it is not among the last attention_window "
               "events",
        exact=False,
        gap="The placeholder differs (OpenHands writes '<MASKED>', ours names the Recall id), and where the "
            "100-event window ends inside a parallel batch: OpenHands V0 runs a batch's calls one at a time "
            "(use, result, use, result), ours counts the batch's uses, then its results, so which of that "
            "batch's results stay verbatim can differ. Exact where steps make one call.",
    ),
    Preset(
        name="openhands-recent", spec="window:first=0,last=99,unit=events",
        peer="OpenHands RecentEventsCondenser (keep_first=1, max_events=100)",
        source=f"{OPENHANDS_CONFIG}: RecentEventsCondenserConfig keep_first 1, max_events 100 (the class "
               "defaults to 10); every step keeps view[:keep_first] and the last max_events - keep_first events",
        exact=False,
        gap="keep_first=1 is OpenHands' system-message event, which Workingset sends as overhead: first=0, last=99 "
            "(see the module docstring). Where the cut falls inside a parallel batch OpenHands can keep the "
            "calls whose results it kept; Workingset drops the batch whole (an interaction cut at one call is "
            "dropped by both).",
    ),
    Preset(
        name="openhands-summarizing", spec="summarize:first=0,last=48,max_events=99,max_tokens=1000000000,unit=events",
        peer="OpenHands LLMSummarizingCondenser (keep_first=1, max_size=100)",
        source=f"{OPENHANDS_CONFIG}: LLMSummarizingCondenserConfig keep_first 1, max_size 100; over max_size "
               "events it keeps keep_first events, then one summary event, then the last "
               "max_size // 2 - keep_first - 1 = 48",
        exact=False,
        gap="keep_first=1 and max_size=100 count OpenHands' system-message event: first=0, max_events=99. No "
            "token trigger (max_tokens=1000000000), as OpenHands V0 has none. An observation cut from its "
            "action stays in OpenHands' view (counted toward its next trigger, though not sent); ours is "
            "summarized, so a later summary can come one event later; parallel batches as openhands-recent. "
            "OpenHands cuts each event to 10,000 characters for its summarizer (max_event_length); ours reads "
            "the messages whole.",
    ),
    Preset(
        name="openhands-amortized", spec="amortized:first=0,keep_last=49,max_events=99,max_tokens=1000000000,unit=events",
        peer="OpenHands AmortizedForgettingCondenser (keep_first=1, max_size=100)",
        source=f"{OPENHANDS_CONFIG}: AmortizedForgettingCondenserConfig keep_first 1, max_size 100 (the class "
               "defaults keep_first to 0); over max_size events it keeps keep_first events and the last "
               "max_size // 2 - keep_first = 49, forgetting the rest without a summary",
        exact=False,
        gap="keep_first and max_size count the system-message event (first=0, max_events=99); no token trigger. "
            "Cuts inside an interaction as openhands-summarizing (a later cut can come one event later).",
    ),
    Preset(
        name="anthropic-clear-tool-uses", spec="clear-tool-uses:trigger=100000,keep=3,count_cleared=true",
        peer="Anthropic context management clear_tool_uses_20250919 (trigger 100,000 input tokens, keep 3 "
             "tool uses, clear_at_least none, exclude_tools none, clear_tool_inputs false)",
        source="Anthropic Messages API context-editing documentation (platform.claude.com/docs/en/build-with-"
               "claude/context-editing; beta header context-management-2025-06-27) and SDK types "
               "(BetaClearToolUses20250919Edit)",
        exact=True,
        gap="The API edits each request server-side on the client's full history: count_cleared makes the "
            "trigger count cleared bodies as they were, so once past 100,000 tokens every call keeps only the "
            "last 3 results, as the API does. The API counts with Claude's tokenizer, the harness with its "
            "estimator (see the token check). At windows of 100K tokens or less the trigger is never reached: "
            "that is the peer's default, not a bug.",
    ),
)}


def resolve_spec(name: str) -> str:
    """The strategy spec to replay for a `--strategies` entry (a preset name or a spec)."""
    preset = PRESETS.get(name)
    return preset.spec if preset is not None else name
