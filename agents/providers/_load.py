"""Model providers behind the ModelClient port, chosen by a spec string.

    anthropic:<model>   the Anthropic Messages API (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL)
    openai:<model>      OpenAI Chat Completions, or any OpenAI-compatible server
                        (OPENAI_API_KEY, OPENAI_BASE_URL): vLLM, SGLang, llama.cpp, Ollama
    scripted:<file>     a deterministic offline model from a JSON or YAML script
    <plugin>:<name>     a `workingset.providers` entry point (see agents.providers.base)

A built-in name wins over an entry point of the same name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from agents.errors import ConfigError
from agents.ports import ModelClient
from agents.providers._names import (
    BUILTIN_PROVIDERS,
    PROVIDER_ENTRY_POINT_GROUP,
    installed_providers,
    provider_entry_points,
)
from agents.providers.base import ProviderContext, ProviderFactory
from agents.settings import ProviderSettings

__all__ = [
    "BUILTIN_PROVIDERS",
    "PROVIDER_ENTRY_POINT_GROUP",
    "ProviderContext",
    "ProviderFactory",
    "installed_providers",
    "load_model_client",
]


def _usage() -> str:
    return "use PROVIDER:NAME with one of the installed providers: " + ", ".join(installed_providers())


def _factory(prefix: str, spec: str) -> Callable[[str, ProviderContext], ModelClient]:
    target = BUILTIN_PROVIDERS.get(prefix)
    if target is not None:
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)
    entry = next((ep for ep in provider_entry_points() if ep.name == prefix), None)
    if entry is None:
        raise ConfigError(f"unknown model provider '{prefix}' in '{spec}'; {_usage()}")
    try:
        loaded = entry.load()
    except Exception as exc:  # a broken plugin is a configuration problem, not a crash
        raise ConfigError(
            f"cannot load model provider '{prefix}' ({entry.value}): {type(exc).__name__}: {exc}"
        ) from exc
    if not callable(loaded):
        raise ConfigError(
            f"model provider '{prefix}' ({entry.value}) is not callable; it must be a factory(name, context)"
        )
    return loaded


def load_model_client(
    spec: str,
    *,
    role: str = "root",
    base_dir: Path | None = None,
    settings: ProviderSettings | None = None,
) -> ModelClient:
    """Build the client a spec names; every mistake is a ConfigError saying the fix."""
    prefix, sep, rest = spec.partition(":")
    if not sep or not prefix or not rest:
        raise ConfigError(f"model spec '{spec}' is not of the form PROVIDER:NAME; {_usage()}")
    factory = _factory(prefix, spec)
    context = ProviderContext(settings=settings or ProviderSettings(), role=role, base_dir=base_dir)
    client = factory(rest, context)
    if not isinstance(getattr(client, "name", None), str) or not callable(getattr(client, "create", None)):
        raise ConfigError(
            f"model provider '{prefix}' did not return a model client (it needs a `name` and an async `create`)"
        )
    return client
