"""The four memory tools. List and Show are read-only; Write and Delete are root-only,
so a subagent (whose registry drops root-only tools) can read memory but never change it."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.sources._memory import NAME_RULE, MemoryName, MemoryStore, MemoryStoreError
from tools.base import ExecutionDomain, Tool, ToolContext, ToolError, ToolOutput

__all__ = [
    "memory_tools",
    "MemoryDeleteInput",
    "MemoryDeleteTool",
    "MemoryListInput",
    "MemoryListTool",
    "MemoryShowInput",
    "MemoryShowTool",
    "MemoryWriteInput",
    "MemoryWriteTool",
]

# The name's one check is agents.sources._memory.memory_name (MemoryName), as everywhere a name comes in.
_NAME = Field(description=f"Record name: {NAME_RULE}.")


class MemoryListInput(BaseModel):
    """Input for MemoryList (none)."""

    model_config = ConfigDict(extra="forbid")


class MemoryShowInput(BaseModel):
    """Input for MemoryShow."""

    model_config = ConfigDict(extra="forbid")

    name: MemoryName = _NAME


class MemoryWriteInput(BaseModel):
    """Input for MemoryWrite."""

    model_config = ConfigDict(extra="forbid")

    name: MemoryName = _NAME
    type: Literal["user", "feedback", "project", "reference"] = Field(
        description="user: who the user is; feedback: how they want you to work; "
        "project: context not in the code; reference: where outside things live."
    )
    description: str = Field(
        min_length=1, max_length=200, pattern=r"^[^\n]*$", description="One line; shown in the memory index."
    )
    body: str = Field(min_length=1, max_length=20_000, description="The record itself, in markdown.")


class MemoryDeleteInput(BaseModel):
    """Input for MemoryDelete."""

    model_config = ConfigDict(extra="forbid")

    name: MemoryName = _NAME


class _MemoryTool:
    execution_domain = ExecutionDomain.LOCAL

    def __init__(self, store: MemoryStore):
        self.store = store

    def permission_subject(self, args: BaseModel, workspace: Path) -> str | None:
        """Permission rules match the record name, e.g. MemoryWrite(user-*)."""
        return getattr(args, "name", None)


class MemoryListTool(_MemoryTool):
    name = "MemoryList"
    description = (
        "List every project memory record: name, type, one-line description and when it was "
        "last updated. The system prompt's memory index may be cut; this list is complete."
    )
    input_model = MemoryListInput
    is_read_only = True
    root_only = False

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        records, problems = self.store.list()
        lines = [f"{r.index_line()} [updated {r.updated.date().isoformat()}]" for r in records]
        if not records:
            lines.append("No memory records yet.")
        lines += [f"[skipped, unreadable: {p}]" for p in problems]
        return ToolOutput(content="\n".join(lines))


class MemoryShowTool(_MemoryTool):
    name = "MemoryShow"
    description = (
        "Show one project memory record in full: its type, description, timestamps and body. "
        "Use a name from the memory index or MemoryList."
    )
    input_model = MemoryShowInput
    is_read_only = True
    root_only = False

    async def run(self, args: MemoryShowInput, ctx: ToolContext) -> ToolOutput:
        try:
            r = self.store.show(args.name)
        except MemoryStoreError as exc:
            raise ToolError(str(exc)) from None
        header = (
            f"{r.name} ({r.type}): {r.description}\ncreated {r.created.isoformat()}, updated {r.updated.isoformat()}"
        )
        return ToolOutput(content=f"{header}\n\n{r.body}")


class MemoryWriteTool(_MemoryTool):
    name = "MemoryWrite"
    description = (
        "Create or update a project memory record (same name = update). Keep only what future "
        "sessions cannot derive from the code, git or docs; never temporary task state."
    )
    input_model = MemoryWriteInput
    is_read_only = False
    root_only = True

    async def run(self, args: MemoryWriteInput, ctx: ToolContext) -> ToolOutput:
        try:
            existed = self.store.exists(args.name)
            record = self.store.write(args.name, args.type, args.description, args.body)
        except MemoryStoreError as exc:
            raise ToolError(str(exc)) from None
        verb = "Updated" if existed else "Created"
        return ToolOutput(content=f"{verb} memory record {record.name} ({record.type}).")


class MemoryDeleteTool(_MemoryTool):
    name = "MemoryDelete"
    description = (
        "Delete a project memory record by name: when the user asks you to forget it, or when "
        "current evidence shows it is stale or wrong."
    )
    input_model = MemoryDeleteInput
    is_read_only = False
    root_only = True

    async def run(self, args: MemoryDeleteInput, ctx: ToolContext) -> ToolOutput:
        try:
            deleted = self.store.delete(args.name)
        except MemoryStoreError as exc:
            raise ToolError(str(exc)) from None
        if not deleted:
            raise ToolError(str(self.store.not_found(args.name)))
        return ToolOutput(content=f"Deleted memory record {args.name}.")


def memory_tools(store: MemoryStore) -> list[Tool]:
    """MemoryList, MemoryShow (read-only), MemoryWrite, MemoryDelete (root-only)."""
    return [MemoryListTool(store), MemoryShowTool(store), MemoryWriteTool(store), MemoryDeleteTool(store)]
