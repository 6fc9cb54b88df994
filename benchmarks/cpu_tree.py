"""CPU time of this process and every process under it, by kind.

An embedded Ray runtime is a tree under the driver: the GCS and the raylet are its
children, every worker a child of the raylet. On a shared machine wall time says
little about what the harness costs; CPU seconds of that tree do. A process that
exits during a measurement still counts: its time is added to its parent's
"children" time once the parent reaps it, and is reported as `exited`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import psutil

__all__ = ["CpuSample", "load_average", "sample_tree"]

KINDS = ("driver", "workers", "ray_system", "exited")


@dataclass(frozen=True)
class CpuSample:
    seconds: dict[str, float]
    workers: frozenset[int] = field(default_factory=frozenset)  # pids of live Ray worker processes
    # per live worker: (its process title, e.g. "ray::SessionActor", CPU seconds)
    per_worker: dict[int, tuple[str, float]] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    def __sub__(self, earlier: CpuSample) -> CpuSample:
        per_worker = {
            pid: (title, cpu - earlier.per_worker.get(pid, ("", 0.0))[1])
            for pid, (title, cpu) in self.per_worker.items()
        }
        return CpuSample(
            {k: self.seconds[k] - earlier.seconds[k] for k in KINDS}, self.workers - earlier.workers, per_worker
        )

    def less_driver(self, seconds: float) -> CpuSample:
        """This sample without `seconds` of the driver's CPU (a measuring thread's own)."""
        return CpuSample({**self.seconds, "driver": self.seconds["driver"] - seconds}, self.workers, self.per_worker)

    def by_title(self) -> dict[str, float]:
        """Workers' CPU seconds by process title (a worker that became an actor during
        the run counts under the actor's class: Ray renames it then)."""
        totals: dict[str, float] = {}
        for title, cpu in self.per_worker.values():
            totals[title] = totals.get(title, 0.0) + cpu
        return dict(sorted(totals.items(), key=lambda item: -item[1]))


def _kind(proc: psutil.Process, me: int) -> str:
    if proc.pid == me:
        return "driver"
    return "workers" if proc.name().startswith("ray::") else "ray_system"


def sample_tree() -> CpuSample:
    me = psutil.Process()
    seconds = dict.fromkeys(KINDS, 0.0)
    per_worker: dict[int, tuple[str, float]] = {}
    for proc in [me, *me.children(recursive=True)]:
        try:
            with proc.oneshot():
                times = proc.cpu_times()
                kind = _kind(proc, me.pid)
                title = proc.name()
        except psutil.NoSuchProcess:
            continue  # exited between the listing and the read: its parent's children time will hold it
        seconds[kind] += times.user + times.system
        seconds["exited"] += times.children_user + times.children_system
        if kind == "workers":
            per_worker[proc.pid] = (title, times.user + times.system)
    return CpuSample(seconds, frozenset(per_worker), per_worker)


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f} on {os.cpu_count()} cores"
