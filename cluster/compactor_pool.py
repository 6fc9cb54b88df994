"""The CompactorPool: summarizer actors shared by every session of the runtime.

Each SummarizerActor wraps the configured Summarizer and refuses work beyond its
queue bound, so a burst of compactions fails fast instead of piling up. The client
(`PooledSummarizer`, the Summarizer port on Ray) spreads calls round-robin, skips
busy and dead actors, and gives up with SummaryFailed — which the compiler's rules
already handle (auto: keep the cleared conversation; manual: history unchanged).

A summary changes nothing, so a call whose actor died under it (killed, OOM-killed,
its node lost: cluster.faults) is simply made again: on the next member, and once
every member has been tried, on the restarted ones (each actor restarts when killed),
up to LOST_ROUNDS rounds within the pool's timeout. Only then does a death count as
the pool being unavailable.
"""

from __future__ import annotations

import asyncio
import itertools
import time

import ray
from ray.exceptions import RayError

from agents.compaction import SummaryFailed, load_summarizer
from agents.messages import Message
from agents.settings import SummarizerSettings
from agents.snapshots import decode_messages, encode_messages
from cluster.credentials import model_runtime_env
from cluster.faults import is_lost_infrastructure
from cluster.named_actor import NamedActor, start_named

__all__ = ["BUSY", "PooledSummarizer", "SummarizerActor", "start_compactor_pool"]

BUSY = "\x00workingset:busy"
LOST_ROUNDS = 4  # rounds over the members while calls keep failing on lost actors
_RESTART_PAUSE_S = 1.0  # before the next round: a killed actor takes a moment to restart


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0)
class SummarizerActor:
    def __init__(self, settings: dict, max_queue: int):
        self.summarizer = load_summarizer(SummarizerSettings.model_validate(settings))
        self.max_queue = max_queue
        self.in_flight = 0

    async def summarize(self, encoded: bytes, focus: str | None) -> str:
        if self.in_flight >= self.max_queue:
            return BUSY
        self.in_flight += 1
        try:
            return await self.summarizer.summarize(decode_messages(encoded), focus=focus)
        finally:
            self.in_flight -= 1

    def load(self) -> int:
        return self.in_flight


class PooledSummarizer:
    """The Summarizer port backed by the pool; picklable (as the actors' names, see
    named_actor.py), so session and subagent actors share it."""

    def __init__(self, members: list[NamedActor], timeout_s: float):
        self.members = list(members)
        self.timeout_s = timeout_s
        self.name = f"pool:{len(self.members)}"
        self._next = itertools.count()

    @property
    def actors(self) -> list:
        return [m.handle for m in self.members]

    def __getstate__(self) -> dict:
        return {"members": self.members, "timeout_s": self.timeout_s}

    def __setstate__(self, state: dict) -> None:
        PooledSummarizer.__init__(self, state["members"], state["timeout_s"])

    async def summarize(self, messages: list[Message], *, focus: str | None = None) -> str:
        encoded = encode_messages(messages)
        start = next(self._next)
        problems: dict[int, str] = {}  # member -> what its last call met
        deadline = time.monotonic() + self.timeout_s
        for round_ in range(LOST_ROUNDS):
            lost = False
            for i in range(len(self.members)):
                index = (start + i) % len(self.members)
                left = deadline - time.monotonic()
                if left <= 0:
                    problems.setdefault(index, f"timed out after {self.timeout_s:g} s")
                    continue
                try:
                    text = await asyncio.wait_for(self.members[index].handle.summarize.remote(encoded, focus), left)
                except TimeoutError:
                    problems[index] = f"timed out after {self.timeout_s:g} s"
                    continue
                except RayError as exc:
                    lost = lost or is_lost_infrastructure(exc)
                    problems[index] = f"unavailable ({type(exc).__name__})"
                    continue
                if text == BUSY:
                    problems[index] = "busy"
                    continue
                return text
            if not lost or deadline - time.monotonic() <= 0:
                break
            await asyncio.sleep(min(_RESTART_PAUSE_S * (round_ + 1), max(deadline - time.monotonic(), 0)))
        said = ", ".join(problems[i] for i in sorted(problems))
        raise SummaryFailed(f"compactor pool could not summarize: {said or 'no summarizers'}")


def start_compactor_pool(settings: SummarizerSettings, *, size: int, max_queue: int) -> PooledSummarizer:
    options = {"runtime_env": model_runtime_env()}  # a model summarizer needs the credentials
    members = [
        start_named(SummarizerActor, "summarizer", settings.model_dump(mode="json"), max_queue, **options)
        for _ in range(size)
    ]
    return PooledSummarizer(members, timeout_s=settings.timeout_s)
