"""The `workingset` command line.

    workingset run "PROMPT" [--cwd DIR] [--model SPEC] [--max-turns N] [--json] ...
    workingset run            (no prompt: interactive REPL)
    workingset trust [PATH] | trust --list | untrust [PATH]

Every error a user can cause ends in one line naming the problem and the fix, exit 2;
a run whose calls were denied because nobody could answer exits 3, saying so. A line
that carries text from outside (an error naming a file, a provider's message) is
printed revealed (cluster.terminal._console.say); events go through cluster.terminal._render.

Building the parser imports no SDK, no Ray and no agent loop: `--help` and a usage
error cost a fraction of a second. Each command imports what it needs when it runs
(`run`: cluster.terminal._run_command; `eval` and `bench`: their entry points' run()).
tests/cluster/cli/test_startup_imports.py keeps it so.
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import sys

from agents.errors import ConfigError, WorkingsetError
from agents.modes import Mode
from cluster.terminal._console import say
from cluster.terminal._flags import add_setting_flags, add_trust_flag
from cluster.terminal._memory_cli import add_memory_parser
from cluster.terminal._sessions_cli import add_sessions_parser
from cluster.terminal._trust_cli import add_trust_parsers

__all__ = ["main"]

EXIT_FAILED, EXIT_USAGE = 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="workingset", description="A harness for long-running coding agents.")
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run an agent on a prompt, or open a REPL without one")
    run.add_argument("prompt", nargs="?", help="the task; omit for an interactive session")
    run.add_argument("--cwd", default=".", help="workspace directory (default: .)")
    run.add_argument("--json", action="store_true", help="print one JSON event per line")
    run.add_argument("--mode", choices=[m.value for m in Mode], default="default", help="start in this mode")
    run.add_argument("--goal", help="a completion condition an independent judge checks")
    resume = run.add_mutually_exclusive_group()
    resume.add_argument("--resume", metavar="ID", help="continue a saved session")
    resume.add_argument(
        "--continue", dest="continue_latest", action="store_true", help="continue the latest session of this workspace"
    )
    add_setting_flags(run, "run")
    add_trust_flag(run)
    add_sessions_parser(sub)
    add_memory_parser(sub)
    add_trust_parsers(sub)
    for name, command in extra_commands().items():
        command.add_parser(sub)
        sub.choices[name].set_defaults(extra_command=name)
    return parser


@functools.cache
def extra_commands() -> dict:
    """Subcommands registered in the `workingset.commands` entry point group."""
    found = {}
    for ep in importlib.metadata.entry_points(group="workingset.commands"):
        try:
            found[ep.name] = ep.load()
        except ImportError:
            continue  # a command whose module is not installed is simply absent
    return found


def _run_command(args: argparse.Namespace) -> int:
    if getattr(args, "extra_command", None):
        return extra_commands()[args.extra_command].run(args)
    if args.command == "sessions":
        from cluster.terminal._sessions_cli import run_sessions_command

        return run_sessions_command(args)
    if args.command == "memory":
        from cluster.terminal._memory_cli import run_memory_command

        return run_memory_command(args)
    if args.command in ("trust", "untrust"):
        from cluster.terminal._trust_cli import run_trust_command

        return run_trust_command(args)
    from cluster.terminal._run_command import run_command

    return run_command(args)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["run", *(argv or [])])
    stdout = sys.stdout  # a --json command claims it (cluster.terminal._console.claim_stdout); given back here
    try:
        return _run_command(args)
    except ConfigError as exc:
        say(f"workingset: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except WorkingsetError as exc:
        say(f"workingset: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("workingset: interrupted", file=sys.stderr)
        return 130
    finally:
        sys.stdout = stdout


if __name__ == "__main__":
    sys.exit(main())
