"""Compile the working set: the one bounded request a model call sees.

The compiler is stateful only to be fast: it remembers the tool schemas, the token
cost of the request prefix, and the running message total, so compiling turn N+1
costs what turn N added, not the whole conversation again.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from agents.messages import Message
from agents.ports import ModelRequest, ToolSchema
from agents.tokens import IncrementalEstimate, TokenCounter, estimate_prefix_tokens
from tools.registry import ToolRegistry, input_schema

__all__ = ["CompiledRequest", "WorkingSetCompiler", "tool_schemas"]


class CompiledRequest(BaseModel):
    model_config = ConfigDict(frozen=True)
    request: ModelRequest
    estimated_tokens: int


def tool_schemas(registry: ToolRegistry) -> tuple[ToolSchema, ...]:
    """What `registry.schemas()` describes, as the frozen schemas a request carries."""
    schemas = []
    for tool in registry:
        model: type[BaseModel] = tool.input_model  # a bare Tool's is type[Any], not hashable to the cache
        schemas.append(_tool_schema(tool.name, tool.description, model))
    return tuple(schemas)


@functools.lru_cache(maxsize=1024)
def _tool_schema(name: str, description: str, model: type[BaseModel]) -> ToolSchema:
    # Made once per (name, description, input model) and shared by every session: making
    # one validates the whole JSON schema, and a shared frozen object keeps its token
    # count too (agents.tokens). The key is everything the schema is made of; the input
    # schema is `input_schema`'s, built once per model and read-only.
    return ToolSchema(name=name, description=description, input_schema=input_schema(model))


class WorkingSetCompiler:
    def __init__(self, counter: TokenCounter):
        self.counter = counter
        self._messages = IncrementalEstimate(counter)
        self._tools_key: tuple[int, ...] = ()
        self._tools: tuple[ToolSchema, ...] = ()
        self._prefix_key: tuple[str, tuple[ToolSchema, ...], str] | None = None
        self._prefix_tokens = 0

    def tools_for(self, registry: ToolRegistry) -> tuple[ToolSchema, ...]:
        key = tuple(id(t) for t in registry)
        if key != self._tools_key or not self._tools:
            self._tools_key, self._tools = key, tool_schemas(registry)
        return self._tools

    def prefix_tokens(self, system: str, tools: tuple[ToolSchema, ...]) -> int:
        key = self.counter.key  # a calibrated counter's scale is in its key
        if (
            self._prefix_key is None
            or self._prefix_key[0] != system
            or self._prefix_key[1] is not tools
            or self._prefix_key[2] != key
        ):
            self._prefix_key = (system, tools, key)
            self._prefix_tokens = estimate_prefix_tokens(self.counter, system=system, tools=tools)
        return self._prefix_tokens

    def compile(
        self, *, system: str, registry: ToolRegistry, messages: Sequence[Message], max_tokens: int
    ) -> CompiledRequest:
        tools = self.tools_for(registry)
        request = ModelRequest.model_construct(
            system=system, tools=tools, messages=tuple(messages), max_tokens=max_tokens
        )
        estimate = self.prefix_tokens(system, tools) + self._messages.total(messages)
        return CompiledRequest.model_construct(request=request, estimated_tokens=estimate)
