import unittest

from memo.decorators import memoize


class MemoizeTest(unittest.TestCase):
    def test_results_are_reused(self):
        calls = []

        @memoize(ttl=60)
        def slow_double(n):
            calls.append(n)
            return 2 * n

        self.assertEqual(slow_double(21), 42)
        self.assertEqual(slow_double(21), 42)
        self.assertEqual(calls, [21])

    def test_two_functions_keep_their_own_results(self):
        @memoize()
        def square(n):
            return n * n

        @memoize()
        def cube(n):
            return n**3

        self.assertEqual(square(3), 9)
        self.assertEqual(cube(3), 27)


if __name__ == "__main__":
    unittest.main()
