"""Shared fixtures: an isolated environment for every test, and a fake Messages API."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

try:
    from tests.fake_messages_server import FakeMessagesServer
except ImportError:  # tests/ is not a package; pytest put tests/ itself on sys.path
    from fake_messages_server import FakeMessagesServer


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No host secrets or config: drop ANTHROPIC_* and WORKINGSET_*, point HOME at a tmp dir,
    and run CLI sessions in-process unless a test asks for Ray."""
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "WORKINGSET_")):
            monkeypatch.delenv(name, raising=False)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    # The CLI runs sessions on Ray by default; tests of the Ray path ask for it explicitly.
    monkeypatch.setenv("WORKINGSET_RUNTIME", "local")


@pytest.fixture(scope="session")
def _messages_server_session() -> Iterator[FakeMessagesServer]:
    server = FakeMessagesServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def messages_server(_messages_server_session: FakeMessagesServer) -> Iterator[FakeMessagesServer]:
    """A running fake Messages API server with an empty queue and no recorded requests."""
    _messages_server_session.reset()
    yield _messages_server_session
    _messages_server_session.reset()
