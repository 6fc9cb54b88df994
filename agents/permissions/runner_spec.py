"""How a program that runs other commands is read: its options, and what it runs.

A runner (`nice`, `flock`, `su`, `ssh` …) is described by a `Runner`: the options its
manual lists, written the way the manual writes them (`-w,--wait,--timeout=` takes a
value, `-m,--mount[=]` takes one only when attached, `--bind=2` takes two words), and a
finder that says where its command is once the options are read. Options are read the
way GNU getopt reads them: clustered short options (`-cp`), a value attached or in the
next word, long options by any unambiguous prefix, `--` ending the options, and, for a
program that permutes, options after its operands (`script out.log -c CMD`).

What a runner runs comes back as `Run` values:

    Argv(words)   a command and its arguments (read again: it may be a runner too)
    Text(text)    shell text (`su -c STRING`, `watch CMD`, `ssh host CMD`); None when
                  the text is not a literal
    Unknown(why)  something that cannot be known from the line (a shell reading its
                  standard input, an option the table does not list, Tcl code)

The reading fails closed: an option the table does not list, a word that is not a
literal where an option may be, or a value that is missing makes the line unknowable
(a deny rule then matches it). Where a program's reading is not known for sure (whether
it permutes, whether a number is a priority or the command), every reading is taken:
seeing a command that will not run only makes a deny rule deny more.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = [
    "Argv",
    "Options",
    "Parsed",
    "Run",
    "Runner",
    "Text",
    "Unknown",
    "Word",
    "command",
    "options",
    "read_options",
]

Word = str | None  # None: a word whose value is not known before it runs (an expansion)

_OPTIONAL = -1  # a value only when attached: `-m,--mount[=]`
_ITEM = re.compile(r"^(?P<names>[^=\[]+?)(?P<arity>\[=\]|=\d*)?$")
_NUMERIC = re.compile(r"^-[-+]?\d+$")  # nice -5, nice --5


@dataclass(frozen=True)
class Argv:
    words: tuple[Word, ...]


@dataclass(frozen=True)
class Text:
    text: Word


@dataclass(frozen=True)
class Unknown:
    why: str


Run = Argv | Text | Unknown


@dataclass(frozen=True)
class Options:
    """A program's options: name -> (canonical name, how many words of value)."""

    names: dict[str, tuple[str, int]]
    permute: bool | None = False  # GNU getopt without "+": options may follow operands; None: not known
    numeric: bool = False  # `-5` is an option (nice)
    single_words: bool = False  # every option is one word, `--name=value` (valgrind)
    abbreviate: bool = True  # long options by a unique prefix (getopt_long; bwrap does not)


def options(spec: str = "", **kw) -> Options:
    """Options written as the manual lists them: `-w,--wait,--timeout=` (a value, attached
    or in the next word), `-m,--mount[=]` (a value only when attached), `--bind=2` (two
    words), `-s,--shared` (none). The first name is the one finders ask for."""
    names: dict[str, tuple[str, int]] = {}
    for item in spec.split():
        match = _ITEM.match(item)
        if match is None:
            raise ValueError(f"bad option item {item!r}")
        arity = match.group("arity")
        words = 0 if arity is None else _OPTIONAL if arity == "[=]" else int(arity[1:] or 1)
        aliases = match.group("names").split(",")
        for name in aliases:
            names[name] = (aliases[0], words)
    return Options(names, **kw)


@dataclass(frozen=True)
class Parsed:
    values: dict[str, list[str]]  # canonical option -> its values ("" for an option without one)
    operands: tuple[Word, ...]  # the words that are not options, in order

    def has(self, *names: str) -> bool:
        return any(n in self.values for n in names)


