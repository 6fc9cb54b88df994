"""Variables whose value runs: what setting one in a command line means for a deny rule.

Setting a variable is not running a command, except for three kinds of variable:

- bash runs the value as code: prompt strings (PS4 is expanded, command substitutions
  included, for every traced command), startup files, exported functions; and git reads
  its configuration from GIT_CONFIG_* (aliases, pagers, hooks) — unknowable;
- a program runs the value as a command line: pagers, editors, git's ssh, askpass and
  external diff, less's input filters — the value is read as shell text, so
  `GIT_EDITOR=true git rebase --continue` stays knowable and `PAGER='rm x' git -p log`
  is caught;
- SHELL names the shell that `flock -c`, `script`, `su -m`, ssh's ProxyCommand and others
  hand their strings to: a value that is not a known shell makes those strings
  something other than shell text — unknowable.

Variables that name files (PATH, LD_PRELOAD, GIT_EXEC_PATH's programs aside) point at
programs like any other file a command runs: the deny rule reads the line, not files.
"""

from __future__ import annotations

from agents.permissions.runner_spec import Run, Text, Unknown, Word

__all__ = ["SHELLS", "variable_runs"]

# Programs that read their commands as a POSIX-like shell does.
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "rbash"})

_BASH_CODE = frozenset({"PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "BASH_ENV", "ENV"})
_GIT_CONFIG = frozenset({"GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_EXEC_PATH"})
_COMMAND_LINES = frozenset(
    {
        "PAGER",
        "GIT_PAGER",
        "MANPAGER",
        "SYSTEMD_PAGER",
        "EDITOR",
        "VISUAL",
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
        "SUDO_EDITOR",
        "GIT_SSH_COMMAND",
        "GIT_SSH",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "SUDO_ASKPASS",
        "GIT_EXTERNAL_DIFF",
        "GIT_PROXY_COMMAND",
        "LESSOPEN",
        "LESSCLOSE",
    }
)


def variable_runs(name: str, value: Word) -> Run | None:
    """What setting `name` to `value` (None: not known before it runs) may run, if anything."""
    if name in _BASH_CODE or name.startswith("BASH_FUNC_"):
        return Unknown(f"it sets {name}, which bash runs as code")
    if name in _GIT_CONFIG or name.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")):
        return Unknown(f"it sets {name}, which changes what git runs")
    if name == "SHELL":
        shell = value.rsplit("/", 1)[-1] if value is not None else None
        return None if shell in SHELLS else Unknown("it sets SHELL to something other than a known shell")
    if name in _COMMAND_LINES:
        return Text(value.lstrip("|-") if value is not None else None)  # LESSOPEN='|filter %s'
    return None
