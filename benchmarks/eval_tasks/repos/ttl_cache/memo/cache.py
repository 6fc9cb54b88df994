"""A small mapping whose entries expire a fixed number of seconds after they are set."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Any


class TTLCache:
    """Entries expire `ttl` seconds after they were set; an expired entry reads as a miss.

    `clock` returns seconds; tests pass a fake one to move time by hand.
    """

    _entries: dict[Hashable, tuple[float, Any]] = {}
    hits = 0
    misses = 0

    def __init__(self, ttl: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        if ttl <= 0:
            raise ValueError(f"ttl must be positive, got {ttl}")
        self.ttl = ttl
        self._clock = clock

    def __setitem__(self, key: Hashable, value: Any) -> None:
        self._entries[key] = (self._clock() + self.ttl, value)

    def __getitem__(self, key: Hashable) -> Any:
        entry = self._entries.get(key)
        if entry is None or entry[0] <= self._clock():
            self._entries.pop(key, None)
            self.misses += 1
            raise KeyError(key)
        self.hits += 1
        return entry[1]

    def __contains__(self, key: Hashable) -> bool:
        entry = self._entries.get(key)
        return entry is not None and entry[0] > self._clock()

    def __len__(self) -> int:
        now = self._clock()
        return sum(1 for expires, _ in self._entries.values() if expires > now)

    def get(self, key: Hashable, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def clear(self) -> None:
        self._entries.clear()
