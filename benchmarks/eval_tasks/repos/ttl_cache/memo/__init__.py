"""A TTL cache and a memoizing decorator built on it."""

from memo.cache import TTLCache
from memo.decorators import memoize

__all__ = ["TTLCache", "memoize"]
