import unittest

from versions.releases import latest
from versions.version import InvalidVersion, parse

TAGS = ["v1.4.2", "v1.10.0", "v2.0.0-rc.1", "v2.0.0", "nightly", "v2.1.0-beta.1"]


class ParseTest(unittest.TestCase):
    def test_parts(self):
        version = parse("v2.0.0-rc.1+sha.5114f85")
        self.assertEqual(version.core, (2, 0, 0))
        self.assertEqual(version.prerelease, ("rc", "1"))
        self.assertEqual(version.build, ("sha", "5114f85"))

    def test_rejects_leading_zeros(self):
        with self.assertRaises(InvalidVersion):
            parse("1.02.0")


class LatestTest(unittest.TestCase):
    def test_latest_release(self):
        self.assertEqual(latest(TAGS), "2.0.0")

    def test_latest_including_prereleases(self):
        self.assertEqual(latest(TAGS, include_prereleases=True), "2.1.0-beta.1")

    def test_a_final_release_beats_its_release_candidate(self):
        self.assertEqual(latest(["v3.0.0", "v3.0.0-rc.2"], include_prereleases=True), "3.0.0")

    def test_no_versions(self):
        self.assertIsNone(latest(["nightly", "stable"]))


if __name__ == "__main__":
    unittest.main()
