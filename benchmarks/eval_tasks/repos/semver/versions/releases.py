"""Pick releases out of a list of tags."""

from __future__ import annotations

from collections.abc import Iterable

from versions.compare import sort_key
from versions.version import InvalidVersion, Version, parse


def sorted_versions(tags: Iterable[str]) -> list[Version]:
    """The tags that are semantic versions, oldest first; other tags are skipped."""
    found = []
    for tag in tags:
        try:
            found.append(parse(tag))
        except InvalidVersion:
            continue
    return sorted(found, key=sort_key)


def latest(tags: Iterable[str], *, include_prereleases: bool = False) -> str | None:
    """The newest version among `tags`, as written without a leading 'v'; None if none."""
    candidates = [v for v in sorted_versions(tags) if include_prereleases or not v.prerelease]
    return str(candidates[-1]) if candidates else None
