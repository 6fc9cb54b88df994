"""Precedence between versions, following SemVer 2.0.0 section 11."""

from __future__ import annotations

import functools

from versions.version import Version


def compare(a: Version, b: Version) -> int:
    """-1, 0 or 1 as `a` has lower, equal or higher precedence than `b`.
    Build metadata does not take part in precedence."""
    if a.core != b.core:
        return -1 if a.core < b.core else 1
    if a.prerelease == b.prerelease:
        return 0
    # Exactly one of the two is a pre-release here.
    if not a.prerelease:
        return -1
    if not b.prerelease:
        return 1
    return _compare_identifiers(a.prerelease, b.prerelease)


def _compare_identifiers(left: tuple[str, ...], right: tuple[str, ...]) -> int:
    """Dot-separated pre-release identifiers, left to right: numeric ones compare as
    numbers and rank below alphanumeric ones; a shorter list ranks below a longer one
    that it prefixes."""
    for x, y in zip(left, right, strict=False):
        if x == y:
            continue
        if x.isdigit() and y.isdigit():
            return -1 if int(x) < int(y) else 1
        if x.isdigit() != y.isdigit():
            return -1 if x.isdigit() else 1
        return -1 if x < y else 1
    return (len(left) > len(right)) - (len(left) < len(right))


sort_key = functools.cmp_to_key(compare)
