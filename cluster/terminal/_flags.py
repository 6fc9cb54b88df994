"""The command-line flags that set a setting: one table for `run` and `eval`.

Each row names the flag, the setting it sets (a dotted path into WorkingsetSettings),
its help text, how its text becomes the value, and the commands that take it. Both
parsers add their flags from here and build the overrides they hand to the loader from
here, so a flag the two commands share has one name, one help text and one conversion.
A setting with a fixed set of values (a Literal) gives its flag exactly those choices;
model specs given as `scripted:<relative file>` are made absolute against the working
directory, since sessions on Ray run in other processes.

`--trust-workspace`, also shared, is no setting: it tells the loader to trust the
workspace's own config for this command (see agents.settings._trust).
"""

from __future__ import annotations

import argparse
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic.fields import FieldInfo

from agents.settings import WorkingsetSettings
from cluster.eval import absolute_spec

__all__ = [
    "SETTING_FLAGS",
    "SettingFlag",
    "add_setting_flags",
    "add_trust_flag",
    "positive_float",
    "positive_int",
    "setting_overrides",
]

RUN, EVAL = "run", "eval"
BOTH = frozenset({RUN, EVAL})


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {value:g}")
    return value


@dataclass(frozen=True)
class SettingFlag:
    """One flag, the setting it sets, and how."""

    flag: str  # "--max-turns"
    setting: str  # dotted path: "agent.max_turns"
    help: str
    commands: frozenset[str] = BOTH
    type: Callable[[str], Any] | None = None  # argparse's conversion of the text
    switch: Any = None  # not None: a flag without a value that sets the setting to this
    repeatable: bool = False  # each use adds one item to a list setting
    metavar: str | None = None
    resolve: Callable[[Any, Path], Any] | None = None  # after parsing, against the working directory

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        if self.switch is not None:
            parser.add_argument(self.flag, action="store_true", help=self.help)
        elif self.repeatable:
            parser.add_argument(self.flag, action="append", default=[], metavar=self.metavar, help=self.help)
        else:
            parser.add_argument(
                self.flag, type=self.type or str, choices=self.choices, metavar=self.metavar, help=self.help
            )

    @property
    def field(self) -> FieldInfo:
        """The setting's field in WorkingsetSettings (KeyError if there is none)."""
        model: Any = WorkingsetSettings
        *sections, name = self.setting.split(".")
        for section in sections:
            model = model.model_fields[section].annotation
        return model.model_fields[name]

    @property
    def choices(self) -> list[str] | None:
        """A setting with a fixed set of values takes exactly those."""
        annotation = self.field.annotation
        options = get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else (annotation,)
        for option in options:
            if get_origin(option) is Literal:
                return list(get_args(option))
        return None

    def value(self, args: argparse.Namespace, cwd: Path) -> Any:
        """The setting's value from the parsed arguments, or None when the flag was not given."""
        given = getattr(args, self.dest)
        if given is None or given is False or given == []:
            return None
        if self.switch is not None:
            return self.switch
        return self.resolve(given, cwd) if self.resolve else given


SETTING_FLAGS: tuple[SettingFlag, ...] = (
    SettingFlag(
        "--model",
        "model",
        "model spec: anthropic:<model>, openai:<model> or scripted:<file>",
        metavar="SPEC",
        resolve=absolute_spec,
    ),
    SettingFlag(
        "--summarizer",
        "summarizer.spec",
        "summarizer spec: extractive (default) or a model spec",
        metavar="SPEC",
        resolve=absolute_spec,
    ),
    SettingFlag("--strategy", "compact.strategy", "compaction strategy spec (default: current)", metavar="SPEC"),
    SettingFlag(
        "--max-turns",
        "agent.max_turns",
        "model calls allowed for one prompt (eval: per task, unless the task sets budgets.turns)",
        type=positive_int,
        metavar="N",
    ),
    SettingFlag(
        "--allow",
        "permissions.allow",
        'allow rule, e.g. "Bash(git status:*)" (repeatable)',
        repeatable=True,
        metavar="RULE",
    ),
    SettingFlag(
        "--deny", "permissions.deny", "deny rule; deny rules win (repeatable)", repeatable=True, metavar="RULE"
    ),
    SettingFlag(
        "--no-sandbox",
        "sandbox.enabled",
        "run Bash (and eval's setup and grading) without bubblewrap (explicit opt-out)",
        switch=False,
    ),
    SettingFlag("--local", "runtime", "run sessions in this process instead of on Ray", switch="local"),
    SettingFlag(
        "--address", "cluster.address", "join this Ray cluster instead of starting an embedded one", metavar="ADDR"
    ),
    SettingFlag(
        "--judge",
        "judge",
        "model spec of the goal judge (default: the main model)",
        frozenset({RUN}),
        metavar="SPEC",
        resolve=absolute_spec,
    ),
    SettingFlag(
        "--trace-dir",
        "trace_dir",
        "write every compiled working set to this directory",
        frozenset({RUN}),
        metavar="DIR",
    ),
    SettingFlag("--permission-mode", "permissions.mode", "how unruled calls are decided", frozenset({RUN})),
    SettingFlag("--ask", "permissions.ask", "ask rule (repeatable)", frozenset({RUN}), repeatable=True, metavar="RULE"),
    SettingFlag(
        "--headless",
        "permissions.headless",
        "no one answers asks (default when stdin is not a terminal)",
        frozenset({RUN}),
    ),
    SettingFlag(
        "--max-tokens",
        "subagents.tree_max_tokens",
        "tokens per task, unless the task sets budgets.tokens",
        frozenset({EVAL}),
        type=positive_int,
        metavar="N",
    ),
    SettingFlag(
        "--max-cost",
        "subagents.tree_max_cost_usd",
        "cost per task, unless the task sets budgets.cost_usd",
        frozenset({EVAL}),
        type=positive_float,
        metavar="USD",
    ),
)


def flags_of(command: str) -> list[SettingFlag]:
    return [f for f in SETTING_FLAGS if command in f.commands]


def add_setting_flags(parser: argparse.ArgumentParser, command: str) -> None:
    """Add the flags `command` takes from the table."""
    for flag in flags_of(command):
        flag.add_to(parser)


def add_trust_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trust-workspace",
        action="store_true",
        help="trust the workspace's own .workingset/ for this command, not remembered: its settings, plugins, hooks "
        "and MCP servers apply (run: --cwd; eval: this directory, never a task's repository)",
    )


def setting_overrides(args: argparse.Namespace, command: str, cwd: Path | None = None) -> dict[str, Any]:
    """The settings the given flags set, nested as the loader takes them."""
    cwd = cwd if cwd is not None else Path.cwd()
    overrides: dict[str, Any] = {}
    for flag in flags_of(command):
        value = flag.value(args, cwd)
        if value is None:
            continue
        *sections, name = flag.setting.split(".")
        target = overrides
        for section in sections:
            target = target.setdefault(section, {})
        target[name] = value
    return overrides
