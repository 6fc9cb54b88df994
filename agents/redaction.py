"""Credentials out of error text, before the text is stored, logged, shown or sent.

A provider, or a proxy in front of one, sometimes echoes the key a request carried in
its error body ("invalid x-api-key: sk-ant-…"); that body becomes an error message,
and an error message ends up on the terminal, in an event, in a snapshot, in a
subagent's result the parent model reads. So every `WorkingsetError` passes its text
through `redact` when it is made (agents.errors), and `scrub` cleans the foreign
exception it is raised from (and that one's causes), whose text a traceback would
print. What counts as a credential:

- the value of every environment variable whose name looks like one (the sandbox's
  rule, tools.sandbox.config.looks_like_credential: ANTHROPIC_API_KEY, OPENAI_API_KEY,
  ANTHROPIC_AUTH_TOKEN, RAY_AUTH_TOKEN, ...), shown as `[redacted NAME]`;
- every key given to a model client in code (`remember`), shown as `[redacted key]`;
- text shaped like a key whatever its origin: `sk-ant-…`, `sk-…`, `Bearer …`, the
  value after `api key:` / `x-api-key=` / `authorization:`, and the password of a URL
  (`https://user:pass@host`).

A value shorter than 8 characters, a number or an absolute path (SSH_AUTH_SOCK,
XAUTHORITY) is no secret, and Workingset's own settings (WORKINGSET_*_TOKENS) hold none:
redacting them would garble messages and protect nothing.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from typing import Any

from tools.sandbox import looks_like_credential

__all__ = ["redact", "remember", "scrub"]

_MIN_SECRET = 8
_REMEMBERED: set[str] = set()

_SHAPES = re.compile(
    r"\bsk-[A-Za-z0-9_\-]{12,}"  # sk-ant-api03-…, sk-proj-…, sk-…
    # after a label, a value with a digit in it: "api key: incorrect" is prose, not a key
    r"|(?P<bearer>\bBearer\s+)(?=[^\s\"',;}]*\d)[A-Za-z0-9._~+/=\-]{8,}"
    r"|(?P<named>\b(?:x-api-key|api[ _-]?key|authorization)[\"']?\s*[:=]\s*[\"']?)(?!\[redacted)(?=[^\s\"',;}]*\d)"
    r"[^\s\"',;}]{8,}"
    r"|(?P<userinfo>://[^/\s:@]+:)[^/\s@]+(?=@)",
    re.IGNORECASE,
)


def _secret(value: str) -> bool:
    return len(value) >= _MIN_SECRET and not value.isdigit() and not value.startswith("/")


def remember(secret: str | None) -> None:
    """Treat `secret` (a key given in code, not through the environment) as a credential from now on."""
    if secret and _secret(secret):
        _REMEMBERED.add(secret)


def _known() -> list[tuple[str, str]]:
    """(value, label) of every credential the process knows, longest first (a key that
    contains another is replaced whole)."""
    found = {
        value: f"[redacted {name}]"
        for name, value in os.environ.items()
        if not name.startswith("WORKINGSET_") and looks_like_credential(name) and _secret(value)
    }
    for value in _REMEMBERED:
        found.setdefault(value, "[redacted key]")
    return sorted(found.items(), key=lambda item: -len(item[0]))


def _shape(match: re.Match[str]) -> str:
    prefix = match.group("bearer") or match.group("named") or match.group("userinfo") or ""
    return f"{prefix}[redacted]"


def redact(text: str) -> str:
    """`text` with every credential the process knows, and every key-shaped string, replaced."""
    for value, label in _known():
        if value in text:
            text = text.replace(value, label)
    return _SHAPES.sub(_shape, text)


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_redacted(v) for v in value)
    return value


def scrub(exc: BaseException | None = None) -> None:
    """Redact, in place, the text of `exc` (default: the exception being handled) and of
    its causes and contexts: their arguments and an SDK error's `message` and `body`."""
    seen: set[int] = set()
    pending = [exc if exc is not None else sys.exception()]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        for attribute in ("args", "message", "body"):
            value = getattr(current, attribute, None)
            if isinstance(value, str | dict | list | tuple) and (clean := _redacted(value)) != value:
                with contextlib.suppress(AttributeError, TypeError):  # read-only: its text comes from args
                    setattr(current, attribute, clean)
        pending += [current.__cause__, current.__context__]
