"""The exception tree of the agents package.

    WorkingsetError                 anything Workingset raises on purpose
    ├── ConfigError                 bad settings, spec, script or path a user gave
    ├── ModelError                  a model call failed
    │   ├── AuthError               bad or missing credentials (never retried)
    │   ├── PromptTooLong           the provider refused the input size
    │   ├── Overloaded              429/529/5xx, or a stalled stream, still failing after retries
    │   ├── ModelTimeout            no complete reply within the call's total timeout
    │   └── ModelResponseError      anything else the provider said no to
    └── LoopEnded                   carries why a run stopped early
        └── TurnLimitReached

Foreign exceptions (anthropic, openai, yaml, OS) are converted where they enter, with
`raise ... from exc`, so callers handle one tree.
"""

from __future__ import annotations

__all__ = [
    "AuthError",
    "ConfigError",
    "LoopEnded",
    "ModelError",
    "ModelResponseError",
    "ModelTimeout",
    "Overloaded",
    "PromptTooLong",
    "TurnLimitReached",
    "WorkingsetError",
]


class WorkingsetError(Exception):
    """Base of every error Workingset raises on purpose."""


class ConfigError(WorkingsetError):
    """A user-supplied setting is wrong. The message names the thing and the fix."""


class ModelError(WorkingsetError):
    """A model call failed."""


class AuthError(ModelError):
    """Credentials missing or refused. Never retried."""


class PromptTooLong(ModelError):
    """The provider refused the request as too long."""

    def __init__(self, message: str, *, actual_tokens: int | None = None, limit_tokens: int | None = None):
        super().__init__(message)
        self.actual_tokens = actual_tokens
        self.limit_tokens = limit_tokens


class Overloaded(ModelError):
    """Rate-limited, overloaded or failing server, still so after every retry."""

    def __init__(self, message: str, *, status_code: int | None = None, attempts: int = 0):
        super().__init__(message)
        self.status_code = status_code
        self.attempts = attempts


class ModelTimeout(ModelError):
    """The call, retries included, passed its total timeout."""


class ModelResponseError(ModelError):
    """Any other refusal or malformed answer from the provider."""


class LoopEnded(WorkingsetError):
    """Raised inside the loop to stop a run; carries the reason."""

    reason = "ended"


class TurnLimitReached(LoopEnded):
    reason = "turn_limit"
