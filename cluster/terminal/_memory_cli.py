"""`workingset memory list|show NAME|rm NAME [--cwd DIR]`: inspect and prune project memory.

Records are plain markdown files; this command shows where they are, prints one, or
removes one. Every error a user can cause is one line on stderr and exit code 2. The
agent writes the records, so what is printed from them is revealed (`say`).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from agents.errors import WorkingsetError
from cluster.terminal._console import say

if TYPE_CHECKING:  # the store loads when the command runs, not with the parser
    from agents.sources import MemoryRecord, MemoryStore

__all__ = ["add_memory_parser", "run_memory_command"]

EXIT_OK, EXIT_USAGE = 0, 2


def add_memory_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add `memory` (with list / show NAME / rm NAME) to the CLI's subparsers."""
    memory = subparsers.add_parser("memory", help="list, show or remove this project's memory records")
    memory.add_argument("--cwd", default=".", help="workspace whose memory to use (default: .)")
    # --cwd is also accepted after the subcommand; SUPPRESS keeps it from resetting the value.
    cwd = argparse.ArgumentParser(add_help=False)
    cwd.add_argument("--cwd", default=argparse.SUPPRESS, help="workspace whose memory to use (default: .)")
    sub = memory.add_subparsers(dest="memory_command")
    sub.add_parser("list", parents=[cwd], help="list records: name, type, description (default)")
    show = sub.add_parser("show", parents=[cwd], help="print one record")
    show.add_argument("name", help="record name, as `memory list` shows it")
    rm = sub.add_parser("rm", parents=[cwd], help="delete one record")
    rm.add_argument("name", help="record name, as `memory list` shows it")
    memory.set_defaults(run=run_memory_command)
    return memory


def _store(cwd: str) -> MemoryStore:
    from agents.opening import resolve_workspace
    from agents.settings import load_settings
    from agents.sources import MemoryStore

    workspace = resolve_workspace(cwd)
    return MemoryStore(workspace, load_settings(workspace).home)


def _list(store: MemoryStore) -> int:
    records, problems = store.list()
    say(f"Memory of {store.workspace}: {store.directory}")
    if not records:
        say("No memory records yet.")
    width = max((len(r.name) for r in records), default=0)
    for r in records:
        say(f"  {r.name:<{width}}  {r.type:<9}  {r.updated.date().isoformat()}  {r.description}")
    for problem in problems:
        say(f"workingset: warning: skipped {problem}", file=sys.stderr)
    return EXIT_OK


def _show(record: MemoryRecord) -> int:
    say(f"{record.name} ({record.type}): {record.description}")
    say(f"created {record.created.isoformat()}, updated {record.updated.isoformat()}")
    say(f"file: {record.path}")
    print()
    say(record.body)
    return EXIT_OK


def run_memory_command(args: argparse.Namespace) -> int:
    """Run `memory list|show|rm`; 0 on success, 2 with one line on stderr otherwise."""
    command = getattr(args, "memory_command", None) or "list"
    try:
        store = _store(getattr(args, "cwd", "."))
        if command == "list":
            return _list(store)
        if command == "show":
            return _show(store.show(args.name))
        if command == "rm":
            if not store.delete(args.name):
                raise store.not_found(args.name)
            say(f"Deleted memory record {args.name} ({store.path_for(args.name)})")
            return EXIT_OK
        raise WorkingsetError(f"unknown memory command {command!r}; use list, show NAME or rm NAME")
    except WorkingsetError as exc:
        say(f"workingset: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
