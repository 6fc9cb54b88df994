"""What a git command line runs besides git: aliases, `-c` settings and command options.

git runs other commands in three ways a command line can show:

- an alias: `git -c alias.x='!rm -rf /' x` runs the shell text after `!` (with the
  arguments as "$@"); an alias without `!` is read again as a git command;
- a setting given with `-c` (or `--config-env`) that names a program: core.pager,
  core.sshCommand, core.fsmonitor, diff drivers, filters, credential helpers, include.path
  (which can bring in all of these)… Rather than list the settings that run something (a
  list that grows with every git release), only settings known to run nothing are
  allowed; any other makes the line unknowable;
- a subcommand option that takes a command: `bisect run CMD…`, `submodule foreach CMD`,
  `rebase -x CMD`, `difftool -x CMD`, `grep -O CMD`, `clone -u CMD`, `push --receive-pack
  CMD`, `archive --exec CMD`, … (`filter-branch`, `instaweb` and `remote-ext` are
  unknowable outright).

A subcommand that is not one of git's own commands may be an alias defined in a git
config file (~/.gitconfig, which the sandbox's HOME can hold, or a repository's
.git/config), or an add-on program: like `$CMD x`, the line names a command whose meaning
is decided elsewhere, so it is unknowable. git's own commands cannot be redefined by an
alias (git ignores an alias that hides a command). What a config file does to a known
command (a pager, a hook, an fsmonitor) is a file's contents, like a script's: outside
what a deny rule reads (the sandbox is the boundary there).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from agents.permissions.runner_spec import (
    Argv,
    Parsed,
    Run,
    Text,
    Unknown,
    Word,
    options,
    read_options,
)

__all__ = ["GIT_COMMANDS", "git_runs"]

_GLOBAL = options(
    "-v,--version -h,--help -C= -c= --exec-path[=] --html-path --man-path --info-path -p,--paginate "
    "-P,--no-pager --git-dir= --work-tree= --namespace= --super-prefix= --bare --no-replace-objects "
    "--no-lazy-fetch --no-optional-locks --no-advice --literal-pathspecs --glob-pathspecs --noglob-pathspecs "
    "--icase-pathspecs --list-cmds= --attr-source= --config-env=",
    abbreviate=False,  # git's own options are matched whole
)


# git's own commands (builtins and the programs the git package installs with it).
# Add-ons packaged apart (send-email, svn, p4, cvs*, gui, lfs) are not here: where one is
# missing, its name is free for an alias.
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


GIT_COMMANDS = _words(
    """add am annotate apply archive backfill bisect blame branch bugreport bundle cat-file check-attr
    check-ignore check-mailmap check-ref-format checkout checkout-index cherry cherry-pick clean clone
    column commit commit-graph commit-tree config count-objects credential credential-cache
    credential-store daemon describe diagnose diff diff-files diff-index diff-pairs diff-tree difftool
    fast-export fast-import fetch fetch-pack filter-branch fmt-merge-msg for-each-ref for-each-repo
    format-patch fsck fsck-objects fsmonitor--daemon gc get-tar-commit-id grep hash-object help hook
    http-backend http-fetch http-push imap-send index-pack init init-db instaweb interpret-trailers
    last-modified log ls-files ls-remote ls-tree mailinfo mailsplit maintenance merge merge-base
    merge-file merge-index merge-one-file merge-tree mergetool mktag mktree multi-pack-index mv
    name-rev notes pack-objects pack-redundant pack-refs patch-id prune prune-packed pull push
    quiltimport range-diff read-tree rebase receive-pack reflog refs remote remote-ext remote-fd repack
    replace replay repo request-pull rerere reset restore rev-list rev-parse revert rm send-pack shell
    shortlog show show-branch show-index show-ref sparse-checkout stage stash status stripspace
    submodule subtree switch symbolic-ref tag unpack-file unpack-objects update-index update-ref
    update-server-info upload-archive upload-pack var verify-commit verify-pack verify-tag version
    web--browse whatchanged worktree write-tree"""
)

_UNKNOWABLE = {
    "filter-branch": "git filter-branch runs its filters as shell code",
    "instaweb": "git instaweb starts a web server and a browser named by options or config",
    "web--browse": "git web--browse starts a browser named by options or config",
    "remote-ext": "git remote-ext runs the command its URL names",
}


@dataclass(frozen=True)
class _CommandOptions:
    longs: tuple[str, ...]
    shorts: str = ""
    attached_only: bool = False  # the value is optional and only ever attached (`grep -O[cmd]`)


# Subcommand options whose value is a command git runs (through a shell, or as a program).
_COMMAND_OPTIONS = {
    "rebase": _CommandOptions(("--exec",), "x"),
    "difftool": _CommandOptions(("--extcmd",), "x"),
    "grep": _CommandOptions(("--open-files-in-pager",), "O", attached_only=True),
    "clone": _CommandOptions(("--upload-pack",), "u"),
    "fetch": _CommandOptions(("--upload-pack",)),
    "pull": _CommandOptions(("--upload-pack",)),
    "ls-remote": _CommandOptions(("--upload-pack", "--exec")),
    "fetch-pack": _CommandOptions(("--upload-pack", "--exec")),
    "push": _CommandOptions(("--receive-pack", "--exec")),
    "send-pack": _CommandOptions(("--receive-pack", "--exec")),
    "archive": _CommandOptions(("--exec",)),
    "daemon": _CommandOptions(("--access-hook",)),
    "shell": _CommandOptions((), "c"),
}

# Settings that run nothing, for `git -c` and `git clone -c` (compared in lower case).
_INERT_SETTINGS = _words(
    """user.name user.email user.signingkey author.name author.email committer.name committer.email
    init.defaultbranch safe.directory protocol.file.allow core.quotepath core.autocrlf core.safecrlf
    core.eol core.filemode core.ignorecase core.longpaths core.precomposeunicode core.abbrev
    core.logallrefupdates core.symlinks core.compression core.bigfilethreshold core.preloadindex
    core.trustctime core.checkstat core.untrackedcache core.splitindex commit.gpgsign tag.gpgsign
    commit.verbose commit.cleanup column.ui i18n.commitencoding i18n.logoutputencoding log.date
    log.decorate log.follow log.abbrevcommit log.mailmap log.showroot log.showsignature diff.renames
    diff.renamelimit diff.algorithm diff.noprefix diff.mnemonicprefix diff.context diff.interhunkcontext
    diff.colormoved diff.indentheuristic diff.relative diff.statgraphwidth diff.ignoresubmodules
    diff.submodule diff.wserrorhighlight diff.dirstat merge.conflictstyle merge.ff merge.renames
    merge.renamelimit merge.stat merge.log merge.verbosity merge.autostash pull.rebase pull.ff
    push.default push.autosetupremote push.followtags fetch.prune fetch.parallel fetch.fsckobjects
    rebase.autosquash rebase.autostash rebase.updaterefs rebase.stat status.short status.branch
    status.showuntrackedfiles status.submodulesummary status.relativepaths branch.autosetupmerge
    branch.autosetuprebase branch.sort gc.auto gc.autodetach maintenance.auto http.sslverify
    http.postbuffer http.version http.lowspeedlimit http.lowspeedtime submodule.recurse
    feature.manyfiles index.version pack.threads checkout.workers grep.linenumber grep.patterntype
    grep.extendedregexp blame.date rerere.enabled transfer.fsckobjects receive.fsckobjects"""
)
_INERT_SECTIONS = ("color.", "advice.")
_MAX_ALIASES = 8


def git_runs(args: Sequence[Word], depth: int = 0) -> list[Run]:
    """What `git args…` runs besides git itself."""
    parsed = read_options(_GLOBAL, tuple(args), permute=False)
    if isinstance(parsed, str):
        return [Unknown(f"git {parsed}")]
    if any(parsed.values.get("--exec-path", ())):
        return [Unknown("git --exec-path changes which programs git runs")]
    aliases, runs = _settings(parsed)
    if parsed.operands:
        runs.extend(_subcommand(parsed.operands[0], parsed.operands[1:], aliases, depth))
    return runs


def _settings(parsed: Parsed) -> tuple[dict[str, str | None], list[Run]]:
    """The aliases the line defines, and an Unknown for each setting that may run something."""
    aliases: dict[str, str | None] = {}
    runs: list[Run] = []
    given: list[tuple[str, str | None]] = [
        (s.partition("=")[0], s.partition("=")[2]) for s in parsed.values.get("-c", ())
    ]
    given += [(s.partition("=")[0], None) for s in parsed.values.get("--config-env", ())]  # from the environment
    for key, value in given:
        low = key.lower()
        if low.startswith("alias."):
            aliases[low.removeprefix("alias.")] = value
        elif not _inert(low):
            runs.append(Unknown(f"git -c {key} may make git run a command"))
    return aliases, runs


def _inert(key: str) -> bool:
    return key in _INERT_SETTINGS or key.startswith(_INERT_SECTIONS)


def _subcommand(sub: Word, rest: tuple[Word, ...], aliases: dict[str, str | None], depth: int) -> list[Run]:
    if sub is None:
        return [Unknown("git's subcommand is not a literal")]
    if sub in GIT_COMMANDS:
        return _known(sub, rest, aliases, depth)
    if sub.lower() not in aliases:
        return [Unknown(f"git {sub} is not a git command; it may be an alias from a git config file")]
    alias = aliases[sub.lower()]
    if alias is None:
        return [Unknown(f"the git alias {sub} comes from the environment")]
    if alias.startswith("!"):  # git runs it with a shell, the arguments as "$@"
        return [Text(alias[1:] + (' "$@"' if rest else ""))]
    if depth >= _MAX_ALIASES:
        return [Unknown(f"more than {_MAX_ALIASES} git aliases in a row")]
    try:
        words = shlex.split(alias)
    except ValueError:
        return [Unknown(f"the git alias {sub} cannot be read")]
    inner = read_options(_GLOBAL, (*words, *rest), permute=False)
    if isinstance(inner, str) or not inner.operands or any(inner.values.get("--exec-path", ())):
        return [Unknown(f"the git alias {sub} cannot be read")]
    more, runs = _settings(inner)  # an alias may carry -c settings (and define aliases)
    return [*runs, *_subcommand(inner.operands[0], inner.operands[1:], {**aliases, **more}, depth + 1)]


def _known(sub: str, rest: tuple[Word, ...], aliases: dict[str, str | None], depth: int) -> list[Run]:
    if sub in _UNKNOWABLE:
        return [Unknown(_UNKNOWABLE[sub])]
    if sub == "bisect":
        if rest[:1] == (None,):
            return [Unknown("git bisect's subcommand is not a literal")]
        return [Argv(rest[1:])] if rest[:1] == ("run",) else []
    if sub == "submodule":
        return _foreach(rest)
    if sub == "for-each-repo":
        return _for_each_repo(rest, aliases, depth)
    runs: list[Run] = []
    if sub == "clone":
        runs.extend(
            Unknown(f"git clone -c {v} may make git run a command")
            for v in _option_values(rest, _CommandOptions(("--config",), "c"))
            if v is None or not (_inert(v.partition("=")[0].lower()) or v.lower().startswith("alias."))
        )
    spec = _COMMAND_OPTIONS.get(sub)
    if spec is not None:
        runs.extend(
            Text(v)
            if v is not None
            else Unknown(f"git {sub} has a word that is not a literal, which may be an option that runs a command")
            for v in _option_values(rest, spec)
        )
    return runs


def _option_values(args: tuple[Word, ...], spec: _CommandOptions) -> list[Word]:
    """Values of the options in `spec`, read generously: a long option by any prefix of four
    or more characters, a short one anywhere in a cluster (seeing an option that is not one
    only denies more). A word that is not a literal may be one of them: its value is None."""
    values: list[Word] = []
    for i, word in enumerate(args):
        following = args[i + 1] if i + 1 < len(args) else ""
        if word is None:
            values.append(None)
        elif word == "--":
            break
        elif word.startswith("--"):
            key, eq, attached = word.partition("=")
            if len(key) > 3 and any(name.startswith(key) for name in spec.longs):
                values.append(attached if eq or spec.attached_only else following)
        elif word.startswith("-") and spec.shorts:
            at = next((j for j, ch in enumerate(word) if j and ch in spec.shorts), None)
            if at is not None:
                values.append(word[at + 1 :] or ("" if spec.attached_only else following))
    return [v for v in values if v != ""]


def _foreach(rest: tuple[Word, ...]) -> list[Run]:
    """`git submodule [--quiet] foreach [--recursive] CMD [ARG…]`: CMD is shell text."""
    words = list(rest)
    while words and words[0] is not None and words[0].startswith("-"):
        words.pop(0)
    if not words or words[0] != "foreach":
        return [Unknown("git submodule's subcommand is not a literal")] if words and words[0] is None else []
    command = words[1:]
    while command and command[0] in ("--recursive", "-q", "--quiet"):
        command.pop(0)
    if not command:
        return []
    return [Text(None if command[0] is None else command[0] + (' "$@"' if len(command) > 1 else ""))]


def _for_each_repo(rest: tuple[Word, ...], aliases: dict[str, str | None], depth: int) -> list[Run]:
    """`git for-each-repo --config=KEY [--keep-going] [--] GIT-ARGS…` runs `git GIT-ARGS…`."""
    spec = options("--config= --keep-going")
    parsed = read_options(spec, rest, permute=False)
    if isinstance(parsed, str):
        return [Unknown(f"git for-each-repo {parsed}")]
    if not parsed.operands:
        return []
    return _subcommand(parsed.operands[0], parsed.operands[1:], aliases, depth + 1)
