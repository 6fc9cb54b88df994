"""Keys that match no setting, in a TOML file or among the `WORKINGSET_*` variables,
named together with the nearest key that does exist.

The settings model is walked by its fields, so a section added later is covered with no
list to keep: a field holding a model is a section (`[agent]`,
`WORKINGSET_AGENT__MAX_TURNS`), a list of models an array of tables (`[[hooks]]`, set
whole as JSON in the environment), a dict of models a table of tables
(`[models.NAME]`).

A few `WORKINGSET_` variables are not settings by design and are never refused
(NON_SETTING_VARIABLES says who reads or sets each).
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

__all__ = ["NON_SETTING_VARIABLES", "UnknownKey", "file_keys_problem", "unknown_keys", "unknown_variables"]

NON_SETTING_VARIABLES: dict[str, str] = {
    "WORKINGSET_TRACES": "the corpus of real trajectories the benchmarks and tests read (benchmarks/traces/corpus.py)",
    "WORKINGSET_PLUGIN_ROOT": "set for a plugin's hooks: the plugin's directory (agents/sources/_plugins.py)",
    "WORKINGSET_HOOK_EVENT": "set for a command hook: the event it runs for (agents/sources/_hooks.py)",
    "WORKINGSET_PROJECT_DIR": "set for a command hook: the workspace (agents/sources/_hooks.py)",
    "WORKINGSET_BATCH": "set by an eval batch on every process it starts, to find them if it dies (cluster/eval/leftovers.py)",
}

Shape = tuple[Literal["section", "array", "map"], type[BaseModel]]


def _is_model(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)


def _shape(annotation: Any) -> Shape | None:
    """How a field holds models, or None for a plain value."""
    choices = get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else (annotation,)
    for choice in choices:
        args = get_args(choice)
        if _is_model(choice):
            return "section", choice
        if get_origin(choice) in (list, tuple) and args and _is_model(args[0]):
            return "array", args[0]
        if get_origin(choice) is dict and len(args) == 2 and _is_model(args[1]):
            return "map", args[1]
    return None


def keys_of(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every key a file may set at this level: each field, and each key of its sections."""
    keys = []
    for name, field in model.model_fields.items():
        keys.append(prefix + name)
        shape = _shape(field.annotation)
        if shape is not None and shape[0] == "section":
            keys.extend(keys_of(shape[1], f"{prefix}{name}."))
    return keys


def _nearest(wrong: str, candidates: list[str]) -> str | None:
    found = difflib.get_close_matches(wrong, candidates, n=1, cutoff=0.6)
    return found[0] if found else None


@dataclass(frozen=True)
class UnknownKey:
    """A key that matches no setting where it stands."""

    key: str  # dotted, as written: "agent.max_turn"
    nearest: str | None  # the nearest valid key, dotted
    valid: tuple[str, ...]  # the keys valid at its level, for when none is near


def unknown_keys(model: type[BaseModel], data: Mapping[str, Any], prefix: str = "") -> list[UnknownKey]:
    """The keys of `data` (a TOML document or part of one) that `model` does not define."""
    found: list[UnknownKey] = []
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None:
            here = [k.removeprefix(prefix) for k in keys_of(model, prefix)]
            nearest = _nearest(key, here)
            found.append(UnknownKey(prefix + key, nearest and prefix + nearest, tuple(model.model_fields)))
            continue
        shape = _shape(field.annotation)
        if shape is None:
            continue
        kind, inner = shape
        if kind == "section" and isinstance(value, dict):
            found.extend(unknown_keys(inner, value, f"{prefix}{key}."))
        elif kind == "array" and isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    found.extend(unknown_keys(inner, item, f"{prefix}{key}[{i}]."))
        elif kind == "map" and isinstance(value, dict):
            for name, item in value.items():
                if isinstance(item, dict):
                    found.extend(unknown_keys(inner, item, f"{prefix}{key}.{name}."))
    return found


def _shown(path: Path) -> str:
    try:
        return f"~/{path.relative_to(Path.home())}"
    except ValueError:
        return str(path)


def _describe_key(unknown: UnknownKey, where: str) -> str:
    said = f"setting '{unknown.key}' in {where} is unknown"
    if unknown.nearest is not None:
        return f"{said}; did you mean '{unknown.nearest}'?"
    section = unknown.key.rpartition(".")[0]
    return f"{said}; the settings {f'in {section} ' if section else ''}are: {', '.join(unknown.valid)}"


def file_keys_problem(model: type[BaseModel], data: Mapping[str, Any], path: Path) -> str | None:
    """One line naming each key of the file that is no setting, or None."""
    found = unknown_keys(model, data)
    return "; ".join(_describe_key(u, _shown(path)) for u in found) or None


def _is_setting(model: type[BaseModel], parts: list[str]) -> bool:
    field = model.model_fields.get(parts[0])
    if field is None:
        return False
    rest = parts[1:]
    if not rest:
        return True
    shape = _shape(field.annotation)
    if shape is None:  # a plain dict takes one more level of keys; a scalar none
        return get_origin(field.annotation) is dict and len(rest) == 1 and bool(rest[0])
    kind, inner = shape
    if kind == "section":
        return _is_setting(inner, rest)
    if kind == "map":  # NAME, then a key of the model
        return bool(rest[0]) and (len(rest) == 1 or _is_setting(inner, rest[1:]))
    return False  # an array is set whole, as JSON


def _variables_of(model: type[BaseModel], delimiter: str, prefix: str = "") -> list[str]:
    names = []
    for name, field in model.model_fields.items():
        names.append(prefix + name.upper())
        shape = _shape(field.annotation)
        if shape is not None and shape[0] == "section":
            names.extend(_variables_of(shape[1], delimiter, f"{prefix}{name.upper()}{delimiter}"))
    return names


def unknown_variables(
    model: type[BaseModel], environ: Mapping[str, str], prefix: str, delimiter: str = "__"
) -> list[str]:
    """One line for each variable named like a setting (`prefix`...) that is none."""
    problems = []
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith(prefix) or upper in NON_SETTING_VARIABLES:
            continue
        rest = upper.removeprefix(prefix)
        if rest and _is_setting(model, rest.lower().split(delimiter)):
            continue
        others = [n.removeprefix(prefix) for n in NON_SETTING_VARIABLES]
        nearest = _nearest(rest, _variables_of(model, delimiter) + others)
        if nearest is not None:
            problems.append(f"{name} is not a setting; did you mean {prefix}{nearest}?")
        else:
            problems.append(
                f"{name} is not a setting: a setting's variable is {prefix}<KEY>, with {delimiter} between a "
                f"section and its key (e.g. {prefix}AGENT{delimiter}MAX_TURNS); unset it"
            )
    return problems
