"""Closing a session releases the model clients it was built with (agents.opening._assembly hands
them to Session.aclose), and never a client it was given: that one is its owner's."""

from __future__ import annotations

from agents.opening._assembly import build_session
from agents.providers.anthropic import AnthropicModelClient
from agents.settings._config import ProviderSettings, load_settings
from tests.support.fakes import local_session


def _anthropic_settings(tmp_path, messages_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", messages_server.url)
    return load_settings(
        tmp_path, {"model": "anthropic:claude-sonnet-4-5", "home": str(tmp_path / "home")}, home=tmp_path / "home"
    )


async def test_closing_a_session_closes_the_model_and_judge_clients_it_was_built_with(
    tmp_path, messages_server, monkeypatch
):
    session = build_session(_anthropic_settings(tmp_path, messages_server, monkeypatch), tmp_path)
    model, judge = session.ports.model, session.kit.judge
    assert not model._client.is_closed() and not judge._client.is_closed()
    await session.aclose()
    assert model._client.is_closed() and judge._client.is_closed()


async def test_closing_a_session_leaves_open_a_model_client_it_was_given(tmp_path, messages_server):
    client = AnthropicModelClient(
        "claude-sonnet-4-5", api_key="k", base_url=messages_server.url, settings=ProviderSettings()
    )
    try:
        session, _ = local_session(tmp_path, client)
        await session.aclose()
        assert not client._client.is_closed()
    finally:
        await client.aclose()
