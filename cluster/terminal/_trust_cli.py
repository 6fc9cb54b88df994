"""Trusting workspaces: `workingset trust [PATH] | trust --list | untrust [PATH]`, and the
question `run` asks the first time an untrusted workspace wants settings of its own.

A trusted workspace's `.workingset/` (settings, plugins, hooks, MCP servers) applies in
full; see agents.settings._trust for the list and agents.settings._workspace for what an untrusted
one may still set. Every error a user can cause is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agents.errors import ConfigError
from agents.settings import LoadedSettings, TrustList
from cluster.terminal._console import say

__all__ = ["add_trust_parsers", "ask_trust", "run_trust_command", "settle_trust"]

EXIT_OK, EXIT_USAGE = 0, 2


def add_trust_parsers(subparsers: argparse._SubParsersAction) -> None:
    trust = subparsers.add_parser(
        "trust", help="trust a workspace: its own .workingset/ settings, plugins, hooks and MCP servers apply"
    )
    trust.add_argument("path", nargs="?", help="the workspace (default: .)")
    trust.add_argument("--list", action="store_true", help="list the trusted workspaces")
    untrust = subparsers.add_parser("untrust", help="stop trusting a workspace")
    untrust.add_argument("path", nargs="?", default=".", help="the workspace (default: .)")


def _list(trust_list: TrustList) -> int:
    entries = trust_list.entries()
    if not entries:
        print("No trusted workspaces; trust one with `workingset trust PATH`.")
    for entry in entries:
        missing = "" if entry.path.is_dir() else "  (missing)"
        say(f"{entry.path}  trusted {entry.trusted_at}{missing}")
    return EXIT_OK


def _trust(trust_list: TrustList, path: str) -> int:
    workspace = Path(path).expanduser()
    if not workspace.is_dir():
        raise ConfigError(f"{path} is not an existing directory; give the workspace to trust")
    workspace = workspace.resolve()
    if trust_list.trust(workspace):
        say(
            f"Trusted {workspace}: its .workingset/ settings, plugins, hooks and MCP servers now apply "
            f"(undo: workingset untrust {workspace})"
        )
    else:
        say(f"{workspace} is already trusted")
    return EXIT_OK


def _untrust(trust_list: TrustList, path: str) -> int:
    workspace = Path(path).expanduser().resolve()
    if trust_list.untrust(workspace):
        say(f"{workspace} is no longer trusted: only inert settings of its .workingset/config.toml apply")
    else:
        say(f"{workspace} was not trusted")
    return EXIT_OK


def run_trust_command(args: argparse.Namespace) -> int:
    trust_list = TrustList.for_user()
    try:
        if args.command == "untrust":
            return _untrust(trust_list, args.path)
        if args.list:
            if args.path is not None:
                raise ConfigError("give a PATH to trust or --list, not both")
            return _list(trust_list)
        return _trust(trust_list, args.path or ".")
    except ConfigError as exc:
        say(f"workingset: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def ask_trust(loaded: LoadedSettings) -> str:
    """Ask whether to trust the workspace: "y" (and remember), "o" (this run) or "n".
    End of input answers n."""
    say(
        f"\nWorkspace {loaded.workspace} is not trusted; its .workingset/ or Claude Code files ask for what only "
        "a trusted one gets:"
    )
    if loaded.ignored:
        say(f"  settings in .workingset/config.toml: {', '.join(loaded.ignored)}")
    if loaded.plugins:
        say(f"  plugins in .workingset/plugins: {', '.join(loaded.plugins)}")
    if loaded.problem:
        say(f"  (and its config cannot be used: {loaded.problem})")
    for withheld in loaded.claude.withheld:
        say(f"  Claude Code settings: {withheld}")
    while True:
        try:
            line = input("Trust it? [y]es, and remember / [o]nce, this run / [n]o, ignore them: ")
        except EOFError:
            return "n"
        choice = line.strip().lower()[:1]
        if choice in ("y", "o", "n"):
            return choice


def settle_trust(loaded: LoadedSettings, reload, interactive: bool) -> LoadedSettings:
    """The settings `run` uses: if an untrusted workspace asked for more and someone is at
    the terminal, ask; `reload(trusted)` loads again. An answer of y is remembered."""
    if not loaded.asks_for_more or not interactive:
        return loaded
    choice = ask_trust(loaded)
    if choice == "n":
        return loaded
    if choice == "y":
        TrustList.for_user().trust(loaded.workspace)
    return reload(True)
