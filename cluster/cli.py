"""The `workingset` command line.

    workingset run "PROMPT" [--cwd DIR] [--model SPEC] [--max-turns N] [--json]
    workingset run            (no prompt: interactive REPL)

Every error a user can cause ends in one line naming the problem and the fix, exit 2.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from agents.assembly import build_session, resolve_workspace
from agents.config import load_settings
from agents.errors import ConfigError, ModelError, WorkingsetError
from agents.loop import Session
from cluster.render import HumanRenderer, JsonRenderer
from cluster.repl import run_repl

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="workingset", description="A harness for long-running coding agents.")
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run an agent on a prompt, or open a REPL without one")
    run.add_argument("prompt", nargs="?", help="the task; omit for an interactive session")
    run.add_argument("--cwd", default=".", help="workspace directory (default: .)")
    run.add_argument("--model", help="model spec: anthropic:<model> or scripted:<file>")
    run.add_argument("--max-turns", type=int, help="model calls allowed for the prompt")
    run.add_argument("--json", action="store_true", help="print one JSON event per line")
    run.add_argument("--summarizer", help="summarizer spec: extractive (default) or a model spec")
    run.add_argument("--strategy", help="compaction strategy (default: clear-then-summarize)")
    run.add_argument("--trace-dir", help="write every compiled working set to this directory")
    return parser


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    flags: dict[str, Any] = {}
    if args.model:
        flags["model"] = args.model
    if args.max_turns is not None:
        flags["agent"] = {"max_turns": args.max_turns}
    if args.summarizer:
        flags["summarizer"] = {"spec": args.summarizer}
    if args.strategy:
        flags["compact"] = {"strategy": args.strategy}
    if args.trace_dir:
        flags["trace_dir"] = args.trace_dir
    return flags


async def _run_prompt(session: Session, prompt: str) -> int:
    session.announce_start()
    try:
        outcome = await session.run_turn(prompt)
    except ModelError as exc:
        session.announce_end("error", "", error=f"{type(exc).__name__}: {exc}")
        return EXIT_FAILED
    session.announce_end(outcome.reason, outcome.final_text)
    return EXIT_OK if outcome.reason == "end_turn" else EXIT_FAILED


def _run_command(args: argparse.Namespace) -> int:
    workspace = resolve_workspace(args.cwd)
    settings = load_settings(workspace, _overrides(args))
    renderer = JsonRenderer() if args.json else HumanRenderer()
    session = build_session(settings, workspace, emit=renderer)
    if args.prompt is None:
        return asyncio.run(run_repl(session))
    return asyncio.run(_run_prompt(session, args.prompt))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["run", *(argv or [])])
    try:
        return _run_command(args)
    except ConfigError as exc:
        print(f"workingset: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except WorkingsetError as exc:
        print(f"workingset: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("workingset: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
