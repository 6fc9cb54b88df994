"""Project Memory: small markdown records that persist across sessions of one project.

Records live in `<home>/projects/<slug>/memory/<name>.md`, where `home` is the
Workingset home (default `~/.workingset`) and the slug is the workspace's last path
part plus a short hash of its resolved path. Each record is a human-editable
markdown file whose YAML front-matter holds name, type, a one-line description and
created/updated timestamps; the body follows.

Only the index (name, type, description) enters the system prompt; MemoryShow loads
a body on demand. Writes are atomic (temp file + os.replace in the same directory).
A record whose front-matter cannot be read is reported and skipped, never deleted
or overwritten.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import os
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal, TypeGuard, get_args

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from agents.errors import WorkingsetError
from agents.sources._system_prompt import Section

__all__ = [
    "MEMORY_INDEX_MAX_ENTRIES",
    "MEMORY_TYPES",
    "FrontMatterError",
    "MemoryName",
    "MemoryNameError",
    "MemoryNotFound",
    "MemoryRecord",
    "MemoryStore",
    "MemoryStoreError",
    "MemoryType",
    "memory_name",
    "memory_section",
    "project_slug",
    "split_front_matter",
]

MemoryType = Literal["user", "feedback", "project", "reference"]
MEMORY_TYPES: tuple[str, ...] = get_args(MemoryType)


def is_memory_type(value: str) -> TypeGuard[MemoryType]:
    return value in MEMORY_TYPES


_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")  # always fullmatch: "$" would let "name\n" through
DESCRIPTION_MAX = 200  # chars of a description shown in the index
NAME_RULE = "1-64 characters of lowercase letters, digits, '-' or '_', starting with a letter or digit"
MEMORY_INDEX_MAX_ENTRIES = 200  # records the system prompt's index shows; MemoryList shows them all


class MemoryStoreError(WorkingsetError):
    """A memory operation failed; the message names the record and the fix."""


class MemoryNameError(MemoryStoreError, ValueError):
    """A record name that is not one (a ValueError too, so pydantic reports it as the field's error)."""


class MemoryNotFound(MemoryStoreError):
    """No record of that name; the message lists the ones that exist."""


def memory_name(name: str) -> str:
    """`name` if it is a record name, else MemoryNameError saying the rule. Every way a name
    comes in (the memory tools' input, `workingset memory`, a record's front-matter, the
    store) passes here, so a name with a newline, a '/' or '..' never reaches a file path."""
    if _NAME.fullmatch(name) is not None:
        return name
    shown = repr(name) if len(name) <= 80 else f"{name[:60]!r}... ({len(name)} characters)"
    suggestion = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-_")[:64]
    hint = f"; e.g. {suggestion!r}" if suggestion and _NAME.fullmatch(suggestion) else ""
    raise MemoryNameError(f"invalid memory name {shown}: use {NAME_RULE}{hint}")


MemoryName = Annotated[str, AfterValidator(memory_name)]


class FrontMatterError(WorkingsetError, ValueError):
    """A file's YAML front-matter is missing or malformed."""


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """Split `---\\n<yaml>\\n---\\n<body>` into (mapping, body); FrontMatterError if broken."""
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise FrontMatterError("no front-matter: the file must start with a '---' line")
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        raise FrontMatterError("front-matter is not closed by a '---' line")
    try:
        meta = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as exc:
        raise FrontMatterError(f"front-matter is not valid YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(meta, dict):
        raise FrontMatterError("front-matter must be a YAML mapping of key: value lines")
    return meta, "".join(lines[end + 1 :]).strip("\n")


def project_slug(workspace: Path) -> str:
    """Readable last path part + 10 hex chars of the resolved path's SHA-256."""
    resolved = workspace.expanduser().resolve()
    readable = re.sub(r"[^a-z0-9]+", "-", resolved.name.lower()).strip("-")[:40] or "root"
    return f"{readable}-{hashlib.sha256(str(resolved).encode()).hexdigest()[:10]}"


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


class MemoryRecord(BaseModel):
    """One memory record: its front-matter fields, its body and where it is stored."""

    model_config = ConfigDict(extra="ignore")

    name: MemoryName = Field(description="File-safe name; the file is <name>.md.")
    type: MemoryType = Field(description="user, feedback, project or reference.")
    description: str = Field(min_length=1, description="One line; what the index shows.")
    created: datetime = Field(description="When the record was first written (UTC).")
    updated: datetime = Field(description="When the record was last written (UTC).")
    body: str = Field("", description="The markdown body; loaded into the prompt only on demand.")
    path: Path | None = Field(None, description="The file the record was read from.")

    def index_line(self) -> str:
        text = " ".join(self.description.split())
        if len(text) > DESCRIPTION_MAX:  # a hand-edited description may run long
            text = text[: DESCRIPTION_MAX - 1].rstrip() + "…"
        return f"- {self.name} ({self.type}): {text}"

    def to_markdown(self) -> str:
        meta = {
            "name": self.name,
            "type": self.type,
            "description": self.description,
            "created": self.created.isoformat(),
            "updated": self.updated.isoformat(),
        }
        front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=10_000)
        body = self.body.strip("\n")
        return f"---\n{front}---\n\n{body}\n"


class MemoryStore:
    """The memory records of one workspace, under `<home>/projects/<slug>/memory/`."""

    def __init__(self, workspace: Path, home: Path | None = None):
        self.workspace = workspace.expanduser().resolve()
        self.home = home if home is not None else Path.home() / ".workingset"
        self.directory = self.home / "projects" / project_slug(self.workspace) / "memory"

    def path_for(self, name: str) -> Path:
        return self.directory / f"{memory_name(name)}.md"

    def _read(self, path: Path) -> MemoryRecord:
        """Parse one file; MemoryStoreError naming the file and the problem if it is broken."""
        try:
            meta, body = split_front_matter(path.read_text(encoding="utf-8"))
            # A record written by hand may leave out the timestamps: the file's mtime stands in.
            mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(microsecond=0)
            record = MemoryRecord.model_validate(
                {"created": mtime, "updated": mtime, **meta, "body": body, "path": path}
            )
        except (OSError, UnicodeDecodeError, FrontMatterError) as exc:
            raise MemoryStoreError(f"{path}: {exc}; fix or remove the file by hand") from None
        except ValidationError as exc:
            fields = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'front-matter'}: {e['msg']}" for e in exc.errors())
            raise MemoryStoreError(f"{path}: bad front-matter ({fields}); fix or remove the file by hand") from None
        if record.name != path.stem:
            raise MemoryStoreError(
                f"{path}: front-matter name {record.name!r} does not match the file name; rename one to match"
            )
        return record

    def list(self) -> tuple[list[MemoryRecord], list[str]]:
        """All readable records (by type, then name) and one problem line per skipped file."""
        records: list[MemoryRecord] = []
        problems: list[str] = []
        if not self.directory.is_dir():
            return records, problems
        for path in sorted(self.directory.glob("*.md")):
            if path.name.startswith("."):
                continue  # an editor's or an interrupted write's temp file
            try:
                records.append(self._read(path))
            except MemoryStoreError as exc:
                problems.append(str(exc))
        records.sort(key=lambda r: (MEMORY_TYPES.index(r.type), r.name))
        return records, problems

    def names(self) -> builtins.list[str]:
        return sorted(r.name for r in self.list()[0])

    def not_found(self, name: str) -> MemoryNotFound:
        names = self.names()
        available = f"available: {', '.join(names)}" if names else "there are no memory records yet"
        return MemoryNotFound(f"no memory record named {name!r}; {available}")

    def exists(self, name: str) -> bool:
        return self.path_for(name).exists()

    def show(self, name: str) -> MemoryRecord:
        path = self.path_for(name)
        if not path.is_file():
            raise self.not_found(name)
        return self._read(path)

    def write(self, name: str, type: str, description: str, body: str) -> MemoryRecord:
        """Create or update a record; `created` survives an update, `updated` is now."""
        path = self.path_for(name)
        if not is_memory_type(type):
            raise MemoryStoreError(f"invalid memory type {type!r}: use one of {', '.join(MEMORY_TYPES)}")
        description = " ".join(description.split())
        if not description:
            raise MemoryStoreError("a memory record needs a one-line description")
        created = self._read(path).created if path.exists() else _now()  # a broken record is never overwritten
        record = MemoryRecord(
            name=name,
            type=type,
            description=description,
            created=created,
            updated=_now(),
            body=body.strip("\n"),
            path=path,
        )
        self._atomic_write(path, record.to_markdown())
        return record

    def _atomic_write(self, path: Path, text: str) -> None:
        tmp: str | None = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=f".{path.stem}.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
            tmp = None
        except (OSError, UnicodeError) as exc:
            raise MemoryStoreError(f"could not write memory record {path.stem!r} to {path}: {exc}") from None
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def delete(self, name: str) -> bool:
        """Remove a record; False if there is none. A broken record is refused, not removed."""
        path = self.path_for(name)
        if not path.exists():
            return False
        self._read(path)  # raises for a broken record: those are only removed by hand
        try:
            path.unlink()
        except OSError as exc:
            raise MemoryStoreError(f"could not delete memory record {name!r} ({path}): {exc}") from None
        return True


