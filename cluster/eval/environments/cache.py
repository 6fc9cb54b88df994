"""The environments of one node, on its own disk: built once per recipe, shared read-only.

    <root>/<key>/venv    the environment (bound read-only into every sandbox that uses it)
    <root>/<key>.json    written by the harness after a build succeeded: the recipe, when,
                         how long, by which task. No marker, no environment: an entry
                         without one is a build that failed or was interrupted, and is
                         built again from scratch.
    <root>/<key>.lock    held while building (flock), so concurrent tasks — in this process
                         or in another batch sharing the directory — build it once

`<root>` is `--env-cache DIR`, or the batch's `<out>/state/envs`. Nothing assumes it is
shared between nodes: a task looks only on the machine that runs it. The marker sits
beside the entry, outside anything a sandbox ever writes, so a build cannot declare
itself done. A failed build leaves nothing behind; the next task that wants the
environment tries again.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from cluster.eval.base_repo import Base
from cluster.eval.environments.build import make_environment
from cluster.eval.environments.egress import DEFAULT_HOSTS, EgressProxy
from cluster.eval.environments.recipe import Recipe
from cluster.eval.errors import TaskEnded
from cluster.eval.grading import CommandResult, SandboxedShell, write_log
from tools.files import remove_tree

__all__ = ["EnvironmentCache", "TaskEnvironment"]

_POLL_S = 0.2


@dataclass(frozen=True)
class TaskEnvironment:
    key: str
    venv: Path
    reused: bool  # found in the cache: this task built nothing


class EnvironmentCache:
    """`shell_for(venv, extra_toolchains)` gives the sandboxed shell a build runs in."""

    def __init__(
        self,
        root: Path,
        shell_for: Callable[[Path, tuple[Path, ...]], SandboxedShell],
        *,
        egress_hosts: tuple[str, ...] = DEFAULT_HOSTS,
    ):
        self.root = root
        self.shell_for = shell_for
        self.egress_hosts = egress_hosts
        self._locks: dict[str, asyncio.Lock] = {}

    def entry(self, key: str) -> Path:
        return self.root / key

    def marker(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def ready(self, key: str) -> bool:
        return self.marker(key).is_file() and (self.entry(key) / "venv" / "pyvenv.cfg").is_file()

    async def ensure(
        self,
        recipe: Recipe,
        base: Base,
        *,
        task_id: str,
        network: bool,
        timeout_s: float,
        log: Path,
        rel: Callable[[Path], str] = str,
        slots: asyncio.Semaphore | None = None,
    ) -> TaskEnvironment:
        """The recipe's environment, built here unless the cache has it; raises TaskEnded
        (the build's log and, without the network, what to change) when it cannot be.
        `slots` bounds the builds with the batch's other commands (not the waits)."""
        key, clock = recipe.key, time.monotonic()
        async with self._held(key):
            if self.ready(key):
                return TaskEnvironment(key, self.entry(key) / "venv", True)
            async with slots or contextlib.nullcontext():
                result = await self._build(recipe, base, network=network, timeout_s=timeout_s, log=log)
            seconds = round(time.monotonic() - clock, 3)
            if not result.ok:
                await asyncio.to_thread(remove_tree, self.entry(key), ignore_errors=True)
                raise TaskEnded(_failure(result, network=network, timeout_s=timeout_s, log=rel(log)))
            _write_marker(
                self.marker(key),
                {
                    **recipe.describe(),
                    "built_by": task_id,
                    "built_at": time.time(),
                    "build_s": seconds,
                    "network": network,
                },
            )
        return TaskEnvironment(key, self.entry(key) / "venv", False)

    async def _build(self, recipe: Recipe, base: Base, *, network: bool, timeout_s: float, log: Path) -> CommandResult:
        entry = self.entry(recipe.key)
        self.marker(recipe.key).unlink(missing_ok=True)
        if not network:
            shell = self.shell_for(entry / "venv", ())
            script, result = await make_environment(recipe, base, entry, shell, egress=None, timeout_s=timeout_s)
            write_log(log, script, result)
            return result
        async with EgressProxy(self.egress_hosts) as proxy:
            assert proxy.dir is not None
            shell = self.shell_for(entry / "venv", (proxy.dir,))
            script, result = await make_environment(
                recipe, base, entry, shell, egress=(proxy.forwarder, proxy.socket), timeout_s=timeout_s
            )
        decisions = "\n".join(f"[egress] {d}" for d in proxy.decisions)
        write_log(log, script, CommandResult(result.exit_code, result.timed_out, f"{result.output}\n{decisions}"))
        return result

    @contextlib.asynccontextmanager
    async def _held(self, key: str) -> AsyncIterator[None]:
        """This key's lock: among this process's tasks, then (flock) among processes."""
        async with self._locks.setdefault(key, asyncio.Lock()):
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.root / f"{key}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        await asyncio.sleep(_POLL_S)
                yield
            finally:
                os.close(fd)  # releases the flock


def _write_marker(path: Path, data: dict) -> None:
    scratch = path.with_suffix(".json.tmp")
    scratch.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(scratch, path)


def _failure(result: CommandResult, *, network: bool, timeout_s: float, log: str) -> str:
    if result.timed_out:
        how = f"timed out after {timeout_s:g} s"
    elif result.exit_code is None:
        how = "was stopped (a sandbox limit)"
    else:
        how = f"failed (exit code {result.exit_code})"
    said = [line for line in result.output.strip().splitlines() if line.startswith("ERROR:")][-2:] or [result.tail(2)]
    text = f"building the environment {how}: {' '.join(said)} (log: {log})"
    if not network:
        text += (
            "; the build had no network: let it reach the package registries with environment.network = true "
            "in the task or --setup-network"
        )
    return text
