import unittest
from decimal import Decimal

from till.amounts import from_cents, to_cents


class ToCentsTest(unittest.TestCase):
    def test_whole_and_plain_amounts(self):
        self.assertEqual(to_cents(12), 1200)
        self.assertEqual(to_cents(19.99), 1999)

    def test_an_exact_half_cent_rounds_up(self):
        self.assertEqual(to_cents(0.125), 13)

    def test_a_half_cent_that_floats_store_just_below(self):
        # As a float, 0.145 * 100 is 14.499999999999998.
        self.assertEqual(to_cents(0.145), 15)

    def test_negative_halves_round_away_from_zero(self):
        self.assertEqual(to_cents(-1.005), -101)


class FromCentsTest(unittest.TestCase):
    def test_exact(self):
        self.assertEqual(from_cents(268), Decimal("2.68"))


if __name__ == "__main__":
    unittest.main()
