"""Which provider prefixes a model spec may use: the built-ins and the installed entry points.

Apart from `agents.providers` (which builds the clients and needs the settings) so that
the model table (`agents.providers._catalog`, part of the settings) can ask whether a name is a
provider's without importing the settings back.
"""

from __future__ import annotations

import functools
import importlib.metadata

__all__ = ["BUILTIN_PROVIDERS", "PROVIDER_ENTRY_POINT_GROUP", "installed_providers", "provider_entry_points"]

PROVIDER_ENTRY_POINT_GROUP = "workingset.providers"

# Imported on first use: the SDKs are not loaded for a scripted run.
BUILTIN_PROVIDERS: dict[str, str] = {
    "anthropic": "agents.providers.anthropic:make_client",
    "openai": "agents.providers.openai:make_client",
    "scripted": "agents.providers.scripted:make_client",
}


@functools.cache
def provider_entry_points() -> tuple[importlib.metadata.EntryPoint, ...]:
    """The `workingset.providers` entry points, scanned once per process."""
    return tuple(importlib.metadata.entry_points(group=PROVIDER_ENTRY_POINT_GROUP))


def installed_providers() -> list[str]:
    """Every prefix a spec may use: the built-ins and the installed entry points."""
    return sorted({*BUILTIN_PROVIDERS, *(ep.name for ep in provider_entry_points())})
