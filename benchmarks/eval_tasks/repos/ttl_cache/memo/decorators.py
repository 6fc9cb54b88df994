"""`@memoize(ttl=...)`: remember a function's results per positional arguments."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

from memo.cache import TTLCache

F = TypeVar("F", bound=Callable[..., Any])


def memoize(ttl: float = 60.0, clock: Callable[[], float] = time.monotonic) -> Callable[[F], F]:
    """Cache the function's results for `ttl` seconds, keyed by its positional arguments.
    Each decorated function gets its own cache, reachable as `func.cache`."""

    def decorate(func: F) -> F:
        cache = TTLCache(ttl, clock)

        @functools.wraps(func)
        def wrapper(*args: Any) -> Any:
            try:
                return cache[args]
            except KeyError:
                pass
            value = func(*args)
            cache[args] = value
            return value

        wrapper.cache = cache  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
