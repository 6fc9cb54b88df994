"""Compaction strategies: the policy that orders the pure steps.

A strategy gets the conversation, the request overhead (system prompt + tool
schemas), the budget and the trigger, and returns the conversation to send plus
ledger events. The loop never knows which strategy runs; new baselines register
by name (`register_strategy`) without touching it.

`clear-then-summarize` (the default, from the design):
  auto    — under budget: nothing. Else clear old tool results (unless it frees less
            than min_gain_tokens); under budget now: done. Else summarize older at a
            clean boundary keeping the last N messages; still over: keep fewer recent
            messages, down to the protocol minimum. Failure keeps the cleared conversation.
  manual  — summarize, keeping the last `manual_keep_messages`; failure changes nothing.
  prompt_too_long — keep the largest clean suffix that fits next to a summary; older → summary.

Baselines (`agents.compaction.baselines`: truncate, mask, window, summarize, amortized,
clear-tool-uses, hybrid) register here too. `make_strategy(spec)` builds one from a spec:

  spec   := target [":" params]
  target := a registered name (STRATEGIES)
          | the name of a `workingset.strategies` entry point (value "pkg.module:Factory";
            a built-in name wins over an entry point of the same name)
          | an import path "pkg.module:Factory" (then params follow a second ":")
  params := key=value ("," key=value)*     e.g. "mask:keep=8", "window:first=1,last=30",
            "clear-tool-uses:keep=2,exclude_tools=Read|Grep", "pkg.mod:Factory:keep=3"

A factory is any callable returning a strategy (an object with a `name` and an async
`compact(request, env)`); its keyword parameters are the spec's parameters, converted
by their annotations: int, float, str, bool (true/false/yes/no/on/off/1/0), `X | None`
("none" or empty → None), and tuple/list of X (items separated by "|"). An unknown
name, an unknown key or a bad value is a ConfigError that lists what is valid.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import inspect
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from agents.compaction.boundaries import split_keeping_recent, split_largest_fitting_suffix
from agents.compaction.clearing import clear_old_tool_results
from agents.compaction.ledger import CompactionEvent, priced_event, unchanged_prefix_tokens
from agents.compaction.summary import SummaryFailed, summarize_older, summarized_conversation
from agents.config import CompactSettings, SummarizerSettings
from agents.errors import ConfigError
from agents.messages import Message
from agents.ports import Summarizer
from agents.tokens import TokenCounter, estimate_messages_tokens
from tools.artifacts import ArtifactStore

__all__ = [
    "ClearThenSummarize",
    "CompactionEnv",
    "CompactionRequest",
    "CompactionResult",
    "CompactionStrategy",
    "NoCompaction",
    "STRATEGIES",
    "STRATEGY_ENTRY_POINT_GROUP",
    "installed_strategy_entry_points",
    "known_strategy_names",
    "make_strategy",
    "register_strategy",
    "strategy_parameters",
]

Trigger = Literal["auto", "manual", "prompt_too_long"]


@dataclass
class CompactionEnv:
    """What strategies may use: the counter, the summarizer port, the record of bodies."""

    counter: TokenCounter
    summarizer: Summarizer
    artifacts: ArtifactStore | None
    settings: CompactSettings
    summarizer_settings: SummarizerSettings
    model_name: str = ""


@dataclass(frozen=True)
class CompactionRequest:
    messages: Sequence[Message]
    overhead_tokens: int
    budget_tokens: int
    trigger: Trigger = "auto"
    focus: str | None = None
    total_tokens: int | None = None  # the caller's running estimate of overhead + messages, if known

    def current_tokens(self, env: CompactionEnv) -> int:
        if self.total_tokens is not None:
            return self.total_tokens
        return _total(env, self.overhead_tokens, self.messages)


@dataclass
class CompactionResult:
    messages: list[Message]
    events: list[CompactionEvent] = field(default_factory=list)
    failure: str | None = None

    @property
    def changed(self) -> bool:
        return any(e.applied for e in self.events)


class CompactionStrategy(Protocol):
    name: str

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult: ...


class NoCompaction:
    """`raw`: send the whole conversation; only the per-result budget applies."""

    name = "raw"

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        if request.trigger == "auto":
            return CompactionResult(list(request.messages))
        return CompactionResult(list(request.messages), failure=f"strategy '{self.name}' never compacts")


def _total(env: CompactionEnv, overhead: int, messages: Sequence[Message]) -> int:
    return overhead + estimate_messages_tokens(env.counter, messages)


class ClearThenSummarize:
    name = "clear-then-summarize"

    async def compact(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        if request.trigger == "manual":
            return await self._summarize_keeping(request, env, list(request.messages), env.settings.manual_keep_messages)
        if request.trigger == "prompt_too_long":
            return await self._summarize_to_fit(request, env)
        if request.current_tokens(env) <= request.budget_tokens:
            return CompactionResult(list(request.messages))
        cleared = self._clear(request, env)
        messages = cleared.messages
        if _total(env, request.overhead_tokens, messages) <= request.budget_tokens:
            return cleared
        summarized = await self._summarize_keeping(request, env, messages, env.settings.preserve_recent_messages)
        summarized.events[:0] = cleared.events
        return summarized

    # -- steps --------------------------------------------------------------------------

    def _clear(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        outcome = clear_old_tool_results(
            request.messages,
            keep_recent_messages=env.settings.preserve_recent_messages,
            keep_recent_tool_uses=env.settings.preserve_recent_tool_uses,
        )
        if not outcome.cleared:
            return CompactionResult(list(request.messages))
        before = _total(env, request.overhead_tokens, request.messages)
        after = _total(env, request.overhead_tokens, outcome.messages)
        if before - after < env.settings.min_gain_tokens:
            return CompactionResult(list(request.messages))
        if env.artifacts is not None:
            for item in outcome.cleared:
                env.artifacts.put(item.tool_use_id, item.original)
        event = self._event(
            request, env, "clear", request.messages, outcome.messages, results_cleared=len(outcome.cleared)
        )
        return CompactionResult(outcome.messages, [event])

    async def _summarize_keeping(
        self, request: CompactionRequest, env: CompactionEnv, messages: list[Message], keep: int
    ) -> CompactionResult:
        """Summarize older history keeping `keep` recent messages; if the result is still
        over budget, keep fewer (auto only), down to the smallest clean suffix."""
        calls = 0
        while True:
            split = split_keeping_recent(messages, keep)
            if split is None:
                return self._failed(request, env, messages, "nothing older than the kept messages to summarize", calls)
            try:
                summary = await summarize_older(
                    env.summarizer,
                    messages[:split],
                    window_tokens=env.summarizer_settings.window_tokens,
                    counter=env.counter,
                    focus=request.focus,
                )
            except SummaryFailed as exc:
                return self._failed(request, env, messages, str(exc), calls)
            calls += summary.calls
            result = summarized_conversation(summary.text, messages[split:], summarized_count=split)
            total = _total(env, request.overhead_tokens, result)
            if request.trigger == "manual" or total <= request.budget_tokens:
                event = self._event(
                    request, env, "summary", messages, result, messages_summarized=split, summarizer_calls=calls
                )
                return CompactionResult(result, [event])
            if len(messages) - split <= 1 or split == split_keeping_recent(messages, 1):  # no smaller clean suffix
                reason = f"still {total} tokens after summarizing, over the budget of {request.budget_tokens}"
                return self._failed(request, env, messages, reason, calls)
            keep = max((len(messages) - split) // 2, 1)

    async def _summarize_to_fit(self, request: CompactionRequest, env: CompactionEnv) -> CompactionResult:
        messages = list(request.messages)
        room = request.budget_tokens - request.overhead_tokens - env.settings.summary_reserve_tokens
        split = split_largest_fitting_suffix(messages, max(room, 0), env.counter)
        if split is None:
            return self._failed(request, env, messages, f"no recent part of the conversation fits in {room} tokens", 0)
        try:
            summary = await summarize_older(
                env.summarizer,
                messages[:split],
                window_tokens=env.summarizer_settings.window_tokens,
                counter=env.counter,
            )
        except SummaryFailed as exc:
            return self._failed(request, env, messages, str(exc), 0)
        result = summarized_conversation(summary.text, messages[split:], summarized_count=split)
        event = self._event(
            request, env, "prompt_too_long", messages, result, messages_summarized=split, summarizer_calls=summary.calls
        )
        return CompactionResult(result, [event])

    # -- ledger -------------------------------------------------------------------------

    def _event(self, request, env, kind, before, after, **counts) -> CompactionEvent:
        """`before` is what this step started from (after any earlier step); the cache
        was written for `request.messages`, so invalidation is measured against that."""
        return priced_event(
            tokens_before=_total(env, request.overhead_tokens, before),
            tokens_after=_total(env, request.overhead_tokens, after),
            unchanged_prefix=unchanged_prefix_tokens(request.messages, after, request.overhead_tokens, env.counter),
            cached_tokens=_total(env, request.overhead_tokens, request.messages),
            model_name=env.model_name,
            kind=kind,
            trigger=request.trigger,
            strategy=self.name,
            **counts,
        )

    def _failed(self, request, env, kept: list[Message], reason: str, calls: int) -> CompactionResult:
        """Auto keeps what it has (e.g. the cleared conversation); manual and
        prompt-too-long keep the original history unchanged."""
        keep = kept if request.trigger == "auto" else list(request.messages)
        tokens = _total(env, request.overhead_tokens, keep)
        event = CompactionEvent(
            kind="prompt_too_long" if request.trigger == "prompt_too_long" else "summary",
            trigger=request.trigger,
            strategy=self.name,
            tokens_before=tokens,
            tokens_after=tokens,
            summarizer_calls=calls,
            failed=reason,
            applied=False,
        )
        return CompactionResult(keep, [event], failure=reason)


STRATEGIES: dict[str, Callable[..., CompactionStrategy]] = {
    ClearThenSummarize.name: ClearThenSummarize,
    NoCompaction.name: NoCompaction,
}
STRATEGY_ENTRY_POINT_GROUP = "workingset.strategies"


def register_strategy(name: str, factory: Callable[..., CompactionStrategy]) -> None:
    if name in STRATEGIES:
        raise ValueError(f"a compaction strategy named {name!r} is already registered")
    STRATEGIES[name] = factory


@functools.cache
def installed_strategy_entry_points() -> tuple[importlib.metadata.EntryPoint, ...]:
    """The installed `workingset.strategies` entry points, scanned once per process."""
    return tuple(importlib.metadata.entry_points(group=STRATEGY_ENTRY_POINT_GROUP))


def known_strategy_names() -> list[str]:
    return sorted({*STRATEGIES, *(ep.name for ep in installed_strategy_entry_points())})


def make_strategy(name: str) -> CompactionStrategy:
    """Build the strategy a spec names (grammar in the module docstring)."""
    spec = name.strip()
    factory, label, params = _resolve(spec)
    kwargs = _parse_params(label, factory, params)
    try:
        strategy = factory(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"compaction strategy '{label}': {exc}; {_describe_params(factory)}") from exc
    if not isinstance(getattr(strategy, "name", None), str) or not callable(getattr(strategy, "compact", None)):
        raise ConfigError(f"'{label}' did not build a compaction strategy (one needs a `name` and an async `compact`)")
    return strategy


# -- specs: names, entry points, import paths, parameters ---------------------------------


def _resolve(spec: str) -> tuple[Callable[..., CompactionStrategy], str, str]:
    """(factory, label, params text) for a spec."""
    target, _, rest = spec.partition(":")
    if target in STRATEGIES:
        return STRATEGIES[target], target, rest
    entry = next((ep for ep in installed_strategy_entry_points() if ep.name == target), None)
    if entry is not None:
        try:
            return entry.load(), target, rest
        except Exception as exc:  # a broken plugin is a configuration problem, not a crash
            raise ConfigError(f"cannot load compaction strategy entry point '{target}' ({entry.value}): {exc}") from exc
    attr, _, params = rest.partition(":")
    if target and attr and all(part.isidentifier() for part in attr.split(".")):
        return _import_factory(target, attr), f"{target}:{attr}", params
    raise ConfigError(
        f"unknown compaction strategy '{spec}'; known: {', '.join(known_strategy_names())} "
        "(or an import path 'pkg.module:Factory')"
    )


def _import_factory(module_name: str, attr: str) -> Callable[..., CompactionStrategy]:
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import compaction strategy module '{module_name}': {exc}") from exc
    for part in attr.split("."):
        if not hasattr(found, part):
            raise ConfigError(f"module '{module_name}' has no compaction strategy factory '{attr}'")
        found = getattr(found, part)
    if not callable(found):
        raise ConfigError(f"'{module_name}:{attr}' is not callable (expected a strategy class or factory)")
    return found


def strategy_parameters(factory: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    """The keyword parameters a factory takes, annotations evaluated where possible."""
    try:
        signature = inspect.signature(factory, eval_str=True)
    except (NameError, TypeError, SyntaxError):
        try:
            signature = inspect.signature(factory)
        except (TypeError, ValueError):
            return {}
    except ValueError:
        return {}
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {n: p for n, p in signature.parameters.items() if p.kind in kinds}


def _type_name(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return "str"
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _describe_params(factory: Callable[..., Any]) -> str:
    params = strategy_parameters(factory)
    if not params:
        return "it takes no parameters"
    described = [
        f"{n}: {_type_name(p.annotation)}" + (" (required)" if p.default is p.empty else f" = {p.default!r}")
        for n, p in params.items()
    ]
    return "valid parameters: " + ", ".join(described)


def _parse_params(label: str, factory: Callable[..., Any], text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    params = strategy_parameters(factory)
    kwargs: dict[str, Any] = {}
    for item in text.split(","):
        key, eq, value = (part.strip() for part in item.partition("="))
        if not eq or not key:
            raise ConfigError(f"compaction strategy '{label}': expected key=value, got '{item}'; {_describe_params(factory)}")
        if key not in params:
            raise ConfigError(f"compaction strategy '{label}' has no parameter '{key}'; {_describe_params(factory)}")
        if key in kwargs:
            raise ConfigError(f"compaction strategy '{label}': parameter '{key}' given twice")
        annotation = params[key].annotation
        try:
            kwargs[key] = _coerce(annotation, value)
        except ValueError as exc:
            raise ConfigError(
                f"compaction strategy '{label}': invalid value '{value}' for {key}: {_type_name(annotation)} "
                f"({exc}); {_describe_params(factory)}"
            ) from exc
    return kwargs


_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


def _coerce(annotation: Any, text: str) -> Any:
    """`text` as a value of `annotation`; ValueError when it is not one."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation in (inspect.Parameter.empty, str, Any) or isinstance(annotation, str):
        return text
    if origin in (types.UnionType, typing.Union):
        if type(None) in args and text.lower() in ("", "none", "null"):
            return None
        for option in (a for a in args if a is not type(None)):
            try:
                return _coerce(option, text)
            except ValueError:
                continue
        raise ValueError(f"not a {_type_name(annotation)}")
    if annotation is bool:
        if text.lower() not in _TRUE | _FALSE:
            raise ValueError("expected true or false")
        return text.lower() in _TRUE
    if annotation in (int, float):
        return annotation(text)
    if origin in (tuple, list, set, frozenset):
        item = args[0] if args else str
        return origin(_coerce(item, part.strip()) for part in text.split("|") if part.strip())
    raise ValueError(f"parameters of type {_type_name(annotation)} cannot be given in a spec")


def _register_baselines() -> None:
    # Imported here, not at the top: the baselines build on this module.
    from agents.compaction.baselines import BASELINES

    for baseline_name, factory in BASELINES.items():
        register_strategy(baseline_name, factory)


_register_baselines()
