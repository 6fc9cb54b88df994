import unittest
from datetime import UTC, datetime, timedelta, timezone

from agenda.timestamps import format_utc, parse_timestamp


class ParseTimestampTest(unittest.TestCase):
    def test_zulu(self):
        self.assertEqual(parse_timestamp("2024-03-10T13:30:00Z"), datetime(2024, 3, 10, 13, 30, tzinfo=UTC))

    def test_a_positive_offset_is_converted_to_utc(self):
        self.assertEqual(
            parse_timestamp("2024-03-10T15:30:00+02:00"), datetime(2024, 3, 10, 13, 30, tzinfo=UTC)
        )

    def test_a_negative_offset_can_change_the_date(self):
        self.assertEqual(
            parse_timestamp("2024-03-10T21:15:00-05:00"), datetime(2024, 3, 11, 2, 15, tzinfo=UTC)
        )

    def test_no_offset_means_utc(self):
        self.assertEqual(parse_timestamp("2024-03-10T13:30:00"), datetime(2024, 3, 10, 13, 30, tzinfo=UTC))

    def test_the_result_is_in_utc(self):
        self.assertEqual(parse_timestamp("2024-03-10T15:30:00+02:00").utcoffset(), timedelta(0))


class FormatUtcTest(unittest.TestCase):
    def test_formats_any_zone_as_utc(self):
        berlin = timezone(timedelta(hours=1))
        self.assertEqual(format_utc(datetime(2024, 1, 5, 9, 0, tzinfo=berlin)), "2024-01-05T08:00:00Z")

    def test_refuses_naive(self):
        with self.assertRaises(ValueError):
            format_utc(datetime(2024, 1, 5, 9, 0))


if __name__ == "__main__":
    unittest.main()
