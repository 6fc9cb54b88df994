"""One agenda from several calendar feeds, kept in UTC."""

from agenda.schedule import Event, event_from_feed, upcoming
from agenda.timestamps import format_utc, parse_timestamp

__all__ = ["Event", "event_from_feed", "format_utc", "parse_timestamp", "upcoming"]
