"""The one registry of compaction strategies by name.

Seeded from the explicit table of built-ins (`agents.compaction.strategies`);
`register_strategy` adds more at run time. Installed plugins (the
`workingset.strategies` entry points) and import paths are resolved by
`agents.compaction.specs`, not stored here.
"""

from __future__ import annotations

from collections.abc import Callable

from agents.compaction.protocol import CompactionStrategy
from agents.compaction.strategies import BUILTIN_STRATEGIES

__all__ = ["STRATEGIES", "register_strategy"]

STRATEGIES: dict[str, Callable[..., CompactionStrategy]] = dict(BUILTIN_STRATEGIES)


def register_strategy(name: str, factory: Callable[..., CompactionStrategy]) -> None:
    if name in STRATEGIES:
        raise ValueError(f"a compaction strategy named {name!r} is already registered")
    STRATEGIES[name] = factory
