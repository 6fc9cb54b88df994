"""Which failures are lost infrastructure, as opposed to a task's, a tool's or a model's own.

A Ray call fails for one of two kinds of reason. The code it ran raised (RayTaskError:
the cause is that code's exception, the same wherever and however often it runs), or
the place it ran went away: the worker process was killed (SIGKILL, Ray's memory
monitor, the kernel's OOM killer: WorkerCrashedError, OutOfMemoryError), its node or
raylet died, its actor died or is restarting, an object it needed was lost with its
owner. Only the second kind says nothing about the work itself, so only it is retried
(where running the work again cannot repeat an effect) or reported as infrastructure.
A call the caller cancelled (TaskCancelledError) is neither.
"""

from __future__ import annotations

from ray.exceptions import RayError, RayTaskError, TaskCancelledError

from cluster.connection import ClusterError

__all__ = ["is_lost_infrastructure", "what_was_lost"]


def is_lost_infrastructure(exc: BaseException) -> bool:
    """True when `exc` says a worker, actor, raylet or node went away under the call."""
    if isinstance(exc, ClusterError):
        return True
    if isinstance(exc, RayTaskError):
        # The code raised; it counts as lost infrastructure only when what it raised is
        # itself a loss (an actor it called died under it).
        cause = exc.cause
        return cause is not exc and isinstance(cause, RayError) and is_lost_infrastructure(cause)
    if isinstance(exc, TaskCancelledError):
        return False
    return isinstance(exc, RayError)


def what_was_lost(exc: BaseException) -> str:
    """`WorkerCrashedError: the worker died unexpectedly …`: the error's type and first line."""
    lines = str(exc).strip().splitlines()
    first = next((line.strip() for line in lines if line.strip()), "")
    return f"{type(exc).__name__}: {first}".rstrip(": ")
