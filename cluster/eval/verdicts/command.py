"""A pytest test command, recognised and rewritten to run under the grader's own machinery.

Recognised: one simple command (leading `NAME=value` assignments allowed) whose program
is `python`, `python3` or `python3.N` (a path to one too) running `-m pytest`, or the
`pytest` / `py.test` script. Anything else — a pipeline, `cd x && pytest`, `tox`,
`make test`, a script — is graded by its exit code, and the row says so.

The rewrite keeps the task's words as written (so `$PWD` still expands) and changes how
the interpreter starts: `python -I -S -c <boot>` (the boot module: see in_sandbox/),
with the task's PYTHONPATH handed to the boot module, which puts it on sys.path only
after pytest is imported, and the harness's `-c CONFIG --rootdir --confcutdir` after the
task's own arguments, so they win.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from agents.permissions import CommandWord, simple_command

__all__ = ["PytestCommand"]

_PYTHON = re.compile(r"(?:.*/)?python(?:3(?:\.\d+)?)?")
_SCRIPT = re.compile(r"(?:(?P<bin>.*/))?(?:pytest|py\.test)")
# Interpreter options kept (they change warnings, buffering or optimisation, not what is
# imported); those that decide sys.path and site (-E -s -S -I -P) are the grader's.
_KEPT_FLAGS = frozenset({"-u", "-B", "-O", "-OO", "-b", "-bb", "-d", "-v", "-q"})
_KEPT_VALUED = frozenset({"-W", "-X"})
_DROPPED_FLAGS = frozenset({"-E", "-s", "-S", "-I", "-P"})
_CONFIG_OPTIONS = ("-c", "--config-file")
_OVERRIDDEN = ("--rootdir", "--confcutdir")


@dataclass(frozen=True)
class PytestCommand:
    assignments: tuple[tuple[str, str], ...]  # as written, PYTHONPATH aside
    pythonpath: str | None  # the PYTHONPATH assignment's value, as written
    interpreter: str  # as written
    interpreter_options: tuple[str, ...]  # as written
    module_form: bool  # `python -m pytest`: the working directory is importable
    args: tuple[CommandWord, ...]

    @classmethod
    def parse(cls, command: str) -> PytestCommand | None:
        parsed = simple_command(command)
        if parsed is None or not parsed.words:
            return None
        assignments = tuple((n, v) for n, v in parsed.assignments if n != "PYTHONPATH")
        pythonpath = next((v for n, v in reversed(parsed.assignments) if n == "PYTHONPATH"), None)
        first, rest = parsed.words[0], parsed.words[1:]
        if first.value is None:
            return None
        script = _SCRIPT.fullmatch(first.value)
        if script is not None:
            interpreter = shlex.quote(f"{script.group('bin') or ''}python3")
            return cls(assignments, pythonpath, interpreter, (), False, rest)
        if not _PYTHON.fullmatch(first.value):
            return None
        options: list[str] = []
        i = 0
        while i < len(rest) and rest[i].value != "-m":
            value = rest[i].value
            if value in _KEPT_VALUED and i + 1 < len(rest):
                options += [rest[i].text, rest[i + 1].text]
                i += 2
                continue
            if value in _KEPT_FLAGS or (value is not None and value[:2] in _KEPT_VALUED and len(value) > 2):
                options.append(rest[i].text)
            elif value not in _DROPPED_FLAGS:
                return None  # a script, -c code, or an option this reader does not know
            i += 1
        if i + 1 >= len(rest) or rest[i + 1].value != "pytest":
            return None
        return cls(assignments, pythonpath, first.text, tuple(options), True, rest[i + 2 :])

    def config_source(self) -> str | None:
        """The configuration file the task's own arguments name (`-c FILE`), if literal."""
        found: str | None = None
        words = [w.value for w in self.args]
        for i, word in enumerate(words):
            if word in _CONFIG_OPTIONS and i + 1 < len(words):
                found = words[i + 1]
            elif word is not None and word.startswith("--config-file="):
                found = word.partition("=")[2]
        return found

    def line(
        self,
        *,
        bootstrap: str,
        report: str,
        config: str,
        root: str,
        plugins: tuple[str, ...] = (),
        extra: tuple[str, ...] = (),
    ) -> str:
        """The shell line that runs this command under the grader (see the module docstring)."""
        env = [
            f"_WORKINGSET_GRADER_REPORT={shlex.quote(report)}",
            f"_WORKINGSET_GRADER_CWD={'1' if self.module_form else '0'}",
        ]
        if self.pythonpath is not None:
            env.append(f"_WORKINGSET_GRADER_PYTHONPATH={self.pythonpath}")
        env += [f"{name}={value}" for name, value in self.assignments]
        ours = ["-c", config, f"--rootdir={root}", f"--confcutdir={root}"]
        for plugin in plugins:
            ours += ["-p", plugin]
        words = [
            *env,
            self.interpreter,
            "-I",
            "-S",
            *self.interpreter_options,
            "-c",
            shlex.quote(bootstrap),
            *(w.text for w in self.args),
            *(shlex.quote(w) for w in (*ours, *extra)),
        ]
        return " ".join(words)
