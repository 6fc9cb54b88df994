"""Semantic Versioning 2.0.0: parse, compare, pick the latest."""

from versions.compare import compare, sort_key
from versions.releases import latest, sorted_versions
from versions.version import InvalidVersion, Version, parse

__all__ = ["InvalidVersion", "Version", "compare", "latest", "parse", "sort_key", "sorted_versions"]
