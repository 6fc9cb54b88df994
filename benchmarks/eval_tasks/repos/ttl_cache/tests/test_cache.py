import unittest

from memo.cache import TTLCache


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class TTLCacheTest(unittest.TestCase):
    def test_a_value_is_kept_until_it_expires(self):
        clock = FakeClock()
        cache = TTLCache(ttl=30, clock=clock)
        cache["rate:EUR"] = 1.08
        clock.now += 29
        self.assertEqual(cache["rate:EUR"], 1.08)
        clock.now += 1
        self.assertNotIn("rate:EUR", cache)
        with self.assertRaises(KeyError):
            cache["rate:EUR"]

    def test_two_caches_do_not_share_entries(self):
        profiles = TTLCache(ttl=60)
        sessions = TTLCache(ttl=5)
        profiles["alice"] = {"name": "Alice"}
        self.assertNotIn("alice", sessions)
        self.assertEqual(len(sessions), 0)

    def test_clearing_one_cache_leaves_the_other(self):
        first, second = TTLCache(), TTLCache()
        first["k"] = 1
        second["k"] = 2
        first.clear()
        self.assertEqual(second.get("k"), 2)

    def test_counts_hits_and_misses_per_cache(self):
        cache = TTLCache()
        cache["a"] = 1
        cache.get("a")
        cache.get("b")
        self.assertEqual((cache.hits, cache.misses), (1, 1))

    def test_ttl_must_be_positive(self):
        with self.assertRaises(ValueError):
            TTLCache(ttl=0)


if __name__ == "__main__":
    unittest.main()
