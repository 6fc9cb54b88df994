"""What a model provider is: a factory from a model name to a ModelClient.

    spec := PROVIDER ":" NAME            e.g. anthropic:claude-sonnet-4-5, openai:gpt-4o

A provider is any callable `factory(name, context) -> ModelClient` (the
`ProviderFactory` Protocol). The built-in ones are `anthropic`, `openai` and
`scripted`; a package adds another by declaring an entry point in the
`workingset.providers` group, named for the prefix:

    [project.entry-points."workingset.providers"]
    bedrock = "my_pkg.bedrock:make_client"

`context` carries what a factory may need (`ProviderContext`): the provider
settings, the role of the client (root, judge, summarizer, subagent:<description>)
and the folder relative paths are resolved against. A factory raises ConfigError for
a mistake the user can fix (a missing key, a bad name); its client raises errors from
the `agents.errors` tree (see `agents.ports.ModelClient`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from agents.ports import ModelClient
from agents.settings import ProviderSettings

__all__ = ["ProviderContext", "ProviderFactory"]


@dataclass(frozen=True)
class ProviderContext:
    """Everything a provider factory is given besides the model name."""

    settings: ProviderSettings = field(default_factory=ProviderSettings)
    role: str = "root"
    base_dir: Path | None = None

    def resolve(self, path: str) -> Path:
        """A path from a spec, relative to `base_dir` when it is relative."""
        resolved = Path(path).expanduser()
        if not resolved.is_absolute() and self.base_dir is not None:
            resolved = self.base_dir / resolved
        return resolved


@runtime_checkable
class ProviderFactory(Protocol):
    def __call__(self, name: str, context: ProviderContext) -> ModelClient: ...
