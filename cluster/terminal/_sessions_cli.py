"""`workingset sessions list | show ID | export ID | history ID | restore ID VERSION | doctor`.

A session's stored text came from models and tools, so what these print goes through
`say` (agents.visible): an exported JSON document keeps its values (each hidden
character is a JSON escape), the markdown shows them as escapes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from agents.errors import ConfigError
from agents.messages import TextBlock, ToolResultBlock, ToolUseBlock
from cluster.terminal._console import say

if TYPE_CHECKING:  # the store loads when the command runs, not with the parser
    from agents.session import SessionState

__all__ = ["add_sessions_parser", "run_sessions_command", "to_markdown"]


def add_sessions_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("sessions", help="list, inspect, export and restore saved sessions")
    parser.add_argument("--cwd", default=".", help="workspace whose settings locate the store (default: .)")
    actions = parser.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="saved sessions, newest first")
    listing.add_argument("--all", action="store_true", help="every workspace, not only --cwd")
    actions.add_parser("show", help="one session's current state").add_argument("id")
    export = actions.add_parser("export", help="the conversation as JSON or markdown")
    export.add_argument("id")
    export.add_argument("--format", choices=["json", "markdown"], default="json")
    export.add_argument("--version", help="an older version instead of the current one")
    actions.add_parser("history", help="the versions kept for a session").add_argument("id")
    restore = actions.add_parser("restore", help="make an older version current again")
    restore.add_argument("id")
    restore.add_argument("version")
    doctor = actions.add_parser(
        "doctor", help="check every session's store; move damaged ones aside, keeping what reads"
    )
    doctor.add_argument("--dry-run", action="store_true", help="only report; change nothing")


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def to_markdown(state: SessionState) -> str:
    lines = [
        f"# Session {state.session_id}",
        "",
        f"- workspace: `{state.cwd}`",
        f"- model: `{state.model}`",
        f"- mode: {state.mode}",
        f"- saved: {_when(state.saved_at)}",
        "",
    ]
    if state.goal:
        lines += [f"- goal ({state.goal.status}): {state.goal.condition}", ""]
    for message in state.conversation:
        lines.append(f"## {message.role}")
        for block in message.content:
            if isinstance(block, TextBlock):
                lines += [block.text, ""]
            elif isinstance(block, ToolUseBlock):
                lines += [
                    f"**{block.name}** `{block.id}`",
                    "```json",
                    json.dumps(block.input, indent=1, ensure_ascii=False),
                    "```",
                    "",
                ]
            elif isinstance(block, ToolResultBlock):
                tag = "error" if block.is_error else "result"
                lines += [f"{tag} for `{block.tool_use_id}`:", "```", block.content, "```", ""]
    return "\n".join(lines)


def _list(scan, workspace: Path, *, every: bool) -> None:
    if not scan.sessions:
        say("no saved sessions" + ("" if every else f" for {workspace} (try --all)"))
    for s in scan.sessions:
        aside = f"  (an earlier damaged store was moved to {s.moved_aside})" if s.moved_aside else ""
        say(
            f"{s.session_id}  {_when(s.saved_at)}  {s.messages:>5} msgs  {s.model}  {s.cwd}  {s.last_text[:60]!r}{aside}"
        )
    for p in scan.problems:  # their workspace is unknown, so they are named in every listing
        say(f"{p.session_id}  cannot be read: {p.problem}")


def _doctor(store, *, dry_run: bool) -> int:
    from agents.snapshots import check_store

    report = check_store(store, repair=not dry_run)
    for check in report.sessions:
        if check.status not in ("ok", "empty"):
            say(f"{check.session_id}  {check.status}: {check.detail}")
    counts: dict[str, int] = {}
    for check in report.sessions:
        counts[check.status] = counts.get(check.status, 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "none"
    say(f"checked {len(report.sessions)} sessions in {report.root}: {summary}")
    if report.quarantined:
        say(f"{report.quarantined} stores moved aside are kept in {report.root}/.quarantine/ (delete them when done)")
    return 0 if report.healthy else 1


def run_sessions_command(args: argparse.Namespace) -> int:
    from agents.opening import resolve_workspace, snapshot_store
    from agents.settings import load_settings
    from agents.snapshots import SnapshotError, SnapshotNotFound

    workspace = resolve_workspace(args.cwd)
    store = snapshot_store(load_settings(workspace))
    try:
        return _dispatch(args, store, workspace)
    except SnapshotNotFound as exc:
        raise ConfigError(f"{exc}; `workingset sessions list --all` shows the saved sessions") from exc
    except SnapshotError as exc:
        raise ConfigError(str(exc)) from exc
    finally:
        store.close()


def _dispatch(args: argparse.Namespace, store, workspace: Path) -> int:
    if args.action == "list":
        _list(store.scan(None if args.all else workspace), workspace, every=args.all)
    elif args.action == "doctor":
        return _doctor(store, dry_run=args.dry_run)
    elif args.action == "show":
        loaded = store.load(args.id)
        if loaded.problem:
            say(f"warning: {loaded.problem}")
        header = loaded.state.header()
        header["messages"] = len(loaded.state.conversation)
        say(json.dumps({"version": loaded.version, **header}, indent=1, default=str))
    elif args.action == "export":
        loaded = store.load(args.id, args.version)
        if loaded.problem:  # on stderr, so the export itself stays clean
            say(f"warning: {loaded.problem}", file=sys.stderr)
        if args.format == "markdown":
            say(to_markdown(loaded.state))
        else:
            say(loaded.state.model_dump_json(indent=1))
    elif args.action == "history":
        for v in store.history(args.id):
            mark = "*" if v.current else " "
            say(f"{mark} {v.version}  {_when(v.saved_at)}  {v.messages:>5} msgs  {v.reason}")
    elif args.action == "restore":
        version = store.restore(args.id, args.version)
        say(f"session {args.id}: version {args.version} is current again (as {version})")
    return 0
