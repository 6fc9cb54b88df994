"""Model providers behind the ModelClient port, chosen by a spec string.

    anthropic:<model>   the Anthropic Messages API (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL)
    scripted:<file>     a deterministic offline model from a JSON or YAML script
"""

from __future__ import annotations

from pathlib import Path

from agents.errors import ConfigError
from agents.ports import ModelClient

__all__ = ["KNOWN_PREFIXES", "load_model_client"]

KNOWN_PREFIXES = ("anthropic", "scripted")


def load_model_client(spec: str, *, role: str = "root", base_dir: Path | None = None) -> ModelClient:
    """Build the client a spec names; every mistake is a ConfigError saying the fix."""
    prefix, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ConfigError(f"model spec '{spec}' is not of the form PROVIDER:NAME; use one of: anthropic:<model>, scripted:<file>")
    if prefix == "anthropic":
        from agents.providers.anthropic import AnthropicModelClient

        return AnthropicModelClient(model=rest)
    if prefix == "scripted":
        from agents.providers.scripted import ScriptedModelClient

        path = Path(rest).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        return ScriptedModelClient.from_file(path, role=role)
    raise ConfigError(f"unknown model provider '{prefix}' in '{spec}'; known providers: {', '.join(KNOWN_PREFIXES)}")
