import unittest
from datetime import UTC, datetime, timedelta

from agenda.schedule import event_from_feed, upcoming

FEED = [
    {"title": "Standup (Berlin)", "start": "2024-03-11T09:30:00+01:00", "end": "2024-03-11T09:45:00+01:00"},
    {"title": "Design review (New York)", "start": "2024-03-11T03:15:00-05:00", "end": "2024-03-11T04:00:00-05:00"},
    {"title": "Deploy window", "start": "2024-03-11T07:30:00Z", "end": "2024-03-11T08:00:00Z"},
]


class ScheduleTest(unittest.TestCase):
    def test_events_from_different_zones_are_ordered_by_real_time(self):
        events = [event_from_feed(item) for item in FEED]
        now = datetime(2024, 3, 11, 7, 0, tzinfo=UTC)
        self.assertEqual(
            [e.title for e in upcoming(events, now)],
            ["Deploy window", "Design review (New York)", "Standup (Berlin)"],
        )

    def test_a_finished_event_is_not_upcoming(self):
        events = [event_from_feed(item) for item in FEED]
        now = datetime(2024, 3, 11, 8, 10, tzinfo=UTC)
        self.assertEqual(
            [e.title for e in upcoming(events, now)], ["Design review (New York)", "Standup (Berlin)"]
        )

    def test_duration(self):
        event = event_from_feed(FEED[1])
        self.assertEqual(event.duration, timedelta(minutes=45))

    def test_end_before_start_is_refused(self):
        with self.assertRaises(ValueError):
            event_from_feed({"title": "x", "start": "2024-03-11T10:00:00Z", "end": "2024-03-11T09:00:00Z"})


if __name__ == "__main__":
    unittest.main()