RULES = """\
Project memory keeps records across sessions of this project. Only this index is shown; call MemoryShow(name) to read a record when it is relevant to the task, and MemoryList to see every record.
Worth keeping: what a future session could not learn from the code, git history or stable docs (who the user is and how they want to work, decisions and their reasons, where outside things live). Not worth keeping: temporary task state (plans, todo lists, in-progress findings), or anything you can re-read from the repository.
Types:
- user: the user's role, expertise and preferences
- feedback: guidance the user gave about how to work (do / avoid), with the reason
- project: context not visible in the code: goals, decisions, constraints, deadlines, owners
- reference: where to find things outside the repository: trackers, dashboards, docs
Current evidence wins over memory: a record may be stale. If the code, a tool result or the user contradicts a record, trust the evidence."""

ROOT_RULES = """\
Write with MemoryWrite(name, type, description, body); the same name updates the record. The description is one line: it is what future sessions see here. Keep memory current: update or delete (MemoryDelete) a record that proved stale or wrong, and delete a record when the user asks you to forget it."""

CHILD_RULES = """\
You are a subagent: memory is read-only for you (MemoryList, MemoryShow). If a record proved stale, or you learned something worth remembering, say so in your final answer; the root agent updates memory."""


def memory_section(store: MemoryStore, max_entries: int = MEMORY_INDEX_MAX_ENTRIES, is_root: bool = True) -> Section:
    """The "memory" section: the rules, then the index of the first `max_entries` records
    (each line holds at most DESCRIPTION_MAX chars of description), and a marker saying
    how many more there are."""
    records, problems = store.list()
    lines = [record.index_line() for record in records[:max_entries]]
    if len(records) > max_entries:
        lines.append(
            f"[{len(records) - max_entries} more records not shown (the index shows the first "
            f"{max_entries} of {len(records)}); MemoryList lists them all]"
        )
    if not records:
        lines.append("(no records yet)")
    if problems:
        lines.append(f"[{len(problems)} record file(s) skipped: unreadable front-matter]")
    rules = f"{RULES}\n{ROOT_RULES if is_root else CHILD_RULES}"
    return Section("memory", "Memory", str(store.directory), f"{rules}\n\n## Index\n" + "\n".join(lines))
