"""Token and cost budgets, per agent and per tree.

Each session charges its own budget after every model call; a subagent's budget
has its parent's as `parent`, so one charge counts against the child and every
ancestor up to the root (the tree). Exceeding any of them ends the run with
BudgetExceeded, carrying what was used and which limit stopped it.

A call whose price is unknown (a scripted model, an unpriced open model) adds no
dollars; if a cost limit applies to it, the run stops at once with BudgetExceeded
saying so, rather than running unmetered past a limit it cannot measure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agents.errors import LoopEnded
from agents.ports import Usage

__all__ = ["Budget", "BudgetExceeded"]


class BudgetExceeded(LoopEnded):
    reason = "budget"

    def __init__(self, message: str, *, scope: str, tokens: int, cost_usd: float):
        super().__init__(message)
        self.scope = scope
        self.tokens = tokens
        self.cost_usd = cost_usd


@dataclass
class Budget:
    scope: str
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    parent: Budget | None = None
    tokens: int = field(default=0, init=False)
    cost_usd: float = field(default=0.0, init=False)

    def child(self, scope: str, *, max_tokens: int | None, max_cost_usd: float | None) -> Budget:
        return Budget(scope=scope, max_tokens=max_tokens, max_cost_usd=max_cost_usd, parent=self)

    def charge(self, usage: Usage, cost_usd: float | None, model_name: str = "the model") -> None:
        """Count a call here and in every ancestor, then stop if any limit is passed.
        `cost_usd` None: the call's price is unknown."""
        tokens = usage.input_tokens + usage.output_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
        node: Budget | None = self
        while node is not None:
            node.tokens += tokens
            node.cost_usd += cost_usd or 0.0
            node = node.parent
        if cost_usd is None:
            self._refuse_unmetered(model_name)
        self.check()

    def _refuse_unmetered(self, model_name: str) -> None:
        node: Budget | None = self
        while node is not None:
            if node.max_cost_usd is not None:
                raise BudgetExceeded(
                    f"{node.scope} has a cost budget of ${node.max_cost_usd:.4f}, but the price of {model_name} is "
                    "unknown; give its prices in the `models` setting or use a token budget",
                    scope=node.scope, tokens=node.tokens, cost_usd=node.cost_usd,
                )
            node = node.parent

    def add(self, tokens: int, cost_usd: float) -> None:
        """Count usage reported from elsewhere (a subagent in another process) here and
        in every ancestor, without stopping; the next charge checks the limits."""
        node: Budget | None = self
        while node is not None:
            node.tokens += tokens
            node.cost_usd += cost_usd
            node = node.parent

    def remaining(self) -> tuple[int | None, float | None]:
        """The tightest room left along the chain, for a budget enforced elsewhere."""
        tokens: int | None = None
        cost: float | None = None
        node: Budget | None = self
        while node is not None:
            if node.max_tokens is not None:
                left = max(node.max_tokens - node.tokens, 0)
                tokens = left if tokens is None else min(tokens, left)
            if node.max_cost_usd is not None:
                left_cost = max(node.max_cost_usd - node.cost_usd, 0.0)
                cost = left_cost if cost is None else min(cost, left_cost)
            node = node.parent
        return tokens, cost

    def check(self) -> None:
        node: Budget | None = self
        while node is not None:
            node._check_own()
            node = node.parent

    def _check_own(self) -> None:
        if self.max_tokens is not None and self.tokens > self.max_tokens:
            raise BudgetExceeded(
                f"{self.scope} token budget exceeded: {self.tokens} > {self.max_tokens} tokens",
                scope=self.scope, tokens=self.tokens, cost_usd=self.cost_usd,
            )
        if self.max_cost_usd is not None and self.cost_usd > self.max_cost_usd:
            raise BudgetExceeded(
                f"{self.scope} cost budget exceeded: ${self.cost_usd:.4f} > ${self.max_cost_usd:.4f}",
                scope=self.scope, tokens=self.tokens, cost_usd=self.cost_usd,
            )
