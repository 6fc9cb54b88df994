"""A tree's budget across actors: subagents reach the root's ledger through its actor.

The tree's one `agents.subagents._budgets.TreeLedger` lives with the root session, in the
SessionActor that hosts it (the tree's supervisor already: a child's events and
questions go there too), so a tree needs no extra actor, and the root's own calls
are counted without a round trip. A subagent in a SubagentActor holds a
`RemoteLedger`: its reserve and settle are calls to that SessionActor, which
answers them from the ledger at once (its methods never await, so concurrent
children see one count). A refusal travels back as data and is raised in the
child as the same BudgetExceeded an in-process child would see.
"""

from __future__ import annotations

from ray.exceptions import RayError

from agents.subagents import BudgetExceeded, BudgetRefusal, ScopeLimits, TreeLedger

__all__ = ["LedgerHost", "RemoteLedger"]


class RemoteLedger:
    """The BudgetLedger port of a subagent in another process: the root's actor answers."""

    def __init__(self, root_actor, root_session_id: str):
        self.root_actor = root_actor
        self.root_session_id = root_session_id
        self._used: dict[str, tuple[int, float]] = {}

    def __getstate__(self) -> dict:
        return {"root_actor": self.root_actor, "root_session_id": self.root_session_id}

    def __setstate__(self, state: dict) -> None:
        RemoteLedger.__init__(self, state["root_actor"], state["root_session_id"])

    async def open_scope(self, scope_id: str, parent_id: str | None, limits: ScopeLimits) -> None:
        _raise(await self._call(self.root_actor.budget_open.remote(self.root_session_id, scope_id, parent_id, limits)))

    async def reserve(self, scope_id: str) -> None:
        _raise(await self._call(self.root_actor.budget_reserve.remote(self.root_session_id, scope_id)))

    async def settle(self, scope_id: str, tokens: int, cost_usd: float | None, model_name: str) -> None:
        refusal, used = await self._call(
            self.root_actor.budget_settle.remote(self.root_session_id, scope_id, tokens, cost_usd, model_name)
        )
        self._used[scope_id] = used
        _raise(refusal)

    def used(self, scope_id: str) -> tuple[int, float]:
        """As of this process's last settle (the ledger itself is in the root's actor)."""
        return self._used.get(scope_id, (0, 0.0))

    async def _call(self, ref):
        try:
            return await ref
        except RayError as exc:
            # Without its ledger a child cannot know what the tree has left: it stops.
            raise BudgetExceeded(
                f"the tree's budget ledger cannot be reached ({type(exc).__name__}); "
                "the subagent stops rather than spend unmetered",
                scope="tree",
                tokens=0,
                cost_usd=0.0,
            ) from exc


def _raise(refusal: BudgetRefusal | None) -> None:
    if refusal is not None:
        raise refusal.error()


class LedgerHost:
    """What a SessionActor answers for its sessions' ledgers: each method runs to its end
    without awaiting, so the answers of concurrent children never interleave."""

    def __init__(self, ledger_of):
        self._ledger_of = ledger_of  # session id -> that root's TreeLedger, or None once it is gone

    def open(self, session_id: str, scope_id: str, parent_id: str | None, limits: ScopeLimits) -> BudgetRefusal | None:
        return self._answer(session_id, lambda ledger: ledger.open_now(scope_id, parent_id, limits))

    def reserve(self, session_id: str, scope_id: str) -> BudgetRefusal | None:
        return self._answer(session_id, lambda ledger: ledger.reserve_now(scope_id))

    def settle(
        self, session_id: str, scope_id: str, tokens: int, cost_usd: float | None, model_name: str
    ) -> tuple[BudgetRefusal | None, tuple[int, float]]:
        refusal = self._answer(session_id, lambda ledger: ledger.settle_now(scope_id, tokens, cost_usd, model_name))
        ledger = self._ledger_of(session_id)
        return refusal, (ledger.used(scope_id) if ledger is not None else (0, 0.0))

    def _answer(self, session_id: str, act) -> BudgetRefusal | None:
        ledger: TreeLedger | None = self._ledger_of(session_id)
        if ledger is None:
            return BudgetRefusal(
                message=f"the root session {session_id} is no longer open; its subagents stop",
                scope="tree",
                tokens=0,
                cost_usd=0.0,
            )
        try:
            act(ledger)
        except BudgetExceeded as exc:
            return BudgetRefusal.of(exc)
        return None
