"""Token and cost budgets, per agent and per tree, counted live by one ledger per tree.

Every session of a tree has a scope in the tree's one `TreeLedger`, which lives in the
root's process: the root's scope is the tree's ("tree", `subagents.tree_max_*`), each
subagent's scope has its parent's as parent (`subagents.max_*`). A session holds a
`Budget`: its scope in a `BudgetLedger`, the ledger itself in the root's process, or
a client of it in another process (on Ray: `cluster.subagents._tree_budget.RemoteLedger`,
answered by the root's SessionActor).

Around every model call a session reserves, then settles:
- `reserve()` before the call refuses it when its scope or any ancestor has already
  used its whole budget;
- `settle(usage, cost)` after the call counts it in its scope and every ancestor at
  once, and ends the run when a limit is now passed.
So siblings see each other's spending as it happens, and a tree can pass its limit
only by calls that were already under way when it ran out: at most one in-flight call
per running session (a session makes one model call at a time).

Sibling policy: a child that passes its own limit ends alone, its siblings go on; once
a shared ancestor's budget (the tree's) is used up, every session under it ends at its
next reserve, each with a budget result naming that budget, and the root ends its turn
with reason "budget" at its next call.

A call whose price is unknown (a scripted model, an unpriced open model) adds no
dollars; if a cost limit applies to it, the run stops at once with BudgetExceeded
saying so, rather than running unmetered past a limit it cannot measure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from agents.errors import LoopEnded, WorkingsetError
from agents.ports import Usage

__all__ = ["Budget", "BudgetExceeded", "BudgetLedger", "BudgetRefusal", "ScopeLimits", "TreeLedger", "usage_tokens"]


class BudgetExceeded(LoopEnded):
    reason = "budget"

    def __init__(self, message: str, *, scope: str, tokens: int, cost_usd: float):
        super().__init__(message)
        self.scope = scope
        self.tokens = tokens
        self.cost_usd = cost_usd


class BudgetRefusal(BaseModel):
    """A BudgetExceeded as data, to travel between processes."""

    message: str
    scope: str
    tokens: int
    cost_usd: float

    @classmethod
    def of(cls, exc: BudgetExceeded) -> BudgetRefusal:
        return cls(message=str(exc), scope=exc.scope, tokens=exc.tokens, cost_usd=exc.cost_usd)

    def error(self) -> BudgetExceeded:
        return BudgetExceeded(self.message, scope=self.scope, tokens=self.tokens, cost_usd=self.cost_usd)


class ScopeLimits(BaseModel):
    """One session's scope: its name in messages and its own limits (None: unlimited)."""

    label: str
    max_tokens: int | None = None
    max_cost_usd: float | None = None


def usage_tokens(usage: Usage) -> int:
    return usage.input_tokens + usage.output_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens


@runtime_checkable
class BudgetLedger(Protocol):
    """Where a tree's usage is counted: open a scope, reserve before a call, settle after.
    `reserve` and `settle` raise BudgetExceeded; `used` is the scope's last known total."""

    async def open_scope(self, scope_id: str, parent_id: str | None, limits: ScopeLimits) -> None: ...

    async def reserve(self, scope_id: str) -> None: ...

    async def settle(self, scope_id: str, tokens: int, cost_usd: float | None, model_name: str) -> None: ...

    def used(self, scope_id: str) -> tuple[int, float]: ...


@dataclass
class _Scope:
    limits: ScopeLimits
    parent: _Scope | None
    tokens: int = 0
    cost_usd: float = 0.0

    def chain(self):
        node: _Scope | None = self
        while node is not None:
            yield node
            node = node.parent


