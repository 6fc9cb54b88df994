"""`workingset run`: one prompt, or a REPL, in this process or on a SessionActor.

The parser is cluster/terminal/_cli.py's; this module is imported only when `run` runs, since it
brings in the agent loop (and, on Ray, Ray itself).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from agents.errors import ConfigError, ModelError
from agents.events import EventSink
from agents.modes import Mode
from agents.opening import OpenSpec, SessionRuntime, open_or_resume, resolve_workspace, snapshot_store
from agents.session import Approver, SessionHandle
from agents.settings import WorkingsetSettings, home_directory, load_workspace_settings
from cluster.terminal._console import claim_stdout, console_approver, say, settle_parked
from cluster.terminal._flags import setting_overrides
from cluster.terminal._render import HumanRenderer, JsonRenderer
from cluster.terminal._repl import run_repl
from cluster.terminal._trust_cli import settle_trust

__all__ = ["EXIT_DENIED", "EXIT_FAILED", "EXIT_OK", "run_command"]

EXIT_OK, EXIT_FAILED, EXIT_DENIED = 0, 1, 3


async def _run_prompt(session: SessionHandle, prompt: str, approver: Approver | None) -> int:
    session.announce_start()
    try:
        await settle_parked(session, approver)  # a call parked before a resume comes first
        outcome = await settle_parked(session, approver, await session.run_turn(prompt))
    except ModelError as exc:
        session.announce_end("error", "", error=f"{type(exc).__name__}: {exc}")
        return EXIT_FAILED
    session.announce_end(outcome.reason, outcome.final_text, error=outcome.detail)
    if outcome.reason == "permission_denied":
        # Said on stderr too: whatever the final text claims, those calls never ran.
        say(
            f"workingset: {outcome.detail}. Allow them with --allow RULE or --permission-mode, "
            "or run at a terminal to be asked",
            file=sys.stderr,
        )
        return EXIT_DENIED
    return EXIT_OK if outcome.reason == "end_turn" else EXIT_FAILED


def _resumed_id(args: argparse.Namespace, settings, workspace) -> str | None:
    if args.resume:
        return args.resume
    if args.continue_latest:
        scan = snapshot_store(settings).scan(workspace)
        for unreadable in scan.problems:  # it might have been the latest: say so rather than skip it silently
            say(f"workingset: notice: {unreadable.problem}", file=sys.stderr)
        if not scan.sessions:
            raise ConfigError(f"no saved session for {workspace}; start one without --continue")
        return scan.sessions[0].session_id
    return None


def run_command(args: argparse.Namespace) -> int:
    workspace = resolve_workspace(args.cwd)
    flags = setting_overrides(args, "run")
    interactive = sys.stdin.isatty() or args.prompt is None
    settings = _settings(workspace, flags, args.trust_workspace, interactive)
    home_directory(settings.home)  # before any work: an unwritable home fails at its first write otherwise
    if not interactive and settings.permissions.headless is None:
        # Nobody can answer a prompt: asks become clear denials instead of a hang.
        settings = settings.model_copy(
            update={"permissions": settings.permissions.model_copy(update={"headless": "deny-asks"})}
        )
    renderer = JsonRenderer(claim_stdout()) if args.json else HumanRenderer()
    approver = console_approver if interactive else None
    opening = _opening(settings, workspace, args, _resumed_id(args, settings, workspace))
    drive = _drive_local if settings.runtime == "local" else _drive_on_ray
    return asyncio.run(drive(opening, args, renderer, approver))


def _settings(workspace, flags: dict[str, Any], trust_flag: bool, interactive: bool):
    """Settings for `run`: an untrusted workspace that asks for more is asked about at a
    terminal (see cluster.terminal._trust_cli); what stays ignored is named in one notice."""

    def reload(trusted: bool | None):
        return load_workspace_settings(workspace, flags, trusted=trusted)

    loaded = settle_trust(reload(True if trust_flag else None), reload, interactive)
    if loaded.notice:
        say(f"workingset: notice: {loaded.notice}", file=sys.stderr)
    return loaded.settings


def _opening(
    settings: WorkingsetSettings, workspace: Path, args: argparse.Namespace, session_id: str | None
) -> OpenSpec:
    """What `run` asks to open: --resume / --continue name a saved session; --goal set
    with them replaces its goal (agents.opening._lifecycle), here and on Ray alike."""
    return OpenSpec(
        settings, workspace, session_id=session_id, resume=session_id is not None, mode=Mode(args.mode), goal=args.goal
    )


async def _drive_local(
    opening: OpenSpec, args: argparse.Namespace, renderer: EventSink, approver: Approver | None
) -> int:
    session = await open_or_resume(opening, SessionRuntime(emit=renderer, child_approver=approver))
    return await _drive(session, args.prompt, approver, renderer)


async def _drive_on_ray(
    opening: OpenSpec, args: argparse.Namespace, renderer: EventSink, approver: Approver | None
) -> int:
    from cluster.ray_run import open_remote_session  # Ray: imported only for a session on it

    remote = await open_remote_session(opening, emit=renderer, approver=approver)
    return await _drive(remote, args.prompt, approver, renderer)


async def _drive(session: SessionHandle, prompt: str | None, approver: Approver | None, renderer: EventSink) -> int:
    try:
        if prompt is None:
            return await run_repl(session, renderer.trees if isinstance(renderer, HumanRenderer) else None)
        return await _run_prompt(session, prompt, approver)
    finally:
        await session.aclose()
