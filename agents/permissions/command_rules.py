"""Bash rule patterns, `Bash(git status:*)` and `Bash(npm test)`, matched on a parsed line.

    Bash(npm test)          exactly the words `npm test`
    Bash(git status:*)      the words `git status`, then any arguments

How a pattern meets a command line depends on the rule's effect (see shell_line for how
the line is read):

- allow (and a user's "always" grant): only a line that is ONE simple command of literal
  words can match, compared word by word after quote removal (`git 'status'` is
  `git status`). A pipeline, a list, a redirection, an expansion or a substitution is
  never allowed by a rule; it is asked about (or denied when headless). A prefix allows
  only a line whose commands are all knowable and named by it: `Bash(git:*)` does not
  allow `git -c alias.x='!rm -rf ~' x`, nor `git frob` (which may be an alias).
- deny and ask: the pattern matches if ANY command in the line matches it, wherever it
  is (pipelines, lists, subshells, substitutions, `bash -c` strings) and whatever wraps
  it (`env`, `sudo`, `nice -n 5`, `xargs`, `/bin/rm` for `rm`, leading `FOO=1`). A word
  whose value is only known at run time matches anything from its position on, and a
  line in which some command cannot be known at all matches every deny and ask rule:
  denying or asking too often is the safe side. Asking more is always safe, so ask rules
  read lines the way deny rules do.

Forms that cannot be matched safely are refused when the rules load (`ConfigError`): a
`*` anywhere but a final `:*`, an empty prefix, quotes, shell operators or any other
character outside `[A-Za-z0-9_./:=+,@%-]`, a first word that is an assignment, and
an allow prefix on a command that runs other commands (`Bash(env:*)`, `Bash(sudo:*)`,
`Bash(bash:*)` …, which would allow everything).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from agents.errors import ConfigError
from agents.permissions.shell_line import ShellLine
from agents.permissions.shell_words import SAFE_CHARS
from agents.permissions.shell_wrappers import COMMAND_RUNNERS, Word, command_name

__all__ = ["CommandPattern", "parse_command_pattern"]


@dataclass(frozen=True)
class CommandPattern:
    words: tuple[str, ...]
    prefix: bool  # `:*`: further arguments may follow

    def allows(self, line: ShellLine) -> bool:
        """An allow rule: the line is one simple literal command with these words; for a
        prefix, one whose reading is knowable and runs nothing the prefix does not name."""
        simple = line.simple
        if simple is None:
            return False
        n = len(self.words)
        if not self.prefix:
            return simple == self.words
        return (
            simple[:n] == self.words
            and line.unknowable is None
            and all(_names_within(c, simple, n) for c in line.delegated)
        )

    def catches(self, line: ShellLine) -> bool:
        """A deny or ask rule: some command in the line may be this one, or some command
        cannot be known (fail closed)."""
        return line.unknowable is not None or self.names(line)

    def names(self, line: ShellLine, *, literally: bool = False) -> bool:
        """Some command found in the line may be this one (`literally`: is this one, with
        no word that is only known at run time)."""
        return any(self._may_be(c, literally) for c in line.commands)

    def _may_be(self, command: tuple[Word, ...], literally: bool = False) -> bool:
        for i, want in enumerate(self.words):
            if i >= len(command):
                return False
            got = command[i]
            if got is None:
                return not literally  # known only at run time: it may expand to these words
            if i == 0:
                got, want = command_name(got), command_name(want)
            if got != want:
                return False
        rest = command[len(self.words) :]
        return self.prefix or (not literally and all(w is None for w in rest))  # an expansion may be empty


def _names_within(command: tuple[Word, ...], simple: tuple[str, ...], n: int) -> bool:
    """Whether a command a runner runs is the tail of the line starting inside the
    prefix's `n` words (`uv run pytest -q` under `Bash(uv run pytest:*)` runs `pytest -q`,
    which the prefix names; `git -c alias.x=!sh x` under `Bash(git:*)` runs `sh`, which it
    does not)."""
    return any(command == simple[k:] for k in range(1, n))


def parse_command_pattern(text: str, pattern: str, effect: str) -> CommandPattern:
    """The pattern of rule `text`, or a ConfigError saying what to write instead."""
    body, prefix = (pattern[:-2], True) if pattern.endswith(":*") else (pattern, False)
    words = tuple(body.split())
    if not words:
        _refuse(text, "has an empty command; to cover every command write Bash")
    if "*" in body:
        before = body.split("*", 1)[0].rstrip(": \t")
        example = f"Bash({before}:*)" if before else "Bash(git status:*)"
        _refuse(
            text,
            f"has a * that is not a final :*; write a command prefix such as {example} "
            "or an exact command such as Bash(npm test) (a * inside a command cannot be matched safely)",
        )
    bad = sorted({ch for ch in body if ch not in SAFE_CHARS and ch not in " \t"})
    if bad:
        _refuse(
            text,
            f"contains {''.join(bad)!r}; a rule names one command by its plain words, without quotes, "
            "shell operators, redirections or expansions (write Bash(git status:*), not "
            'Bash("git status") or Bash(git status && …))',
        )
    if "=" in words[0]:
        _refuse(text, "starts with a variable assignment; name the command itself, e.g. Bash(make:*)")
    if effect == "allow" and prefix and command_name(words[0]) in COMMAND_RUNNERS:
        _refuse(
            text,
            f"would allow any command run through {words[0]}; allow the commands themselves, "
            "or write Bash to allow every command",
        )
    return CommandPattern(words=words, prefix=prefix)


def _refuse(text: str, why: str) -> NoReturn:
    raise ConfigError(f"permission rule {text!r} {why}")
