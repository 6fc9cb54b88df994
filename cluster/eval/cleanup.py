"""Waiting out a cancelled task's clean-up.

A stopped batch (Ctrl-C, SIGTERM, `ray job stop`) cancels its tasks once; each then
closes its session and removes its workspace through its node's actors, and only after
that may the host shut those actors down. A second cancel landing meanwhile (a signal
sent again, `asyncio.run` tidying up) must not cut that short, or the clean-up finds
its actors gone and the stop ends in a traceback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

__all__ = ["outlive"]


async def outlive(tasks: Iterable[asyncio.Future]) -> None:
    """Wait until every one of `tasks` is done, even through cancels of the caller;
    a cancel that arrived meanwhile is raised afterwards."""
    pending = [t for t in tasks if not t.done()]
    cancelled = False
    while pending:
        try:
            await asyncio.wait(pending)
        except asyncio.CancelledError:
            cancelled = True
        pending = [t for t in pending if not t.done()]
    if cancelled:
        raise asyncio.CancelledError
