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

Window-aware presets. The published defaults trigger on turn or event counts meant for
windows of 100K tokens and more; at 16K or 32K they either never compact (identical to
raw) or send requests over the window. Each peer family therefore also has a variant
whose trigger follows the window, as the peer documents it: OpenHands V1's condenser
with its optional `max_tokens`, the Complexity Trap's limit-aware trigger, Anthropic's
clear_tool_uses triggered at the compact budget with `clear_at_least`. A spec may hold
`{window}`, `{limit}` (window - 4,096 output reserve) and `{budget}` (limit x
compact.ratio, the harness's compact budget), each optionally scaled (`{0.9*window}`),
filled in per window by `resolve_spec(name, window)`.

Sweeps. `FAMILIES` defines, once, a grid of each family's own parameters (its window-aware
default first); `--sweep FAMILY` runs the family over it, with the default strategy's own
tuning grid (`CURRENT_TUNING_GRID`) beside it. Every grid has as many points as that
tuning grid, so no side is searched more finely than the other.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from agents.errors import ConfigError
from agents.settings import CompactSettings
from benchmarks.replay import MAX_OUTPUT_TOKENS

__all__ = [
    "CURRENT_TUNING_GRID",
    "FAMILIES",
    "PRESETS",
    "Family",
    "Preset",
    "TuningGrid",
    "family_members",
    "family_names",
    "resolve_spec",
    "sweep_strategies",
    "window_values",
]

OPENHANDS_CONFIG = (
    "OpenHands openhands/core/config/condenser_config.py (V0; github.com/OpenHands/OpenHands, "
    "the condensers in openhands/memory/condenser/impl/)"
)
COMPLEXITY_TRAP = (
    "Lindenbauer et al. 2025, 'The Complexity Trap', arXiv:2508.21433; "
    "github.com/Recursive-Safeguarding/the-complexity-trap"
)
SWE_AGENT = "SWE-agent sweagent/agent/history_processors.py (github.com/SWE-agent/SWE-agent)"


class Preset(BaseModel):
    name: str
    spec: str  # may hold {window}, {limit}, {budget} (module docstring)
    peer: str
    source: str
    exact: bool
    gap: str = ""
    window_aware: bool = False
    family: str = ""  # the swept family (FAMILIES) this preset is a point of, if any

    def spec_for(self, window: int) -> str:
        return fill_window(self.spec, window)


_PLACEHOLDER = re.compile(r"\{(?:(\d+(?:\.\d+)?)\*)?(window|limit|budget)\}")


def window_values(window: int) -> dict[str, int]:
    """The window, what a request may hold (window - output reserve) and the compact budget."""
    limit = window - MAX_OUTPUT_TOKENS
    return {"window": window, "limit": limit, "budget": int(limit * CompactSettings().ratio)}


def fill_window(spec: str, window: int) -> str:
    values = window_values(window)
    return _PLACEHOLDER.sub(lambda m: str(max(1, int(float(m[1] or 1) * values[m[2]]))), spec)


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            name="swe-agent-last5",
            spec="mask:keep=5",
            family="swe-agent-masking",
            peer="SWE-agent LastNObservations (n=5, polling=1)",
            source=f"{SWE_AGENT}, LastNObservations: n (no default; 5 in config/sweagent_0_7/07.yaml and the "
            "original paper), polling default 1; the instance template is observation 0 and never elided",
            exact=True,
            gap="Only the placeholder differs: SWE-agent writes 'Old environment output: (N lines omitted)', ours "
            "names the Recall id. SWE-agent's polling option is `mask:keep=5,polling=P` (the elision moves "
            "every P results, counting the task as the first observation, as SWE-agent does).",
        ),
        Preset(
            name="complexity-trap-masking",
            spec="mask:keep=10",
            family="swe-agent-masking",
            peer="The Complexity Trap, observation masking M=10",
            source=f"{COMPLEXITY_TRAP}: config last_n_observations n: 10 (SWE-agent's LastNObservations, polling 1)",
            exact=True,
            gap="Only the placeholder differs (as swe-agent-last5).",
        ),
        Preset(
            name="complexity-trap-summary",
            spec="hybrid:keep=1000000,every=31,last=20,count_kept=true",
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
            name="complexity-trap-hybrid",
            spec="hybrid:keep=10,every=31,last=20,count_kept=true,summarize_unmasked=true",
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
            name="openhands-masking",
            spec="mask:keep=100,unit=events",
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
            name="openhands-recent",
            spec="window:first=0,last=99,unit=events",
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
            name="openhands-summarizing",
            spec="summarize:first=0,last=48,max_events=99,max_tokens=1000000000,unit=events",
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
            name="openhands-amortized",
            spec="amortized:first=0,keep_last=49,max_events=99,max_tokens=1000000000,unit=events",
            peer="OpenHands AmortizedForgettingCondenser (keep_first=1, max_size=100)",
            source=f"{OPENHANDS_CONFIG}: AmortizedForgettingCondenserConfig keep_first 1, max_size 100 (the class "
            "defaults keep_first to 0); over max_size events it keeps keep_first events and the last "
            "max_size // 2 - keep_first = 49, forgetting the rest without a summary",
            exact=False,
            gap="keep_first and max_size count the system-message event (first=0, max_events=99); no token trigger. "
            "Cuts inside an interaction as openhands-summarizing (a later cut can come one event later).",
        ),
        Preset(
            name="anthropic-clear-tool-uses",
            spec="clear-tool-uses:trigger=100000,keep=3,count_cleared=true",
            family="anthropic-clear-tool-uses",
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
    )
}


