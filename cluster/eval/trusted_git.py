"""Git on the host for batch evaluation: always with a git directory the harness made.

The neutralisation is tools.host_git's (argv from `git_command`: fsmonitor, hooks,
pagers, signing, credential helpers, `ext::` and auto gc off; an environment from
`git_environment`: nothing of the host's but an absolute PATH, no system or global
config, HOME an empty directory), plus no system attributes and no replace refs, and
for network clones the proxy and ssh-agent variables.

What no setting switches off is a filter or diff driver that `.gitattributes` names and
`.git/config` defines. The answer here is by construction: the host never runs git with
a git directory a sandboxed command has had. A clone is set up (checkout, origin
removed) before any command runs in it; from then on a workspace is only read through
the task's trusted base (`--git-dir=<base> --work-tree=<workspace>`, see base_repo.py),
whose configuration only this harness wrote, so the drivers the workspace's attributes
name are defined nowhere. This module adds what the batch needs on top: asyncio, a
timeout that kills the process group, stdin, and a cap on stdout.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

from cluster.eval.errors import GitError
from tools.host_git import git_command, git_environment

__all__ = ["GitOutputTooLarge", "git"]

_EXTRA_CONFIG = ("-c", "core.untrackedCache=false", "-c", "core.symlinks=true", "-c", "advice.detachedHead=false")
_EXTRA_ENV = {"GIT_ATTR_NOSYSTEM": "1", "GIT_NO_REPLACE_OBJECTS": "1"}
_NETWORK_VARS = (
    "SSH_AUTH_SOCK",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
)
_STDERR_KEEP = 16_384


class GitOutputTooLarge(GitError):
    """The command printed more than the caller's cap; it was stopped."""

    def __init__(self, step: str, cap: int):
        super().__init__(f"git {step} printed more than {cap:,} bytes; stopped")
        self.cap = cap


def _environment(network: bool, extra: dict[str, str] | None) -> dict[str, str]:
    added = dict(_EXTRA_ENV)
    if network:
        added.update({k: os.environ[k] for k in _NETWORK_VARS if k in os.environ})
    return git_environment({**added, **(extra or {})})


async def _read_capped(stream: asyncio.StreamReader, cap: int | None) -> tuple[bytes, bool]:
    """(what was read, whether the cap was passed)."""
    chunks: list[bytes] = []
    size = 0
    while chunk := await stream.read(1 << 16):
        chunks.append(chunk)
        size += len(chunk)
        if cap is not None and size > cap:
            return b"".join(chunks)[:cap], True
    return b"".join(chunks), False


async def _read_tail(stream: asyncio.StreamReader) -> bytes:
    tail = b""
    while chunk := await stream.read(1 << 16):
        tail = (tail + chunk)[-_STDERR_KEEP:]
    return tail


async def git(
    *args: str,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    network: bool = False,
    stdin: bytes | None = None,
    timeout_s: float = 600.0,
    max_output: int | None = None,
) -> bytes:
    """Run git; its stdout (raises GitError on a non-zero exit, a timeout, or more output
    than `max_output`: GitOutputTooLarge). The process group is killed on any way out."""
    prefix: list[str] = list(_EXTRA_CONFIG)
    if git_dir is not None:
        prefix.append(f"--git-dir={git_dir}")
    if work_tree is not None:
        prefix.append(f"--work-tree={work_tree}")
    step = next((a for a in args if not a.startswith("-")), "")
    proc = await asyncio.create_subprocess_exec(
        *git_command(*prefix, *args),
        cwd=cwd or work_tree or Path("/"),
        env=_environment(network, env),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    reads = (
        asyncio.ensure_future(_read_capped(proc.stdout, max_output)),
        asyncio.ensure_future(_read_tail(proc.stderr)),
    )
    try:
        async with asyncio.timeout(timeout_s):
            if stdin is not None:
                await _feed(proc, stdin)
            out, over = await reads[0]
            if over:
                _kill(proc)
                raise GitOutputTooLarge(step, max_output or 0)
            err = await reads[1]
            await proc.wait()
    except TimeoutError:
        raise GitError(f"git {step} timed out after {timeout_s:g} s") from None
    finally:
        if proc.returncode is None:
            _kill(proc)
            await proc.wait()
        for read in reads:
            read.cancel()
    if proc.returncode != 0:
        lines = err.decode(errors="replace").strip().splitlines()
        raise GitError(f"git {step} failed: {lines[-1] if lines else f'exit code {proc.returncode}'}")
    return out


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # git stopped reading: its exit says why
        proc.stdin.write(data)
        await proc.stdin.drain()
    proc.stdin.close()


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
