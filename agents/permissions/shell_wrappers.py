"""Commands that run another command: which words they take, and where the command starts.

A deny rule on `rm` must also see the `rm` in `env FOO=1 nice -n 5 rm x`, in
`find . -exec rm {} ;` and in `bash -c "rm x"`. Each wrapper's options are listed
completely enough to find where its command starts; an option that is not listed, or
an option word that is not a literal, means the command cannot be found, and the line
is then treated as unknowable (a deny rule matches it).

Programs that can run arbitrary commands in other ways (`git -c alias.x=!…`, `make`,
`npm run`, interpreters) are not wrappers here: a deny rule reads the command line, it
does not know what a program does with its arguments. The sandbox is the boundary.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["COMMAND_RUNNERS", "UNKNOWABLE_BUILTINS", "Sink", "Word", "evaluated_variable", "expand_command"]

Word = str | None  # None: a word whose value is not known before it runs (an expansion)

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_%]*=")
_MAX_WRAPPERS = 16


class Sink(Protocol):
    """Where the commands found in a line go (the line reader implements it)."""

    def add(self, words: tuple[Word, ...]) -> None: ...

    def unknowable(self, why: str) -> None: ...

    def nested(self, text: str) -> None:
        """Read `text` as a shell line of its own (a `bash -c` string)."""


@dataclass(frozen=True)
class _Wrapper:
    valued: frozenset[str] = frozenset()  # options followed by a value: "-n", "--signal"
    flags: frozenset[str] = frozenset()  # options without one
    attached: frozenset[str] = frozenset()  # short options whose value, if any, is attached: xargs -i{}
    positional: int = 0  # words between the options and the command (timeout's duration)
    assignments: bool = False  # NAME=value words may precede the command (env, sudo)
    numeric: bool = False  # "-5" is an option (nice)


def _w(valued: str = "", flags: str = "", **kw) -> _Wrapper:
    return _Wrapper(frozenset(valued.split()), frozenset(flags.split()), **kw)


_WRAPPERS: dict[str, _Wrapper] = {
    "env": _w(
        "-u --unset -C --chdir -S --split-string",
        "- -i --ignore-environment -0 --null -v --debug --list-signal-handling "
        "--block-signal --default-signal --ignore-signal",
        assignments=True,
    ),
    "command": _w(flags="-p -v -V"),
    "builtin": _w(),
    "exec": _w("-a", "-c -l"),
    "nice": _w("-n --adjustment", numeric=True),
    "nohup": _w(),
    "time": _w("-f --format -o --output", "-p -a -v -q --append --verbose --quiet --portability"),
    "timeout": _w("-s --signal -k --kill-after", "-v --verbose -f --foreground -p --preserve-status", positional=1),
    "xargs": _w(
        "-a --arg-file -d --delimiter -E -I -L -n --max-args -P --max-procs -s --max-chars --process-slot-var",
        "-0 --null -p --interactive -r --no-run-if-empty -t --verbose -x --exit -o --open-tty --show-limits "
        "--replace --eof --max-lines",
        attached=frozenset({"-i", "-e", "-l"}),
    ),
    "sudo": _w(
        "-u --user -g --group -C --close-from -D --chdir -h --host -p --prompt -r --role -t --type "
        "-T --command-timeout -U --other-user -R --chroot",
        "-A --askpass -b --background -E --preserve-env -H --set-home -i --login -K --remove-timestamp "
        "-k --reset-timestamp -n --non-interactive -P --preserve-groups -S --stdin -s --shell -N --no-update "
        "-B --bell -l --list -v --validate -e --edit",
        assignments=True,
    ),
    "doas": _w("-u -C", "-n -s -L"),
    "stdbuf": _w("-i --input -o --output -e --error"),
    "setsid": _w(flags="-c --ctty -f --fork -w --wait"),
    "ionice": _w("-c --class -n --classdata -p --pid -P --pgid -u --uid", "-t --ignore"),
    "chroot": _w("--userspec --groups", "--skip-chdir", positional=1),
    "coproc": _w(),
    "busybox": _w(),
    "watch": _w(
        "-n --interval -q --equexit",
        "-b --beep -e --errexit -g --chgexit -t --no-title -x --exec -c --color -C --no-color "
        "-p --precise -d --differences -w --no-wrap -r --no-rerun",
    ),
}

# Shells read their commands from a `-c` string, a script file, or standard input.
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "rbash"})

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

# Variables whose value bash runs as code: prompt strings (PS4 is expanded, command
# substitutions included, for every traced command), startup files, exported functions.
_EVALUATED_VARIABLES = frozenset({"PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "BASH_ENV", "ENV"})


def evaluated_variable(name: str) -> bool:
    """Whether assigning `name` hands bash code to run (PS4, BASH_ENV, BASH_FUNC_f%%, …)."""
    return name in _EVALUATED_VARIABLES or name.startswith("BASH_FUNC_")


# First words that, in an allow prefix rule, would allow every command run through them.
COMMAND_RUNNERS = frozenset(_WRAPPERS) | _SHELLS | frozenset(UNKNOWABLE_BUILTINS) | frozenset(
    {"find", "watch", "su", "source", ".", "parallel", "script", "flock", "strace", "ltrace", "unbuffer"}
)


def command_name(word: str) -> str:
    """What a command word names: `/bin/rm` and `./rm` are both `rm`."""
    return word.rsplit("/", 1)[-1] if "/" in word.rstrip("/") else word


def expand_command(words: Sequence[Word], sink: Sink, depth: int = 0) -> None:
    """Add `words` and every command it runs through a wrapper (each layer, so a deny rule
    on `sudo` still sees `sudo rm x`, and one on `rm` sees `rm x`)."""
    words = tuple(words)
    if not words:
        return
    sink.add(words)
    name = words[0]
    if name is None:
        sink.unknowable("the command name is not a literal word")
        return
    name = command_name(name)
    if depth >= _MAX_WRAPPERS:
        sink.unknowable(f"more than {_MAX_WRAPPERS} wrappers around one command")
    elif name in UNKNOWABLE_BUILTINS:
        sink.unknowable(UNKNOWABLE_BUILTINS[name])
    elif name in (".", "source"):
        _source(words, sink)
    elif name in _SHELLS:
        _shell(words, sink)
    elif name == "find":
        _find(words, sink, depth)
    elif name == "su":
        _su(words, sink)
    elif name in _WRAPPERS:
        _wrapped(name, words, sink, depth)


def _wrapped(name: str, words: tuple[Word, ...], sink: Sink, depth: int) -> None:
    parsed = _parse_options(_WRAPPERS[name], words[1:])
    if isinstance(parsed, str):
        sink.unknowable(f"{name} {parsed}")
        return
    start, values = parsed
    rest = words[1 + start :]
    split = next((k for k in ("-S", "--split-string") if k in values), None)
    if name == "env" and split is not None:
        _as_shell_text(values[split], rest, sink, "env -S")
    elif name == "watch" and not ("-x" in values or "--exec" in values):
        _as_shell_text(None if any(w is None for w in rest) else "", rest, sink, "watch")
    else:
        expand_command(_xargs_command(values, rest) if name == "xargs" else rest, sink, depth + 1)


def _as_shell_text(head: str | None, rest: tuple[Word, ...], sink: Sink, what: str) -> None:
    """env -S and watch hand their words, joined by spaces, to a shell-like split."""
    if head is None or any(w is None for w in rest):
        sink.unknowable(f"{what} runs text that is not a literal")
    else:
        sink.nested(" ".join([head, *(w for w in rest if w is not None)]).strip())


def _xargs_command(values: dict[str, str | None], rest: tuple[Word, ...]) -> tuple[Word, ...]:
    """xargs fills in words from its input: where the replace string stands (-I), or after
    the command; those words are known only at run time."""
    replace = next((values[k] for k in ("-I", "-i", "--replace") if k in values), None)
    if replace is None:
        return (*rest, None) if rest else rest
    return tuple(None if w is None or replace in w else w for w in rest)


def _parse_options(spec: _Wrapper, words: Sequence[Word]) -> tuple[int, dict[str, str | None]] | str:
    """Index of the first word after the wrapper's options, and the options' values; or
    what made the options unreadable."""
    values: dict[str, str | None] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word is None:
            return "has an option word that is not a literal"
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or (word == "-" and "-" not in spec.flags):
            break
        taken = _option(spec, word, words[i + 1] if i + 1 < len(words) else None, values)
        if taken is None:
            return f"has an option it is not known to take: {word}"
        i += taken
    while spec.assignments and i < len(words):
        word = words[i]
        if word is None or not _ASSIGNMENT.match(word):
            break
        name = word.partition("=")[0]
        if evaluated_variable(name):
            return f"sets {name}, which bash runs as code"
        i += 1
    if i + spec.positional > len(words) or any(w is None for w in words[i : i + spec.positional]):
        return "has a word before its command that is not a literal"
    return i + spec.positional, values


def _option(spec: _Wrapper, word: str, following: Word, values: dict[str, str | None]) -> int | None:
    """How many words option `word` takes (1 or 2), recording its value; None if unknown."""
    if word.startswith("--"):
        key, eq, value = word.partition("=")
        if key in spec.valued:
            if eq:
                values[key] = value
                return 1
            values[key] = following
            return 2
        if key in spec.flags:
            values[key] = value if eq else ("{}" if key == "--replace" else None)
            return 1
        return None
    if spec.numeric and word[1:].isdigit():
        return 1
    for j in range(1, len(word)):
        opt = "-" + word[j]
        rest = word[j + 1 :]
        if opt in spec.valued:
            values[opt] = rest if rest else following
            return 1 if rest else 2
        if opt in spec.attached:
            values[opt] = rest or ("{}" if opt == "-i" else "")
            return 1
        if opt not in spec.flags and word != "-":
            return None
        values.setdefault(opt, None)
    return 1


def _shell(words: tuple[Word, ...], sink: Sink) -> None:
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
        sink.unknowable("a shell's command string or script is not a literal")
    elif command_mode:
        if script is None:
            sink.unknowable("a shell's -c string is not a literal")
        else:
            sink.nested(script)
    elif stdin_mode or i >= len(words) or str(words[i]).startswith(("/dev/", "/proc/")):
        sink.unknowable("a shell reads its commands from standard input")


def _source(words: tuple[Word, ...], sink: Sink) -> None:
    target = words[1] if len(words) > 1 else None
    if target is None or target.startswith(("/dev/", "/proc/")):
        sink.unknowable("source reads commands from a place that is not a plain file")


def _find(words: tuple[Word, ...], sink: Sink, depth: int) -> None:
    i = 1
    while i < len(words):
        if words[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(i + 1, len(words)) if words[j] in (";", "+")), len(words))
            # `{}` becomes a file name when find runs the command.
            command = tuple(None if w is None or "{}" in w else w for w in words[i + 1 : end])
            expand_command(command, sink, depth + 1)
            i = end
        i += 1


def _su(words: tuple[Word, ...], sink: Sink) -> None:
    """su runs a shell: its -c string is read as a line, and without one the shell reads
    standard input."""
    for i, word in enumerate(words[1:], start=1):
        if word in ("-c", "--command"):
            following = words[i + 1] if i + 1 < len(words) else None
            if following is None:
                break
            sink.nested(following)
            return
        if word is not None and word.startswith("--command="):
            sink.nested(word.partition("=")[2])
            return
    sink.unknowable("su runs a shell whose commands are not in the line")