OPENHANDS_V1 = (
    "OpenHands V1 SDK openhands-sdk/openhands/sdk/context/condenser/llm_summarizing_condenser.py "
    "(github.com/OpenHands/software-agent-sdk): LLMSummarizingCondenser max_size 240, keep_first 2, "
    "max_tokens None (the agent model's input limit applies when known; over it the view is condensed "
    "to max_tokens // 2)"
)
CT_LIMIT_AWARE = (
    f"{COMPLEXITY_TRAP}: sweagent/agent/history_processors.py LastNObservations with "
    "enable_limit_aware_trigger (limit_trigger_fraction 0.9 of the context window, "
    "limit_trigger_min_tokens 0): masking applies only once the history passes the threshold"
)
ANTHROPIC_EDITING = (
    "Anthropic context-editing documentation (clear_tool_uses_20250919: trigger, keep, clear_at_least "
    "'minimum tokens that must be cleared when triggered'; its example clears at least 5,000 at a "
    "30,000 trigger, 1/6)"
)
_V1 = "benchmarks.compaction.peer_rules:OpenHandsV1Condenser:max_size=240,keep_first=2,max_tokens="
_CT = "clear-tool-uses:count_cleared=true,trigger="
_CTU = "clear-tool-uses:count_cleared=true,trigger={budget},clear_at_least={0.1667*budget},keep="

WINDOW_AWARE: tuple[Preset, ...] = (
    Preset(
        name="openhands-v1-window",
        spec=_V1 + "{limit}",
        window_aware=True,
        family="openhands-v1",
        peer="OpenHands V1 LLMSummarizingCondenser (max_size 240, keep_first 2, max_tokens = what a request may hold)",
        source=OPENHANDS_V1,
        exact=False,
        gap="The token limit is the window minus the output reserve (the SDK reads the model's input limit); "
        "tokens are the harness's estimate, not the model's tokenizer; the summary's words are the "
        "benchmark summarizer's (benchmarks/compaction/peer_rules.py).",
    ),
    Preset(
        name="complexity-trap-limit-aware",
        spec=_CT + "{0.9*window},keep=10",
        window_aware=True,
        family="complexity-trap-limit-aware",
        peer="The Complexity Trap, limit-aware observation masking (M=10 once the history passes 0.9 x the window)",
        source=CT_LIMIT_AWARE,
        exact=False,
        gap="clear-tool-uses with count_cleared is the same rule (the trigger counts the full history, then all "
        "but the last 10 results are masked); the placeholder differs and the task message, observation 0 "
        "there, is never a tool result here. 0.9 x the window can exceed what a request may hold "
        "(window - 4,096): that is the peer's threshold, kept.",
    ),
    Preset(
        name="anthropic-clear-tool-uses-budget",
        spec=_CTU + "3",
        window_aware=True,
        family="anthropic-clear-tool-uses",
        peer="Anthropic clear_tool_uses_20250919 triggered at the compact budget, keep 3, clear_at_least 1/6 "
        "of the budget",
        source=ANTHROPIC_EDITING,
        exact=False,
        gap="The trigger is Workingset's compact budget rather than the published 100,000 tokens; clear_at_least "
        "follows the documentation's example ratio.",
    ),
)
PRESETS.update({p.name: p for p in WINDOW_AWARE})


