"""Strategy specs: the grammar, plugin loading and parameter conversion.

`make_strategy(spec)` builds a strategy from a spec:

  spec   := target [":" params]
  target := a registered name (STRATEGIES)
          | the name of a `workingset.strategies` entry point (value "pkg.module:Factory";
            a built-in name wins over an entry point of the same name)
          | an import path "pkg.module:Factory" (then params follow a second ":")
  params := key=value ("," key=value)*     e.g. "mask:keep=8", "window:first=1,last=30",
            "clear-tool-uses:keep=2,exclude_tools=Read|Grep", "pkg.mod:Factory:keep=3"

A factory is any callable returning a strategy (an object with a `name` and an async
`compact(request, env)`); its keyword parameters are the spec's parameters, converted
by their annotations: int, float, str, bool (true/false/yes/no/on/off/1/0), a Literal
of strings (one of them, e.g. unit=events), `X | None` ("none" or empty → None), and
tuple/list of X (items separated by "|"). An unknown
name, an unknown key or a bad value is a ConfigError that lists what is valid.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any

from agents.compaction.protocol import CompactionStrategy
from agents.compaction.registry import STRATEGIES
from agents.errors import ConfigError

__all__ = [
    "STRATEGY_ENTRY_POINT_GROUP",
    "installed_strategy_entry_points",
    "known_strategy_names",
    "make_strategy",
    "strategy_parameters",
]

STRATEGY_ENTRY_POINT_GROUP = "workingset.strategies"


@functools.cache
def installed_strategy_entry_points() -> tuple[importlib.metadata.EntryPoint, ...]:
    """The installed `workingset.strategies` entry points, scanned once per process."""
    return tuple(importlib.metadata.entry_points(group=STRATEGY_ENTRY_POINT_GROUP))


def known_strategy_names() -> list[str]:
    return sorted({*STRATEGIES, *(ep.name for ep in installed_strategy_entry_points())})


def make_strategy(spec: str) -> CompactionStrategy:
    """Build the strategy a spec names (grammar in the module docstring)."""
    spec = spec.strip()
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
            raise ConfigError(
                f"compaction strategy '{label}': expected key=value, got '{item}'; {_describe_params(factory)}"
            )
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
    if origin is typing.Literal:
        if text not in args:
            raise ValueError("expected one of " + ", ".join(map(str, args)))
        return text
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
