"""The tool registry: the set of tools one agent may call, checked up front.

Tools are validated when registered, so a badly declared tool fails at startup
with its name in the message, not mid-session when the model first calls it.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pydantic import BaseModel, ValidationError

from tools.base import ExecutionDomain, Tool, ToolError
from tools.bash import BashTool
from tools.files import EditTool, GlobTool, GrepTool, ReadTool, WriteTool

__all__ = [
    "FILE_TOOLS",
    "ToolRegistry",
    "UnknownTool",
    "default_registry",
    "default_workspace_tools",
    "validate_input",
]

# The Anthropic API's rule for tool names; checking here beats a 400 mid-session.
_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class UnknownTool(ToolError):
    """The model asked for a tool this registry does not hold."""

    def __init__(self, name: str, available: Iterable[str]) -> None:
        self.name = name
        self.available = sorted(available)
        listed = ", ".join(self.available) or "(none)"
        super().__init__(f"Unknown tool {name!r}. Available tools: {listed}")


class ToolRegistry:
    """Tools by name, in registration order (the order the model sees them)."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        _check_declaration(tool)
        if tool.name in self._tools:
            raise ValueError(f"A tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise UnknownTool(name, self._tools) from None

    def names(self) -> list[str]:
        return list(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def filtered(self, predicate: Callable[[Tool], bool]) -> ToolRegistry:
        """A new registry with the tools `predicate` keeps (e.g. read-only for subagents).

        The tool objects are shared; registering into the result does not affect this one.
        """
        return ToolRegistry(t for t in self._tools.values() if predicate(t))

    def schemas(self) -> list[dict[str, Any]]:
        """What the model sees: one {name, description, input_schema} per tool."""
        return [
            {
                "name": t.name,
                "description": t.description,
                "input_schema": input_schema(t.input_model),
            }
            for t in self._tools.values()
        ]


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of an input model, built once: schema generation is slow and
    would otherwise run for every tool on every model call. Treat the result as read-only."""
    return _schema_of(model)


@functools.cache
def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    # Behind a plain function: a bare Tool's `input_model` is `type[Any]`, which the
    # cache's signature (hashable arguments) does not take.
    return model.model_json_schema()


def validate_input(tool: Tool, raw: Any) -> BaseModel:
    """Parse the model's raw tool input; every bad field is named in the ToolError."""
    try:
        return tool.input_model.model_validate(raw)
    except ValidationError as err:
        problems = []
        for e in err.errors():
            where = ".".join(str(part) for part in e["loc"]) or "input"
            problems.append(f"- {where}: {e['msg']}")
        raise ToolError(f"Invalid input for {tool.name}:\n" + "\n".join(problems)) from None


# The tools whose only effect is reading or writing files beneath the workspace, every
# path opened through tools.files._beneath (the kernel refuses a way out); they run no code of
# the agent's. A host may run them in its own process instead of a sandboxed task.
FILE_TOOLS: tuple[type[ReadTool | WriteTool | EditTool | GlobTool | GrepTool], ...] = (
    ReadTool,
    WriteTool,
    EditTool,
    GlobTool,
    GrepTool,
)


def default_workspace_tools() -> list[Tool]:
    """Fresh instances of the built-in workspace tools."""
    return [ReadTool(), WriteTool(), EditTool(), BashTool(), GrepTool(), GlobTool()]


def default_registry() -> ToolRegistry:
    return ToolRegistry(default_workspace_tools())


_MISSING = object()


def _check_declaration(tool: object) -> None:
    """Raise ValueError naming the tool and the first attribute declared wrongly."""
    label = getattr(tool, "name", None)
    label = label if isinstance(label, str) and label else type(tool).__name__

    checks: list[tuple[str, Callable[[Any], bool], str]] = [
        (
            "name",
            lambda v: isinstance(v, str) and bool(_NAME_RE.match(v)),
            "must be 1-64 characters of letters, digits, '_' or '-'",
        ),
        (
            "description",
            lambda v: isinstance(v, str) and bool(v.strip()),
            "must be a non-empty string",
        ),
        (
            "input_model",
            lambda v: isinstance(v, type) and issubclass(v, BaseModel),
            "must be a pydantic BaseModel subclass",
        ),
        ("is_read_only", lambda v: isinstance(v, bool), "must be a bool"),
        (
            "execution_domain",
            lambda v: isinstance(v, ExecutionDomain),
            "must be an ExecutionDomain",
        ),
        ("root_only", lambda v: isinstance(v, bool), "must be a bool"),
        ("run", inspect.iscoroutinefunction, "must be an async method"),
    ]
    for attr, ok, why in checks:
        value = getattr(tool, attr, _MISSING)
        if value is _MISSING:
            raise ValueError(f"Tool {label!r}: attribute {attr!r} is missing")
        if not ok(value):
            raise ValueError(f"Tool {label!r}: attribute {attr!r} {why} (got {value!r})")
