"""The interactive REPL: plain lines go to the agent, `/commands` to the harness.

A parked permission is asked here; after a reply in plan mode the user approves the
plan (back to Default, implement it), keeps planning, or discards it. What it prints
that a model, a provider or a stored session wrote goes out through `say`, revealed (agents.visible).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from agents.errors import ModelError, WorkingsetError
from agents.modes import Mode
from agents.session import Session, SessionHandle, TurnOutcome
from cluster.terminal._console import ask_line, console_approver, say, settle_parked
from cluster.terminal._tree_view import TreeWatch

__all__ = ["SLASH_COMMANDS", "Repl", "run_repl"]


@dataclass
class Repl:
    """What a slash command works on: the session, and the subagent trees seen so far."""

    session: SessionHandle
    trees: TreeWatch | None = None  # None: nothing follows the events (the JSON renderer)


SlashHandler = Callable[[Repl, str], Awaitable[bool]]  # returns False to leave the REPL

APPROVED_PLAN = "The user approved the plan above. Implement it now, then verify it."
CANCELLED = (
    "turn cancelled; the conversation is kept (a tool call that had started may have taken effect, "
    "and its result says so)"
)

T = TypeVar("T")


async def converse(session: SessionHandle, text: str) -> TurnOutcome | None:
    """One user input to its end: permissions asked, plan approval offered. Ctrl-C
    cancels the turn (the conversation is kept) instead of leaving the REPL."""
    try:
        outcome = await _cancellable(_answered_turn(session, text))
    except ModelError as exc:
        say(f"model error: {exc}")
        return None
    if outcome is None:
        print(f"[{CANCELLED}]")
        return None
    if outcome.reason != "end_turn":
        say(f"[stopped: {outcome.reason}{' — ' + outcome.detail if outcome.detail else ''}]")
    if session.mode is Mode.PLAN and outcome.reason == "end_turn":
        return await _offer_plan_approval(session) or outcome
    return outcome


async def _answered_turn(session: SessionHandle, text: str) -> TurnOutcome | None:
    return await settle_parked(session, console_approver, await session.run_turn(text))


async def _cancellable(work: Coroutine[Any, Any, T]) -> T | None:
    """Run `work`; Ctrl-C cancels it (None) instead of ending the REPL."""
    task = asyncio.ensure_future(work)
    with _ctrl_c_cancels(task):
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:  # the REPL itself is being cancelled
            task.cancel()
            raise
    return None if task.cancelled() else task.result()


@contextlib.contextmanager
def _ctrl_c_cancels(task: asyncio.Future) -> Iterator[None]:
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGINT)
    try:
        loop.add_signal_handler(signal.SIGINT, task.cancel)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread: Ctrl-C keeps its meaning
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        signal.signal(signal.SIGINT, previous)


async def _offer_plan_approval(session: SessionHandle) -> TurnOutcome | None:
    line = await ask_line("Plan: [a]pprove and implement / [k]eep planning / [d]iscard: ")
    choice = (line or "k").strip().lower()[:1]
    if choice == "a":
        session.set_mode(Mode.DEFAULT)
        return await converse(session, APPROVED_PLAN)
    if choice == "d":
        session.set_mode(Mode.DEFAULT)
        print("plan discarded; back to default mode")
    return None


async def _help(repl: Repl, arg: str) -> bool:
    for name, (_, summary) in sorted(SLASH_COMMANDS.items()):
        print(f"  /{name:<10} {summary}")
    return True


async def _exit(repl: Repl, arg: str) -> bool:
    return False


async def _compact(repl: Repl, arg: str) -> bool:
    session = repl.session
    result = await session.compact_now(arg or None)
    if result.failure:
        say(f"compaction failed, history unchanged: {result.failure}")
    else:
        event = result.events[-1]
        print(
            f"compacted: {event.messages_summarized} messages summarized, {event.tokens_before} → {event.tokens_after} tokens"
        )
    return True


async def _plan(repl: Repl, arg: str) -> bool:
    session = repl.session
    session.set_mode(Mode.PLAN)
    print("plan mode: read-only tools; the plan is offered for approval after each reply")
    if arg:
        await converse(session, arg)
    return True


async def _goal(repl: Repl, arg: str) -> bool:
    session = repl.session
    if not arg:
        goal = session.goal
        say(f"goal ({goal.status}, {goal.auto_turns} auto turns): {goal.condition}" if goal else "no goal set")
    elif arg == "clear":
        session.set_goal(None)
        print("goal cleared")
    else:
        session.set_goal(arg)
        say(f"goal set: {arg}")
    return True


async def _clear(repl: Repl, arg: str) -> bool:
    session = repl.session
    await session.clear()
    how = "/resume returns to it" if isinstance(session, Session) else "`workingset sessions history ID` lists it"
    print(f"conversation cleared (the previous one stays in the session's history; {how})")
    return True


async def _resume(repl: Repl, arg: str) -> bool:
    session = repl.session
    if not isinstance(session, Session) or session.ports.snapshots is None:
        print("/resume works in a --local session; on Ray, start again with --resume ID")
        return True
    store = session.ports.snapshots
    target = arg or session.session_id
    try:
        loaded = await store.aload(target)
        if not loaded.state.conversation and loaded.state.cleared_from is not None:
            # the latest version is a /clear: return to the conversation before it
            say(f"the latest version of {target} is a /clear; resuming the conversation before it")
            loaded = await store.aload(target, loaded.state.cleared_from)
    except WorkingsetError as exc:
        say(f"cannot resume {target}: {exc}")
        return True
    if loaded.problem:
        say(f"warning: {loaded.problem}")
    session.restore(loaded.state.model_copy(update={"session_id": session.session_id}))
    session.saved_version = loaded.version if target == session.session_id else None
    say(f"resumed {target} (version {loaded.version}): {len(session.conversation)} messages, mode {session.mode.value}")
    await settle_parked(session, console_approver)
    return True


async def _tree(repl: Repl, arg: str) -> bool:
    say(repl.trees.render() if repl.trees is not None else "/tree needs the terminal view (not --json)")
    return True


SLASH_COMMANDS: dict[str, tuple[SlashHandler, str]] = {
    "help": (_help, "list the commands"),
    "exit": (_exit, "leave the session"),
    "compact": (_compact, "summarize older history now, keeping the last 2 messages [focus]"),
    "plan": (_plan, "enter plan mode (read-only tools) [prompt]"),
    "goal": (_goal, "show the goal; /goal COND sets it; /goal clear ends it"),
    "clear": (_clear, "start an empty conversation (saved; the old one stays in history)"),
    "resume": (_resume, "load the latest snapshot of this session, or of session ID [ID]"),
    "tree": (_tree, "show the subagents of the fan-out under way, or of the last one: state, calls, tokens, cost"),
}


async def _dispatch(repl: Repl, line: str) -> bool:
    name, _, arg = line[1:].partition(" ")
    entry = SLASH_COMMANDS.get(name)
    if entry is None:
        say(f"unknown command /{name}; /help lists the commands")
        return True
    return await entry[0](repl, arg.strip())


async def run_repl(session: SessionHandle, trees: TreeWatch | None = None) -> int:
    """Read lines until /exit or end of input; `trees` (the renderer's) answers /tree."""
    repl = Repl(session, trees)
    session.announce_start()
    print("Workingset REPL · /help for commands · /exit or Ctrl-D to leave")
    await settle_parked(session, console_approver)  # a call parked before a resume is asked first
    last_text = ""
    while True:
        line = await ask_line("› ")
        if line is None:
            break
        line = line.strip()
        if not line:
            continue
        if line.startswith("/"):
            if not await _dispatch(repl, line):
                break
            continue
        outcome = await converse(session, line)
        if outcome is not None:
            last_text = outcome.final_text
    session.announce_end("user_exit", last_text)
    return 0
