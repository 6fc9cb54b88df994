"""The interactive REPL: plain lines go to the agent, `/commands` to the harness."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from agents.errors import ModelError
from agents.loop import Session

__all__ = ["SLASH_COMMANDS", "run_repl"]

SlashHandler = Callable[[Session, str], Awaitable[bool]]  # returns False to leave the REPL


async def _help(session: Session, arg: str) -> bool:
    for name, (_, summary) in sorted(SLASH_COMMANDS.items()):
        print(f"  /{name:<10} {summary}")
    return True


async def _exit(session: Session, arg: str) -> bool:
    return False


async def _compact(session: Session, arg: str) -> bool:
    result = await session.compact_now(arg or None)
    if result.failure:
        print(f"compaction failed, history unchanged: {result.failure}")
    else:
        event = result.events[-1]
        print(
            f"compacted: {event.messages_summarized} messages summarized, "
            f"{event.tokens_before} → {event.tokens_after} tokens"
        )
    return True


SLASH_COMMANDS: dict[str, tuple[SlashHandler, str]] = {
    "help": (_help, "list the commands"),
    "compact": (_compact, "summarize older history now, keeping the last 2 messages [focus]"),
    "exit": (_exit, "leave the session"),
}


async def _read_line(prompt: str) -> str | None:
    try:
        return await asyncio.to_thread(input, prompt)
    except EOFError:
        return None


async def _dispatch(session: Session, line: str) -> bool:
    name, _, arg = line[1:].partition(" ")
    entry = SLASH_COMMANDS.get(name)
    if entry is None:
        print(f"unknown command /{name}; /help lists the commands")
        return True
    return await entry[0](session, arg.strip())


async def run_repl(session: Session) -> int:
    session.announce_start()
    print("Workingset REPL · /help for commands · /exit or Ctrl-D to leave")
    last_text = ""
    while True:
        line = await _read_line("› ")
        if line is None:
            break
        line = line.strip()
        if not line:
            continue
        if line.startswith("/"):
            if not await _dispatch(session, line):
                break
            continue
        try:
            outcome = await session.run_turn(line)
            last_text = outcome.final_text
        except ModelError as exc:
            print(f"model error: {exc}")
    session.announce_end("user_exit", last_text)
    return 0
