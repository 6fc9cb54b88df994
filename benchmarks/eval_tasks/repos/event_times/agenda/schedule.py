"""Events from the feeds, merged and ordered by start time."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from agenda.timestamps import parse_timestamp


@dataclass(frozen=True)
class Event:
    title: str
    start: datetime  # aware, UTC
    end: datetime  # aware, UTC

    @property
    def duration(self) -> timedelta:
        return self.end - self.start


def event_from_feed(item: Mapping[str, str]) -> Event:
    """An event from one feed item: {"title": ..., "start": ISO 8601, "end": ISO 8601}."""
    start, end = parse_timestamp(item["start"]), parse_timestamp(item["end"])
    if end <= start:
        raise ValueError(f"event {item['title']!r} ends before it starts")
    return Event(item["title"], start, end)


def upcoming(events: Iterable[Event], now: datetime, *, limit: int = 10) -> list[Event]:
    """Events not yet finished at `now`, soonest first."""
    return sorted((e for e in events if e.end > now), key=lambda e: e.start)[:limit]
