"""Fixtures of the Bash sandbox's tests: host directories outside /tmp (the sandbox's
/tmp is private, so what it sees there is no proof of what the view hides)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def outside_tmp() -> Iterator[Any]:
    """A host directory outside /tmp, reachable by every uid (the sandbox's included)."""
    import shutil
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp(prefix="workingset-sandbox-test-", dir="/var/tmp"))
    path.chmod(0o755)
    try:
        yield path.resolve()
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def host_home(outside_tmp, monkeypatch: pytest.MonkeyPatch):
    """$HOME outside /tmp, so that its absence in the sandbox is the view's doing."""
    home = outside_tmp / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home