class TuningGrid(BaseModel):
    points: tuple[str, ...]
    source: str


CURRENT_TUNING_GRID = TuningGrid(
    points=("current", "current:start=1.0", "current:headroom=0.1", "current:keep=1"),
    source="Four points, tuned on ../shared/traces only: the default (triggered at the window less 5% headroom, "
    "by the calibrated count), its earlier trigger at the compact budget (start=1.0), twice the headroom, and "
    "keep=1 (goal.py --default, commit eab6241). The earlier grid's start 1.1 and 1.25 were measured with the "
    "uncalibrated estimator (commit e18c943); the window trigger replaces them.",
)


class Family(BaseModel):
    """A peer family swept over its own parameters; points[0] is its window-aware default."""

    name: str
    parameter: str
    points: tuple[Preset, ...]


def _points(family: str, peer: str, source: str, template: str, values: tuple[str, ...]) -> tuple[Preset, ...]:
    return tuple(
        Preset(
            name=f"{family}/{v}",
            spec=template.replace("{v}", v),
            peer=peer,
            source=source,
            exact=False,
            window_aware=True,
        )
        for v in values
    )


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family(
            name="swe-agent-masking",
            parameter="n: observations kept (mask:keep=n)",
            points=_points(
                "swe-agent-masking", "SWE-agent LastNObservations", SWE_AGENT, "mask:keep={v}", ("5", "2", "10", "20")
            ),
        ),
        Family(
            name="complexity-trap-limit-aware",
            parameter="(fraction of the window, M kept)",
            points=tuple(
                Preset(
                    name=f"complexity-trap-limit-aware/{f}x{m}",
                    spec=_CT + f"{{{f}*window}},keep={m}",
                    peer="The Complexity Trap, limit-aware masking",
                    source=CT_LIMIT_AWARE,
                    exact=False,
                    window_aware=True,
                )
                for f, m in (("0.9", 10), ("0.7", 10), ("0.7", 5), ("0.5", 5))
            ),
        ),
        Family(
            name="openhands-v1",
            parameter="max_tokens as a fraction of what a request may hold",
            points=tuple(
                Preset(
                    name=f"openhands-v1/{f}",
                    spec=_V1 + f"{{{f}*limit}}",
                    peer="OpenHands V1 condenser",
                    source=OPENHANDS_V1,
                    exact=False,
                    window_aware=True,
                )
                for f in ("1.0", "0.8", "0.6", "0.4")
            ),
        ),
        Family(
            name="anthropic-clear-tool-uses",
            parameter="keep: tool uses kept (trigger at the budget)",
            points=_points(
                "anthropic-clear-tool-uses",
                "Anthropic clear_tool_uses",
                ANTHROPIC_EDITING,
                _CTU + "{v}",
                ("3", "1", "5", "8"),
            ),
        ),
    )
}
_SWEEP_POINTS = {p.name: p for f in FAMILIES.values() for p in f.points}


def family_members(strategies: list[str]) -> dict[str, list[str]]:
    """Family -> the names among `strategies` that are points of it (sweep points, presets)."""
    out: dict[str, list[str]] = {}
    for name, family in FAMILIES.items():
        members = [p.name for p in family.points if p.name in strategies]
        members += [n for n, p in PRESETS.items() if p.family == name and n in strategies]
        if members:
            out[name] = members
    return out


def sweep_strategies(families: list[str]) -> list[str]:
    """What `--sweep` runs: the default's tuning grid and each family's grid."""
    return [*CURRENT_TUNING_GRID.points, *(p.name for f in families for p in FAMILIES[f].points)]


def family_names(text: str) -> list[str]:
    """`--sweep` value: `all` or comma-separated family names."""
    names = list(FAMILIES) if text.strip() == "all" else [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in FAMILIES]
    if unknown or not names:
        raise ConfigError(
            f"--sweep {text}: unknown family {', '.join(unknown) or '(none)'}; known: all, {', '.join(FAMILIES)}"
        )
    return names


def resolve_spec(name: str, window: int = 32_000) -> str:
    """The strategy spec to replay for a `--strategies` entry (a preset or sweep point name,
    or a spec) at `window`."""
    preset = PRESETS.get(name) or _SWEEP_POINTS.get(name)
    return fill_window(preset.spec if preset is not None else name, window)