class TreeLedger:
    """The budget authority of one tree, in the root's process. Its methods run to the
    end without awaiting, so concurrent sessions see one consistent count."""

    def __init__(self) -> None:
        self._scopes: dict[str, _Scope] = {}

    def __getstate__(self) -> dict:
        raise WorkingsetError("a tree's budget ledger stays in the root's process; send a client of it instead")

    # the BudgetLedger protocol ---------------------------------------------------------

    async def open_scope(self, scope_id: str, parent_id: str | None, limits: ScopeLimits) -> None:
        self.open_now(scope_id, parent_id, limits)

    async def reserve(self, scope_id: str) -> None:
        self.reserve_now(scope_id)

    async def settle(self, scope_id: str, tokens: int, cost_usd: float | None, model_name: str) -> None:
        self.settle_now(scope_id, tokens, cost_usd, model_name)

    def used(self, scope_id: str) -> tuple[int, float]:
        scope = self._scope(scope_id)
        return scope.tokens, scope.cost_usd

    # the same, without a loop (the root's actor answers other processes with these) ----

    def open_now(self, scope_id: str, parent_id: str | None, limits: ScopeLimits) -> None:
        parent = self._scope(parent_id) if parent_id is not None else None
        self._scopes[scope_id] = _Scope(limits, parent)

    def reserve_now(self, scope_id: str) -> None:
        """Admit one call, unless a budget along the chain is already used up."""
        scope = self._scope(scope_id)
        for node in scope.chain():
            limits = node.limits
            if limits.max_tokens is not None and node.tokens >= limits.max_tokens:
                raise BudgetExceeded(
                    f"{limits.label} token budget exceeded: {node.tokens} of {limits.max_tokens} tokens used "
                    "before this call",
                    scope=limits.label,
                    tokens=node.tokens,
                    cost_usd=node.cost_usd,
                )
            if limits.max_cost_usd is not None and node.cost_usd >= limits.max_cost_usd:
                raise BudgetExceeded(
                    f"{limits.label} cost budget exceeded: ${node.cost_usd:.4f} of ${limits.max_cost_usd:.4f} used "
                    "before this call",
                    scope=limits.label,
                    tokens=node.tokens,
                    cost_usd=node.cost_usd,
                )

    def settle_now(self, scope_id: str, tokens: int, cost_usd: float | None, model_name: str = "the model") -> None:
        """Count a finished call here and in every ancestor, then stop if a limit is passed.
        `cost_usd` None: the call's price is unknown."""
        scope = self._scope(scope_id)
        for node in scope.chain():
            node.tokens += tokens
            node.cost_usd += cost_usd or 0.0
        for node in scope.chain():
            _check_passed(node, cost_usd is None, model_name)

    def restore(self, scope_id: str, tokens: int, cost_usd: float) -> None:
        """Put back a resumed root's figures."""
        scope = self._scope(scope_id)
        scope.tokens, scope.cost_usd = tokens, cost_usd

    def _scope(self, scope_id: str) -> _Scope:
        try:
            return self._scopes[scope_id]
        except KeyError:
            raise WorkingsetError(
                f"no budget scope {scope_id!r} in this tree; open it before the session runs"
            ) from None


def _check_passed(node: _Scope, unpriced: bool, model_name: str) -> None:
    limits = node.limits
    if unpriced and limits.max_cost_usd is not None:
        raise BudgetExceeded(
            f"{limits.label} has a cost budget of ${limits.max_cost_usd:.4f}, but the price of {model_name} is "
            "unknown; give its prices in the `models` setting or use a token budget",
            scope=limits.label,
            tokens=node.tokens,
            cost_usd=node.cost_usd,
        )
    if limits.max_tokens is not None and node.tokens > limits.max_tokens:
        raise BudgetExceeded(
            f"{limits.label} token budget exceeded: {node.tokens} > {limits.max_tokens} tokens",
            scope=limits.label,
            tokens=node.tokens,
            cost_usd=node.cost_usd,
        )
    if limits.max_cost_usd is not None and node.cost_usd > limits.max_cost_usd:
        raise BudgetExceeded(
            f"{limits.label} cost budget exceeded: ${node.cost_usd:.4f} > ${limits.max_cost_usd:.4f}",
            scope=limits.label,
            tokens=node.tokens,
            cost_usd=node.cost_usd,
        )


@dataclass
class Budget:
    """One session's scope in its tree's ledger: what the loop reserves and settles with."""

    ledger: BudgetLedger
    scope_id: str
    label: str = field(default="tree")

    @classmethod
    def tree(
        cls, scope_id: str = "root", *, max_tokens: int | None = None, max_cost_usd: float | None = None
    ) -> Budget:
        """A root's budget: a new ledger, in this process, whose first scope is the tree's."""
        ledger = TreeLedger()
        ledger.open_now(scope_id, None, ScopeLimits(label="tree", max_tokens=max_tokens, max_cost_usd=max_cost_usd))
        return cls(ledger, scope_id)

    async def child(self, scope_id: str, limits: ScopeLimits) -> Budget:
        """Open a subagent's scope under this one."""
        await self.ledger.open_scope(scope_id, self.scope_id, limits)
        return Budget(self.ledger, scope_id, limits.label)

    async def reserve(self) -> None:
        await self.ledger.reserve(self.scope_id)

    async def settle(self, usage: Usage, cost_usd: float | None, model_name: str = "the model") -> None:
        await self.ledger.settle(self.scope_id, usage_tokens(usage), cost_usd, model_name)

    @property
    def tokens(self) -> int:
        return self.ledger.used(self.scope_id)[0]

    @property
    def cost_usd(self) -> float:
        return self.ledger.used(self.scope_id)[1]
