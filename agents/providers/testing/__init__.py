"""Fake model APIs to test against, shipped with the package as httpx ships MockTransport:
real HTTP servers on 127.0.0.1 (starlette served by uvicorn in a background thread) that
speak the Anthropic Messages API (`FakeMessagesServer`) and OpenAI Chat Completions
(`FakeOpenAIServer`), so the real SDKs run end to end against a scripted queue of answers.

Each server checks what it receives as the real API does and answers a protocol mistake
with that API's real 400 (kept in `problems`); streamed answers can fail the ways real
streams do (`StreamFault`). The tests use them through fixtures (tests/conftest.py);
benchmarks.provider_overhead serves them from a child process. Run one by hand:

    python3 -m agents.providers.testing.openai_server --port 8011
    python3 -m agents.providers.testing.messages_server --port 8012

They need the `testing` extra (uvicorn, starlette): `pip install 'workingset[testing]'`.

Names resolve on first use (module `__getattr__`): importing this package imports neither
server, so `python -m` can run either module without importing it twice.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agents.providers.testing._server import (
        PRESENTED_KEY,
        PortTaken,
        RecordedRequest,
        StreamFault,
        presented_key,
    )
    from agents.providers.testing.messages_server import (
        FakeMessagesServer,
        ScriptedResponse,
        error_body,
        sign,
    )
    from agents.providers.testing.openai_server import (
        FakeOpenAIServer,
        Quirks,
        ScriptedCompletion,
        openai_error,
    )

__all__ = [
    "PRESENTED_KEY",
    "FakeMessagesServer",
    "FakeOpenAIServer",
    "PortTaken",
    "Quirks",
    "RecordedRequest",
    "ScriptedCompletion",
    "ScriptedResponse",
    "StreamFault",
    "error_body",
    "openai_error",
    "presented_key",
    "sign",
]

_HOMES = {
    "PRESENTED_KEY": "_server",
    "PortTaken": "_server",
    "RecordedRequest": "_server",
    "StreamFault": "_server",
    "presented_key": "_server",
    "FakeMessagesServer": "messages_server",
    "ScriptedResponse": "messages_server",
    "error_body": "messages_server",
    "sign": "messages_server",
    "FakeOpenAIServer": "openai_server",
    "Quirks": "openai_server",
    "ScriptedCompletion": "openai_server",
    "openai_error": "openai_server",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
