"""The model providers' credentials, carried to the actors that call the models.

A worker on another node does not have the driver's environment: Ray starts it from
that node's raylet. The actors that call models (SessionActors, and the subagent actors
they start, which inherit it; the summarizer actors) get the provider variables this
process has through their runtime environment's `env_vars`, and nothing else: tool
tasks never ask for them (and the Bash sandbox clears its environment anyway). The
values are never printed, logged or written by the harness.
"""

from __future__ import annotations

import os

__all__ = ["PROVIDER_VARIABLES", "model_runtime_env"]

PROVIDER_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
)


def model_runtime_env() -> dict | None:
    """The runtime_env for an actor that calls models (None when there is nothing to carry)."""
    present = {name: os.environ[name] for name in PROVIDER_VARIABLES if os.environ.get(name)}
    return {"env_vars": present} if present else None
