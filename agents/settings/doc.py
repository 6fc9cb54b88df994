"""The settings table of docs/configuration.md, written from the settings model itself.

    python -m agents.settings.doc      print the table (paste it between the page's markers)

One row per key a config file may set: its dotted name, its `WORKINGSET_*` variable,
its default and its field's description, so the table cannot say other than the code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from agents.settings._config import ENV_PREFIX, WorkingsetSettings

__all__ = ["BEGIN", "END", "settings_table"]

BEGIN = "<!-- settings table: written by `python -m agents.settings.doc` from agents/settings/_config.py -->"
END = "<!-- end of the settings table -->"
_SET_BY_THE_LOADER = {"trusted_workspace"}  # never read from a file or the environment


def _shown(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, Path):
        home = str(Path.home())
        return f"`{str(value).replace(home, '~', 1)}`"
    if isinstance(value, list | tuple):
        return ", ".join(_shown(v) for v in value) if value else "`[]`"
    if isinstance(value, dict):
        return "`{}`" if not value else f"`{value}`"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str):
        return f"`{value}`"
    return str(value)


def _default(field: FieldInfo) -> str:
    return _shown(field.get_default(call_default_factory=True, validated_data={}))


def _rows(model: type[BaseModel], key: str = "", env: str = ENV_PREFIX) -> list[str]:
    rows = []
    for name, field in model.model_fields.items():
        if not key and name in _SET_BY_THE_LOADER:
            continue
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            rows.extend(_rows(annotation, f"{key}{name}.", f"{env}{name.upper()}__"))
            continue
        meaning = (field.description or "").replace("|", "\\|").replace("<", "\\<")  # not read as HTML
        rows.append(f"| `{key}{name}` | `{env}{name.upper()}` | {_default(field)} | {meaning} |")
    return rows


def settings_table() -> str:
    """The markdown table of every setting."""
    head = ["| setting | environment variable | default | meaning |", "|---|---|---|---|"]
    return "\n".join([*head, *_rows(WorkingsetSettings)])


if __name__ == "__main__":
    print(settings_table())
