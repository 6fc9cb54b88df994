"""After the provider refused a request as too long: may the recompiled one be sent?

The design: recompile once (largest protocol-complete recent suffix inside a budget
aimed under what the provider accepts, older history summarized) and retry; a second
refusal is an error. Before the retry the recompiled request is checked, and it is
sent only when

  - the recompile succeeded (a failure is an error naming its cause, and nothing is
    sent again: the same request would be refused the same way);
  - it is strictly smaller than the refused request, by the same estimator;
  - it fits the refusal budget;
  - where the provider counts tokens exactly, its count is below the refused request's
    count and the provider's limit, when the refusal gave them.

`retry_problem` returns why not (None: send it). Pure, so every case is testable.
`check_retry` runs the check on a refused and a recompiled request and raises the
error; the loop applies the recompile and sends only after it passed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agents.errors import ModelError, PromptTooLong
from agents.ports import TokenCountingClient

__all__ = ["RetryCheck", "check_retry", "exact_tokens", "retry_problem", "twice_refused"]


@dataclass(frozen=True)
class RetryCheck:
    refused_estimate: int  # our estimate of the refused request
    budget: int  # the refusal budget the recompile aimed at
    failure: str | None = None  # why the recompile failed, if it did
    retry_estimate: int | None = None  # our estimate of the recompiled request (same estimator)
    retry_counted: int | None = None  # the provider's exact count of it, when it counts
    refused_actual: int | None = None  # the provider's count of the refused request (from its error)
    limit: int | None = None  # the provider's limit (from its error)


def retry_problem(check: RetryCheck) -> str | None:
    if check.failure is not None:
        return f"the recompile failed: {check.failure}"
    retry = check.retry_estimate
    if retry is None:
        return "the recompile produced no request"
    if retry >= check.refused_estimate:
        return (
            f"the recompiled request ({retry} tokens estimated) is not smaller than the refused one "
            f"({check.refused_estimate})"
        )
    if retry > check.budget:
        return f"the recompiled request ({retry} tokens estimated) is still over the refusal budget of {check.budget}"
    counted = check.retry_counted
    if counted is not None:
        if check.limit is not None and counted >= check.limit:
            return (
                f"the provider counts the recompiled request at {counted} tokens, not under its limit of {check.limit}"
            )
        if check.refused_actual is not None and counted >= check.refused_actual:
            return (
                f"the provider counts the recompiled request at {counted} tokens, not fewer than the "
                f"{check.refused_actual} it refused"
            )
    return None


async def exact_tokens(model: Any, request: Any) -> int | None:
    """The provider's own count of a request, when the client offers one
    (`TokenCountingClient`) and has it switched on; a failed count is no count."""
    if not isinstance(model, TokenCountingClient):
        return None
    try:
        return await model.count_tokens(request)
    except ModelError:
        return None


async def check_retry(
    check: RetryCheck, refusal: PromptTooLong, *, count: Callable[[], Awaitable[int | None]] | None
) -> None:
    """Raise the error the design asks for unless the recompiled request may be sent.
    The provider is asked to count only when the estimate already passed."""
    if retry_problem(check) is None and count is not None:
        check = dataclasses.replace(check, retry_counted=await count())
    problem = retry_problem(check)
    if problem is not None:
        raise PromptTooLong(
            f"the request was refused as too long ({refusal}); {problem}; the request was not sent "
            "again and the conversation is unchanged — lower compact.ratio, set compact.context_window to "
            "the model's real window, or /compact",
            actual_tokens=refusal.actual_tokens,
            limit_tokens=refusal.limit_tokens,
        ) from refusal


def twice_refused(again: PromptTooLong, *, estimate: int, budget: int) -> PromptTooLong:
    return PromptTooLong(
        f"the provider refused the request twice as too long (estimate {estimate} tokens, compact budget "
        f"{budget}); nothing further was removed — lower compact.ratio or set compact.context_window to the "
        "model's real window",
        actual_tokens=again.actual_tokens,
        limit_tokens=again.limit_tokens,
    )
