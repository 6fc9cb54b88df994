"""Git on the host, with nothing of a repository's configuration able to run.

Every git command the batch runs on the host goes through `git()`: a clean environment
(PATH, LC_ALL=C, and for network clones the proxy and ssh-agent variables), no system
or global configuration (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`, HOME
and XDG_CONFIG_HOME pointing nowhere, so no ~/.config/git/attributes or ignore), no
system attributes, no replace refs, no prompts.

That alone does not make a repository safe: `.git/config` can name an fsmonitor, a
hooks path, filter and diff drivers. The design answer is that the host never runs git
with a git directory a sandboxed command has had: a clone is set up (checkout, origin
removed) before any command runs in it, and from then on workspaces are read through
the task's trusted base (`--git-dir=<base>`, see base_repo.py), whose configuration only
this harness wrote. The `-c` overrides below are a second line, for a mistake in the first.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

from cluster.eval.errors import GitError

__all__ = ["GitOutputTooLarge", "git", "git_env"]

_OVERRIDES = (
    "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.untrackedCache=false",
    "-c", "protocol.ext.allow=never", "-c", "core.symlinks=true", "-c", "advice.detachedHead=false",
)
_NETWORK_VARS = ("SSH_AUTH_SOCK", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
                 "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")
_STDERR_KEEP = 16_384


class GitOutputTooLarge(GitError):
    """The command printed more than the caller's cap; it was stopped."""

    def __init__(self, step: str, cap: int):
        super().__init__(f"git {step} printed more than {cap:,} bytes; stopped")
        self.cap = cap


def git_env(*, network: bool = False, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a host-side git command."""
    env = {
        "PATH": os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin",
        "LC_ALL": "C",
        "HOME": "/nonexistent",
        "XDG_CONFIG_HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "true",
        "SSH_ASKPASS": "true",
    }
    if network:
        env.update({k: os.environ[k] for k in _NETWORK_VARS if k in os.environ})
    env.update(extra or {})
    return env


async def _read_capped(stream: asyncio.StreamReader, cap: int | None) -> tuple[bytes, bool]:
    """(what was read, whether the cap was passed)."""
    chunks: list[bytes] = []
    size = 0
    while chunk := await stream.read(1 << 16):
        chunks.append(chunk)
        size += len(chunk)
        if cap is not None and size > cap:
            return b"".join(chunks)[: cap], True
    return b"".join(chunks), False


async def _read_tail(stream: asyncio.StreamReader) -> bytes:
    tail = b""
    while chunk := await stream.read(1 << 16):
        tail = (tail + chunk)[-_STDERR_KEEP:]
    return tail


async def git(*args: str, git_dir: Path | None = None, work_tree: Path | None = None, cwd: Path | None = None,
              env: dict[str, str] | None = None, network: bool = False, stdin: bytes | None = None,
              timeout_s: float = 600.0, max_output: int | None = None) -> bytes:
    """Run git; its stdout (raises GitError on a non-zero exit, a timeout, or more output
    than `max_output`: GitOutputTooLarge). The process group is killed on any way out."""
    prefix: list[str] = list(_OVERRIDES)
    if git_dir is not None:
        prefix.append(f"--git-dir={git_dir}")
    if work_tree is not None:
        prefix.append(f"--work-tree={work_tree}")
    step = next((a for a in args if not a.startswith("-")), "")
    proc = await asyncio.create_subprocess_exec(
        "git", *prefix, *args, cwd=cwd or work_tree or Path("/"), env=git_env(network=network, extra=env),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    reads = (asyncio.ensure_future(_read_capped(proc.stdout, max_output)), asyncio.ensure_future(_read_tail(proc.stderr)))
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
