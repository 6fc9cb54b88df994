import random
import unittest

from versions.compare import compare, sort_key
from versions.version import parse

# The ordering example from SemVer 2.0.0, section 11.
SPEC_ORDER = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
]


class CompareTest(unittest.TestCase):
    def test_core_versions_compare_numerically(self):
        self.assertEqual(compare(parse("1.10.0"), parse("1.9.3")), 1)
        self.assertEqual(compare(parse("0.9.9"), parse("1.0.0")), -1)

    def test_build_metadata_is_ignored(self):
        self.assertEqual(compare(parse("1.0.0+build.1"), parse("1.0.0+build.2")), 0)

    def test_a_prerelease_ranks_below_its_release(self):
        self.assertEqual(compare(parse("1.0.0-alpha"), parse("1.0.0")), -1)
        self.assertEqual(compare(parse("1.0.0"), parse("1.0.0-rc.1")), 1)

    def test_the_spec_example_order(self):
        shuffled = SPEC_ORDER[:]
        random.Random(7).shuffle(shuffled)
        ordered = sorted((parse(v) for v in shuffled), key=sort_key)
        self.assertEqual([str(v) for v in ordered], SPEC_ORDER)


if __name__ == "__main__":
    unittest.main()
