"""Providers are pluggable: built-ins, `workingset.providers` entry points, clear errors."""

from __future__ import annotations

import sys
import textwrap

import pytest

from agents.errors import ConfigError
from agents.providers import load_model_client
from agents.providers._names import installed_providers, provider_entry_points
from agents.settings._config import ProviderSettings


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    """A real installed distribution (a dist-info with entry points) on sys.path."""
    (tmp_path / "echo_provider.py").write_text(
        textwrap.dedent("""
        from agents.messages import TextBlock
        from agents.ports import ModelResponse

        class EchoClient:
            def __init__(self, name, context):
                self.name = f"echo:{name}"
                self.context = context

            async def create(self, request):
                return ModelResponse(content=(TextBlock(text=request.messages[-1].text),))

        def make_client(name, context):
            return EchoClient(name, context)

        def not_a_client(name, context):
            return object()
    """)
    )
    info = tmp_path / "echo_provider-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-provider\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[workingset.providers]\necho = echo_provider:make_client\nbroken = echo_provider_missing:make\n"
        "hollow = echo_provider:not_a_client\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    provider_entry_points.cache_clear()
    yield tmp_path
    sys.modules.pop("echo_provider", None)
    provider_entry_points.cache_clear()


def test_the_built_in_providers_are_installed():
    assert {"anthropic", "openai", "scripted"} <= set(installed_providers())


def test_an_unknown_prefix_lists_the_installed_providers_in_one_line():
    with pytest.raises(ConfigError) as info:
        load_model_client("bogus:model")
    message = str(info.value)
    assert (
        "unknown model provider 'bogus'" in message and "anthropic, openai, scripted" in message and "\n" not in message
    )


def test_a_spec_without_a_prefix_says_the_form():
    with pytest.raises(ConfigError, match="PROVIDER:NAME"):
        load_model_client("gpt-4o")


async def test_an_entry_point_adds_a_provider_that_gets_the_settings(plugin_dir):
    assert "echo" in installed_providers()
    settings = ProviderSettings(idle_timeout_s=7)
    client = load_model_client("echo:any", role="judge", settings=settings)
    assert client.name == "echo:any" and client.context.role == "judge" and client.context.settings.idle_timeout_s == 7


def test_an_entry_point_that_does_not_load_is_a_config_error_naming_it(plugin_dir):
    with pytest.raises(ConfigError, match="cannot load model provider 'broken' \\(echo_provider_missing:make\\)"):
        load_model_client("broken:x")


def test_a_factory_that_returns_no_client_is_a_config_error(plugin_dir):
    with pytest.raises(ConfigError, match="'hollow' did not return a model client"):
        load_model_client("hollow:x")
