"""Whether a small compaction step pays for the cache it breaks, or a large one is cheaper.

A compaction rewrites the request from its first changed block on, so the next call
writes that part to the cache again (1.25× the input price) instead of reading it
(0.1×). After the step the request grows by about `growth` tokens a call until it
passes the budget again and the next compaction comes. A step is worth what the
cached prefix costs per call over that horizon:

    horizon  = max(1, (budget − after) / growth)          calls until the next step
    per call = (1.25 × rewritten + 0.1 × unchanged
                + Σ_{i=1}^{horizon−1} 0.1 × (after + i × growth)) / horizon

(the tokens each call adds are written once whatever the step, so they are left out).
A small step (only the superseded results cleared, the request left between the
target and the budget) rewrites little and frees little, so the next step comes
soon; a large step (a fold down to the target) rewrites more and frees more. The
cheaper per call wins — the ledger's freed-vs-invalidated accounting, looked ahead
one compaction. Pure arithmetic on token counts, in units of the input price.
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.compaction.ledger import CACHE_READ_MULTIPLIER, CACHE_WRITE_MULTIPLIER

__all__ = ["Step", "per_call_cost", "small_step_pays"]


@dataclass(frozen=True)
class Step:
    """One candidate compaction: the request's tokens after it and how many of them
    it rewrites (from its first changed block to the end)."""

    after: int
    rewritten: int


def per_call_cost(step: Step, budget: int, growth: float) -> float:
    """The cached prefix's cost per call from this step until the next one."""
    growth = max(growth, 1.0)
    horizon = max(1, int((budget - step.after) / growth))
    unchanged = max(step.after - step.rewritten, 0)
    first = CACHE_WRITE_MULTIPLIER * step.rewritten + CACHE_READ_MULTIPLIER * unchanged
    later = CACHE_READ_MULTIPLIER * sum(step.after + i * growth for i in range(1, horizon))
    return (first + later) / horizon


def small_step_pays(small: Step, large: Step, budget: int, growth: float) -> bool:
    """True when stopping at `small` (already under `budget`) costs no more per call
    than going on to `large`."""
    if small.after > budget:
        return False
    return per_call_cost(small, budget, growth) <= per_call_cost(large, budget, growth)
