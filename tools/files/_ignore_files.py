"""Ignore files: what Grep and Glob leave out unless asked (`include_ignored`).

The files are the ones ripgrep reads by default, found at every level of the walk:

    .ignore              ripgrep's own; decides before the git files do
    .gitignore           git's
    .git/info/exclude    the repository's own list, below every .gitignore

Lines mean what git says they mean (gitignore(5)): `#` comments, `!` re-includes, a
trailing `/` matches only a directory, a `/` at the start or in the middle anchors the
pattern to its file's directory (otherwise it matches a name at any depth), `*`, `?`,
`[...]` and `**` as git's wildmatch reads them (`tools.files._glob_regex`, matched by RE2, so
an agent-written line cannot make the match slow). The last matching line of a file
wins, a deeper file wins over a shallower one, and a directory that is excluded is not
entered, so nothing under it can be re-included. A directory that holds `.git` starts
another repository: the git rules from outside it stop there, its own info/exclude
applies (ripgrep's rule too). Unlike ripgrep, .gitignore applies even where there is no
`.git` (a workspace may be a copy without its history).

Every file is read from the walk's own handle on its directory with O_NOFOLLOW (a link
named .gitignore is not read), at most IGNORE_FILE_MAX_BYTES of it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass

from tools.files._beneath import READ_FLAGS, Beneath
from tools.files._component_walk import path_parts
from tools.files._glob_regex import NEVER, compile_regex, ignore_regex, subject

__all__ = ["IGNORE_FILE_MAX_BYTES", "IgnoreRule", "IgnoreRules", "parse_ignore_lines"]

IGNORE_FILE_MAX_BYTES = 1_000_000  # lines past this are not read (a real one is a few KB)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


@dataclass(frozen=True)
class IgnoreRule:
    """One line of an ignore file."""

    match: Callable[[bytes], object]  # fullmatch of the line's glob
    negated: bool  # "!": re-include
    dir_only: bool  # trailing "/": directories only
    anchored: bool  # matched against the path below the file's directory, else the name


def _trim_trailing_spaces(line: str) -> str:
    """Trailing spaces go unless escaped with a backslash (git's trim_trailing_spaces)."""
    last_space = None
    i = 0
    while i < len(line):
        if line[i] == " ":
            last_space = i if last_space is None else last_space
        else:
            last_space = None
            if line[i] == "\\":
                i += 1
        i += 1
    return line if last_space is None else line[:last_space]


def parse_ignore_lines(text: str) -> tuple[IgnoreRule, ...]:
    """The rules of one ignore file, in file order."""
    rules: list[IgnoreRule] = []
    for raw in text.split("\n"):
        line = _trim_trailing_spaces(raw.removesuffix("\r"))
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        line = line[1:] if negated else line
        dir_only = line.endswith("/")
        line = line.rstrip("/") if dir_only else line
        anchored = "/" in line
        line = line.removeprefix("/")
        if not line:
            continue
        regex = ignore_regex(line)
        if regex == NEVER:
            continue
        rules.append(IgnoreRule(compile_regex(regex), negated, dir_only, anchored))
    return tuple(rules)


def _last_hit(rules: tuple[IgnoreRule, ...], below: bytes, name: bytes, is_dir: bool) -> bool | None:
    """True: the last matching rule excludes; False: it re-includes; None: none matches."""
    for rule in reversed(rules):
        if (is_dir or not rule.dir_only) and rule.match(below if rule.anchored else name) is not None:
            return not rule.negated
    return None


@dataclass(frozen=True)
class _Level:
    """The ignore files of one directory."""

    base: str  # the directory, relative to the root ("" for the root)
    ignore: tuple[IgnoreRule, ...]  # .ignore
    git: tuple[IgnoreRule, ...]  # .gitignore
    exclude: tuple[IgnoreRule, ...]  # .git/info/exclude
    has_git: bool


def _read_at(dir_fd: int, *names: str) -> str:
    """The text of the regular file `names` below `dir_fd` ("" if absent or anything else),
    every component opened with O_NOFOLLOW."""
    held: list[int] = []
    try:
        current = dir_fd
        for name in names[:-1]:
            current = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=current)
            held.append(current)
        fd = os.open(names[-1], READ_FLAGS | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY, dir_fd=current)
    except OSError:
        return ""
    finally:
        for fd_held in held:
            os.close(fd_held)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return ""
        try:
            data = fh.read(IGNORE_FILE_MAX_BYTES)
        except OSError:
            return ""
    if len(data) == IGNORE_FILE_MAX_BYTES:
        data = data[: data.rfind(b"\n") + 1]  # whole lines only
    return data.decode("utf-8", "surrogateescape")


def _level(dir_fd: int, base: str) -> _Level | None:
    """The level of the directory `dir_fd` (at `base`), None when it has no ignore file."""
    has_git = True
    try:
        os.stat(".git", dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        has_git = False
    ignore = parse_ignore_lines(_read_at(dir_fd, ".ignore"))
    git = parse_ignore_lines(_read_at(dir_fd, ".gitignore"))
    exclude = parse_ignore_lines(_read_at(dir_fd, ".git", "info", "exclude")) if has_git else ()
    if not (ignore or git or exclude or has_git):
        return None
    return _Level(base, ignore, git, exclude, has_git)


@dataclass(frozen=True)
class IgnoreRules:
    """The ignore rules in force in one directory: its own files' and its parents'."""

    levels: tuple[_Level, ...] = ()

    @classmethod
    def at(cls, root: Beneath, top: str) -> IgnoreRules:
        """The rules in force in `top` (a real path below the root), read from the root down."""
        rules = cls()
        parts = path_parts(top)
        for depth in range(len(parts) + 1):
            rel = "/".join(parts[:depth])
            with contextlib.suppress(OSError), root.opened(rel or ".", _DIR_FLAGS, follow_links=False) as fd:
                rules = rules.below(fd, rel)
        return rules

    def below(self, dir_fd: int, base: str) -> IgnoreRules:
        """The rules in force in the directory `dir_fd`, a child (at `base`) of this one's."""
        level = _level(dir_fd, base)
        return self if level is None else IgnoreRules((*self.levels, level))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether the entry at `rel` (relative to the root) is left out."""
        if not self.levels:
            return False
        name = subject(rel.rsplit("/", 1)[-1])
        paths: dict[str, bytes] = {}
        for kind in ("ignore", "git", "exclude"):
            for level in reversed(self.levels):
                rules: tuple[IgnoreRule, ...] = getattr(level, kind)
                if rules:
                    if level.base not in paths:
                        paths[level.base] = subject(rel[len(level.base) + 1 :] if level.base else rel)
                    hit = _last_hit(rules, paths[level.base], name, is_dir)
                    if hit is not None:
                        return hit
                if kind != "ignore" and level.has_git:
                    break  # a repository's own rules end at its top
        return False
