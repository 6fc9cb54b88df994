"""Commands that run other commands: finding every command a line runs, layer by layer.

A deny rule on `rm` must also see the `rm` in `env FOO=1 nice -n 5 rm x`, in
`flock /tmp/l rm x`, in `find . -exec rm {} ;`, in `bash -c "rm x"`, in `ssh host rm x`
and in `git -c alias.x='!rm x' x`. `expand_command` adds a command and then whatever it
runs, again and again: shells and `source` here, git in git_runs, and every other program
that runs commands in runner_table, whose entries list each one's options and say where
its command is. What cannot be known from the line (an option not listed, a shell reading
standard input, Tcl or gdb code, a git subcommand that may be an alias) makes the line
unknowable: a deny rule then matches it.

What a program does with files it reads (a script, a Makefile, a git config file, an
interpreter's code) is not read: a deny rule reads the command line; the sandbox is the
boundary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from agents.permissions.git_runs import git_runs
from agents.permissions.runner_spec import Argv, Run, Text, Unknown, Word
from agents.permissions.runner_table import RUNNERS
from agents.permissions.shell_variables import SHELLS

__all__ = ["COMMAND_RUNNERS", "UNKNOWABLE_BUILTINS", "Sink", "Word", "command_name", "expand_command"]

_MAX_WRAPPERS = 16


class Sink(Protocol):
    """Where the commands found in a line go (the line reader implements it)."""

    def add(self, words: tuple[Word, ...], depth: int) -> None:
        """A command of the line (`depth` 0) or one a runner runs (`depth` > 0)."""

    def unknowable(self, why: str) -> None: ...

    def line(self, text: str) -> None:
        """Read `text`, which a runner hands to a shell, as a line of its own."""


# Builtins that run text as commands, or change what a later command name means.
UNKNOWABLE_BUILTINS: dict[str, str] = {
    "eval": "eval runs text as a command",
    "let": "let evaluates its words as arithmetic, which can run commands",
    "alias": "alias changes what a command name means",
    "trap": "trap runs text as a command later",
    "hash": "hash can map a command name to another program",
    "enable": "enable can load or turn off builtins",
    "fc": "fc re-runs earlier commands",
    "compgen": "compgen can run a command",
    "complete": "complete can run a command",
    "bind": "bind can run a command",
    "mapfile": "mapfile can run a callback",
    "readarray": "readarray can run a callback",
}

# First words that, in an allow prefix rule, would allow every command run through them.
COMMAND_RUNNERS = frozenset(RUNNERS) | SHELLS | frozenset(UNKNOWABLE_BUILTINS) | frozenset({"find", "source", "."})


def command_name(word: str) -> str:
    """What a command word names: `/bin/rm` and `./rm` are both `rm`."""
    return word.rsplit("/", 1)[-1] if "/" in word.rstrip("/") else word


def expand_command(words: Sequence[Word], sink: Sink, depth: int = 0) -> None:
    """Add `words` and every command it runs (each layer, so a deny rule on `sudo` still
    sees `sudo rm x`, and one on `rm` sees `rm x`)."""
    words = tuple(words)
    if not words:
        return
    sink.add(words, depth)
    name = words[0]
    if name is None:
        sink.unknowable("the command name is not a literal word")
        return
    name = command_name(name)
    if depth >= _MAX_WRAPPERS:
        sink.unknowable(f"more than {_MAX_WRAPPERS} wrappers around one command")
        return
    for run in _runs(name, words):
        if isinstance(run, Argv):
            expand_command(run.words, sink, depth + 1)
        elif isinstance(run, Unknown):
            sink.unknowable(run.why)
        elif run.text is None:
            sink.unknowable(f"{name} runs shell text that is not a literal")
        else:
            sink.line(run.text)


def _runs(name: str, words: tuple[Word, ...]) -> list[Run]:
    """What command `words` (named `name`) runs."""
    if name in UNKNOWABLE_BUILTINS:
        return [Unknown(UNKNOWABLE_BUILTINS[name])]
    if name in (".", "source"):
        return _source(words)
    if name in SHELLS:
        return _shell(words)
    if name == "find":
        return _find(words)
    if name == "git":
        return git_runs(words[1:])
    runner = RUNNERS.get(name)
    return runner.runs(name, words[1:]) if runner is not None else []


def _shell(words: tuple[Word, ...]) -> list[Run]:
    """`bash -c STRING` is read as a line of its own; a shell reading a script file runs
    what the file says (not knowable here, like any program); one reading its standard
    input (no arguments, `-s`, or a here-document) runs text nobody can see in the line."""
    command_mode = stdin_mode = False
    i = 1
    while i < len(words):
        word = words[i]
        if word is None:
            break
        if word in ("--", "-"):
            i += 1
            break
        if word in ("--rcfile", "--init-file"):
            i += 2
            continue
        if not word.startswith(("-", "+")):
            break
        if not word.startswith("--"):
            command_mode |= "c" in word
            stdin_mode |= "s" in word
            i += 1 + sum(word.count(o) for o in "oO")  # -o / -O take the next word
            continue
        i += 1
    script = words[i] if i < len(words) else None
    if i < len(words) and script is None:
        return [Unknown("a shell's command string or script is not a literal")]
    if command_mode:
        return [Text(script)] if script is not None else [Unknown("a shell's -c string is not a literal")]
    if stdin_mode or i >= len(words) or str(words[i]).startswith(("/dev/", "/proc/")):
        return [Unknown("a shell reads its commands from standard input")]
    return []


def _source(words: tuple[Word, ...]) -> list[Run]:
    target = words[1] if len(words) > 1 else None
    if target is None or target.startswith(("/dev/", "/proc/")):
        return [Unknown("source reads commands from a place that is not a plain file")]
    return []


def _find(words: tuple[Word, ...]) -> list[Run]:
    runs: list[Run] = []
    i = 1
    while i < len(words):
        if words[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(i + 1, len(words)) if words[j] in (";", "+")), len(words))
            # `{}` becomes a file name when find runs the command.
            runs.append(Argv(tuple(None if w is None or "{}" in w else w for w in words[i + 1 : end])))
            i = end
        i += 1
    return runs
