"""Timestamps as the calendar feeds send them, and as the agenda stores them (UTC)."""

from __future__ import annotations

from datetime import UTC, datetime

_FORMAT = "%Y-%m-%dT%H:%M:%S"


def parse_timestamp(text: str) -> datetime:
    """Parse an ISO 8601 timestamp such as '2024-03-10T15:30:00+02:00' or
    '2024-03-10T13:30:00Z' into an aware datetime in UTC. A timestamp without an
    offset is taken to be in UTC already."""
    value = datetime.strptime(text.strip()[:19], _FORMAT)
    return value.replace(tzinfo=UTC)


def format_utc(value: datetime) -> str:
    """'2024-03-10T13:30:00Z' for an aware datetime, whatever its zone."""
    if value.tzinfo is None:
        raise ValueError("format_utc needs an aware datetime")
    return value.astimezone(UTC).strftime(_FORMAT) + "Z"