def read_options(spec: Options, words: Sequence[Word], permute: bool) -> Parsed | str:
    """The options and operands in `words`, or what made them unreadable."""
    values: dict[str, list[str]] = {}
    operands: list[Word] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word is None:
            return "has a word that is not a literal where an option may be"
        if word == "--":
            operands.extend(words[i + 1 :])
            break
        if word == "-" or not word.startswith("-"):
            if not permute:
                operands.extend(words[i:])
                break
            operands.append(word)
            i += 1
            continue
        if (spec.numeric and _NUMERIC.match(word)) or spec.single_words:
            values.setdefault(word, []).append("")
            i += 1
            continue
        taken = _long(spec, word, words, i, values) if word.startswith("--") else _short(spec, word, words, i, values)
        if isinstance(taken, str):
            return taken
        i += taken
    return Parsed(values, tuple(operands))


def _long(spec: Options, word: str, words: Sequence[Word], i: int, values: dict[str, list[str]]) -> int | str:
    key, eq, attached = word.partition("=")
    found = spec.names.get(key)
    if found is None and spec.abbreviate:
        candidates = {spec.names[n] for n in spec.names if n.startswith(key) and n.startswith("--")}
        found = candidates.pop() if len(candidates) == 1 else None
    if found is None:
        return f"has an option it is not known to take: {word}"
    name, arity = found
    if arity == 0 and eq:
        return f"gives a value to {key}, which takes none"
    if arity == _OPTIONAL:  # a value only when attached
        arity = 1 if eq else 0
    return _take(name, arity, [attached] if eq else [], words, i, values, word)


def _short(spec: Options, word: str, words: Sequence[Word], i: int, values: dict[str, list[str]]) -> int | str:
    for j in range(1, len(word)):
        found = spec.names.get("-" + word[j])
        if found is None:
            return f"has an option it is not known to take: -{word[j]} (in {word})"
        name, arity = found
        rest = word[j + 1 :]
        if arity == 0:
            values.setdefault(name, []).append("")
            continue
        if arity == _OPTIONAL:
            values.setdefault(name, []).append(rest)
            return 1
        return _take(name, arity, [rest] if rest else [], words, i, values, word)
    return 1


def _take(
    name: str, arity: int, first: list[str], words: Sequence[Word], i: int, values: dict[str, list[str]], word: str
) -> int | str:
    """Record option `name` with `arity` values: those attached to its word, then the next words."""
    wanted = arity - len(first)
    following = list(words[i + 1 : i + 1 + wanted])
    if len(following) < wanted or any(w is None for w in following):
        return f"has {word} without a literal value"
    values.setdefault(name, []).extend([*first, *(w for w in following if w is not None)] or [""])
    return 1 + wanted


Finder = Callable[[Parsed], list[Run]]


def command(after: int = 0, bare: str | None = None) -> Finder:
    """The command starts after `after` operands (timeout's duration, taskset's mask); with
    no command, `bare` says why that is unknowable (a shell reading standard input), or
    None: the program then runs nothing."""

    def find(parsed: Parsed) -> list[Run]:
        before, rest = parsed.operands[:after], parsed.operands[after:]
        if any(w is None for w in before):
            return [Unknown("a word before its command is not a literal")]
        if not rest:
            return [Unknown(bare)] if bare else []
        return [Argv(rest)]

    return find


@dataclass(frozen=True)
class Runner:
    """One program that runs commands: its options and how it finds what it runs."""

    options: Options = field(default_factory=lambda: options())
    finds: Finder = field(default_factory=command)
    lines: tuple[str, ...] = ()  # options whose value is a shell command line (`script -c`)
    idle: tuple[str, ...] = ()  # options with which it runs no command (`taskset -p`)
    custom: Callable[[tuple[Word, ...]], list[Run]] | None = None  # a program not read by getopt (sg, ssh)

    def runs(self, name: str, args: tuple[Word, ...]) -> list[Run]:
        """What `name args…` runs, under every reading of its options."""
        if self.custom is not None:
            return self.custom(args)
        readings = (False, True) if self.options.permute is None else (self.options.permute,)
        found: list[Run] = []
        for permute in readings:
            parsed = read_options(self.options, args, permute)
            if isinstance(parsed, str):
                return [Unknown(f"{name} {parsed}")]
            if parsed.has(*self.idle):
                continue
            found.extend(Text(v) for key in self.lines for v in parsed.values.get(key, ()))
            found.extend(self.finds(parsed))
        return found
