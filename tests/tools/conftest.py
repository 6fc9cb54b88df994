"""Fixtures of the tools' tests."""

from __future__ import annotations

import pytest

from tools.files import _beneath as beneath


@pytest.fixture(params=["openat2", "walk"])
def beneath_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test twice: paths opened with openat2, then with the per-component
    O_NOFOLLOW walk that tools.files._beneath falls back to where openat2 is missing."""
    monkeypatch.setattr(beneath, "_openat2_missing", request.param == "walk")
    return request.param
