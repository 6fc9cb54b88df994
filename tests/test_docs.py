"""The README and docs/ say only what the code does.

For README.md and every docs/*.md: every project file path they name exists; every
`module.name`, `pkg.module:name`, `Class.attribute`, setting key and `WORKINGSET_*`
variable they name in backticks resolves (the module imports and has the attribute; a
bare class is found in the project; a setting is a field of the settings model); every
relative link reaches its page and heading; and every `workingset …`, `python3 -m …`
and `python3 script.py` command they show, in a code block or a code span, answers
`--help` with exit 0 and knows every long option the docs give it (`workingset` on the
CLI's own parser, the project's modules in this process, other programs in parallel
threads). The examples are real too: the event table lists every event and field of
agents/events.py, and the task rows, config files and scripted models shown load as
the harness loads them.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import io
import json
import os
import re
import runpy
import shlex
import subprocess
import sys
import tomllib
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PACKAGES = ("agents", "tools", "cluster", "benchmarks")
_PATH = re.compile(r"^(?:agents|tools|cluster|benchmarks|tests|docs|\.ci)/[\w./-]*$")
_DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
_ENTRY = re.compile(r"^((?:agents|tools|cluster|benchmarks)(?:\.\w+)+):(\w+)")
_CALL = re.compile(r"^([\w.]+)\(.*\)$")  # `open_or_resume(spec, runtime)` names open_or_resume
_FILE_SUFFIXES = {
    "md",
    "txt",
    "json",
    "jsonl",
    "toml",
    "yaml",
    "yml",
    "py",
    "db",
    "c",
    "pth",
    "lock",
    "cfg",
    "ini",
    "png",
    "pdf",
    "traj",
    "log",
    "local",
}
_PAIR = re.compile(r"`((?:agents|tools|cluster|benchmarks)/[\w/]+\.py)`[,:]?\s+`([A-Za-z_][\w.]*)(?:\([^`]*\))?`")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_SHELLS = {"", "bash", "sh", "shell", "console"}


@dataclass(frozen=True)
class Doc:
    path: Path
    prose: str  # text outside code blocks, lines joined (a code span may wrap)
    blocks: tuple[tuple[str, str], ...]  # (language, body) of each fenced block

    @property
    def name(self) -> str:
        return self.path.relative_to(ROOT).as_posix()

    def spans(self) -> list[str]:
        return [s.strip().rstrip(".,;:") for s in re.findall(r"`([^`]+)`", self.prose)]


@cache
def _doc(path: Path) -> Doc:
    prose, blocks, body, lang = [], [], [], None
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            if lang is None:
                lang = line[3:].strip()
            else:
                blocks.append((lang, "\n".join(body)))
                body, lang = [], None
        elif lang is None:
            prose.append(line)
        else:
            body.append(line)
    return Doc(path, " ".join(prose), tuple(blocks))


# -- paths ------------------------------------------------------------------------------


def _named_paths(doc: Doc) -> set[str]:
    words = [w for span in doc.spans() for w in span.split()]
    for _, body in doc.blocks:
        words += [w.split(":", 1)[-1].split("=", 1)[-1].strip("\"'") for w in body.split()]
    return {w.rstrip("/") for w in words if _PATH.match(w) and not any(c in w for c in "*<…")}


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_file_path_the_docs_name_exists(path):
    missing = sorted(p for p in _named_paths(_doc(path)) if not (ROOT / p).exists())
    assert not missing, f"{path.name} names paths that do not exist: {missing}"


# -- names --------------------------------------------------------------------------------


@cache
def _project_classes() -> dict[str, list[str]]:
    """Class name -> the modules that define it, for every module of the four rooms."""
    found: dict[str, list[str]] = {}
    for package in PACKAGES:
        for file in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(file.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            for node in ast.walk(ast.parse(file.read_text())):
                if isinstance(node, ast.ClassDef):
                    found.setdefault(node.name, []).append(module)
    return found


def _has(owner: object, name: str) -> bool:
    if hasattr(owner, name):
        return True
    fields = getattr(owner, "model_fields", None) or getattr(owner, "__dataclass_fields__", None) or {}
    annotated = {n for klass in getattr(owner, "__mro__", ()) for n in getattr(klass, "__annotations__", {})}
    return name in fields or name in annotated


def _attribute_chain(owner: object, names: list[str]) -> bool:
    for name in names:
        if not _has(owner, name):
            return False
        owner = getattr(owner, name, None)
    return True


def _module_attribute(dotted: str) -> bool:
    """`a.b.c.D.e`: import the longest module prefix, then walk the attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        return _attribute_chain(module, parts[cut:])
    return False


@cache
def _instance_attributes(module: str, name: str) -> frozenset[str]:
    """What the class's methods assign to `self.X`: attributes no class object shows."""
    source = Path(importlib.import_module(module).__file__ or "").read_text()
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == name:
            for target in ast.walk(node):
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.ctx, ast.Store)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    found.add(target.attr)
    return frozenset(found)


def _class_attribute(dotted: str) -> bool:
    name, *rest = dotted.split(".")
    for module in _project_classes().get(name, []):
        owner = getattr(importlib.import_module(module), name)
        if _attribute_chain(owner, rest) or (len(rest) == 1 and rest[0] in _instance_attributes(module, name)):
            return True
    return False


@cache
def _settings_sections() -> set[str]:
    from agents.settings._config import WorkingsetSettings

    return set(WorkingsetSettings.model_fields)


def _setting(dotted: str) -> bool:
    from pydantic import BaseModel

    from agents.settings._config import WorkingsetSettings

    model: object = WorkingsetSettings
    for name in dotted.split("."):
        fields = getattr(model, "model_fields", None)
        if fields is None or name not in fields:
            return False
        annotation = fields[name].annotation
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    return True


def _variable(name: str) -> bool:
    """A `WORKINGSET_*` variable is a setting's, or one of those that are not (by design)."""
    from agents.settings._keys import NON_SETTING_VARIABLES

    dotted = name.removeprefix("WORKINGSET_").lower().replace("__", ".")
    return _setting(dotted) or name in NON_SETTING_VARIABLES


def _resolves(span: str) -> bool | None:
    """True or False for a name the docs claim exists; None for text that names nothing here."""
    if re.match(r"^WORKINGSET_[A-Z0-9_]*[A-Z0-9]$", span):
        return _variable(span)
    entry = _ENTRY.match(span)
    if entry:
        return _module_attribute(f"{entry.group(1)}.{entry.group(2)}")
    call = _CALL.match(span)
    if call and "." in call.group(1):
        span = call.group(1)
    if not _DOTTED.match(span) or span.rsplit(".", 1)[1] in _FILE_SUFFIXES:
        return None
    first = span.split(".", 1)[0]
    if first in PACKAGES and _module_attribute(span):
        return True
    if first in _settings_sections() and span.islower():  # camelCase: another program's key
        return _setting(span)
    if first in PACKAGES:
        return False
    if first[0].isupper():
        return _class_attribute(span)
    return None


def _named_pairs(doc: Doc) -> list[tuple[str, str]]:
    """ "`agents/session/_loop.py` `Session`": the file defines the name."""
    return _PAIR.findall(doc.prose)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_module_class_and_setting_the_docs_name_exists(path):
    doc = _doc(path)
    wrong = sorted({s for s in doc.spans() if _resolves(s) is False})
    for file, name in _named_pairs(doc):
        module = ".".join(Path(file).with_suffix("").parts).removesuffix(".__init__")
        if not _module_attribute(f"{module}.{name}"):
            wrong.append(f"{file} {name}")
    assert not wrong, f"{path.name} names what the code does not have: {wrong}"


# -- links --------------------------------------------------------------------------------


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but - and _ dropped, spaces to -."""
    seen: dict[str, int] = {}
    anchors = set()
    for line in path.read_text().splitlines():
        heading = re.match(r"^#{1,6} (.+)$", line)
        if not heading or line.startswith("#!"):
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower().replace("`", "")).replace(" ", "-")
        anchors.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_reaches_its_page_and_heading(path):
    broken = []
    for target in _LINK.findall(_doc(path).prose):
        if re.match(r"^[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        page = (path.parent / file).resolve() if file else path
        if not page.exists() or (anchor and page.suffix == ".md" and anchor not in _anchors(page)):
            broken.append(target)
    assert not broken, f"{path.name} links to what is not there: {broken}"


# -- commands -----------------------------------------------------------------------------


def _command_lines(body: str) -> list[str]:
    joined = re.sub(r"\\\n\s*", " ", body)
    lines = []
    for line in joined.splitlines():
        line = line.strip().removeprefix("$ ")
        for part in re.split(r"\s*(?:&&|;)\s*", line):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:
                continue
            while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
                words = words[1:]  # VAR=value before the command
            if "--" in words and "workingset" in words[words.index("--") :]:
                words = words[words.index("--") + 1 :]  # `ray job submit … -- workingset …`
            if words and (
                words[0] == "workingset"
                or (
                    words[0] in ("python", "python3")
                    and len(words) > 1
                    and (words[1] == "-m" or words[1].endswith(".py"))
                )
            ):
                lines.append(shlex.join(words))
    return lines


@cache
def _shown_commands() -> dict[str, list[str]]:
    """Each command the docs show -> where."""
    found: dict[str, list[str]] = {}
    for path in DOCS:
        doc = _doc(path)
        shown = [body for lang, body in doc.blocks if lang in _SHELLS]
        shown += [span for span in doc.spans() if span.startswith(("workingset ", "python3 ", "python -m "))]
        for line in (line for body in shown for line in _command_lines(body)):
            found.setdefault(line, []).append(path.relative_to(ROOT).as_posix())
    return found


def _long_options(command: str) -> set[str]:
    """The long options a command gives, a synopsis's `[--flag ARG]` included."""
    return set(re.findall(r"(?<![\w-])--[a-z][\w-]*", command))


def _workingset_help(words: list[str]) -> tuple[int, str]:
    """`workingset SUB … --help` on the CLI's parser, in this process: (exit code, help)."""
    from cluster.terminal._cli import build_parser

    parser, path = build_parser(), []
    for word in words[1:]:
        subparsers = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
        if not subparsers or word not in subparsers[0].choices:
            break
        parser, path = subparsers[0].choices[word], [*path, word]
    if len(words) > 1 and not words[1].startswith("-") and not path:
        return 2, f"workingset has no command {words[1]!r}"
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), pytest.raises(SystemExit) as ended:
        build_parser().parse_args([*path, "--help"])
    return ended.value.code or 0, out.getvalue() + " ".join(parser._option_string_actions)


@cache
def _extras() -> dict[str, str]:
    """Distribution name (as an import name) -> the extra that brings it."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    return {
        re.split(r"[<>=\[ ]", dep)[0].replace("-", "_").lower(): extra
        for extra, deps in meta.items()
        if extra != "dev"
        for dep in deps
    }


def _argv(words: list[str]) -> list[str] | None:
    """The --help call of a `python3 -m X` or `python3 script.py` command; None when the
    module has no argument parser (then --help would run it)."""
    if words[1] == "-m":
        spec = importlib.util.find_spec(words[2])
        if spec is None:
            return [sys.executable, "-m", words[2], "--help"]  # fails, naming the module
        origin = Path(spec.origin or "")
        source = origin.parent / "__main__.py" if origin.name == "__init__.py" else origin
        if words[2].split(".")[0] in PACKAGES and "argparse" not in source.read_text():
            return None
        return [sys.executable, "-m", words[2], "--help"]
    return [sys.executable, str(ROOT / words[1]), "--help"]


def _help_in_process(module: str) -> tuple[int, str]:
    """`python -m MODULE --help` run here: the project's modules share this process's
    imports, so thirty of them cost seconds, not thirty interpreters' start-up."""
    out, argv = io.StringIO(), sys.argv
    sys.argv = [module, "--help"]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), warnings.catch_warnings():
            # run as __main__ a module another benchmark already imported: harmless here
            warnings.filterwarnings("ignore", "'.*' found in sys.modules", RuntimeWarning)
            runpy.run_module(module, run_name="__main__", alter_sys=False)
    except SystemExit as ended:
        return (ended.code if isinstance(ended.code, int) else 1 if ended.code else 0), out.getvalue()
    except ModuleNotFoundError as exc:
        return 1, f"{out.getvalue()}\nModuleNotFoundError: No module named '{exc.name}'"
    except ImportError as exc:  # runpy's own: no such module
        return 1, f"{out.getvalue()}\nImportError: {exc}"
    finally:
        sys.argv = argv
    return 0, out.getvalue()


@pytest.fixture(scope="module")
def helps(tmp_path_factory) -> dict[str, tuple[int, str]]:
    """Every shown `python` command's --help, once each: the project's modules in this
    process, other programs in parallel threads."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "HOME": str(tmp_path_factory.mktemp("home")),
    }
    calls = {
        line: argv
        for line in _shown_commands()
        if not line.startswith("workingset") and (argv := _argv(shlex.split(line))) is not None
    }

    def run(argv: tuple[str, ...]) -> tuple[int, str]:
        if argv[1] == "-m" and argv[2].split(".")[0] in PACKAGES:
            return _help_in_process(argv[2])
        done = subprocess.run(
            argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120, stdin=subprocess.DEVNULL
        )
        return done.returncode, done.stdout + done.stderr

    unique = sorted({tuple(argv) for argv in calls.values()})
    others = [argv for argv in unique if not (argv[1] == "-m" and argv[2].split(".")[0] in PACKAGES)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        started = {argv: pool.submit(run, argv) for argv in others}  # while this process runs its own
        ran = {argv: run(argv) for argv in unique if argv not in started}
        ran |= {argv: future.result() for argv, future in started.items()}
    return {line: ran[tuple(argv)] for line, argv in calls.items()}


@pytest.mark.xdist_group("docs")
@pytest.mark.parametrize("command", sorted(_shown_commands()))
def test_every_command_the_docs_show_answers_help(command, helps):
    words = shlex.split(command)
    where = ", ".join(sorted(set(_shown_commands()[command])))
    if words[0] == "workingset":
        code, text = _workingset_help(words)
    elif command not in helps:
        module = words[2]
        assert importlib.util.find_spec(module) is not None, f"{where}: no module {module}"
        return  # no argument parser: its usage is its own (e.g. one DIR argument); --help would run it
    else:
        code, text = helps[command]
        missing = re.search(r"No module named '([\w.]+)'", text)
        if code != 0 and missing and missing.group(1).split(".")[0].lower() in _extras():
            name = missing.group(1).split(".")[0]
            pytest.skip(f"{command}: needs the [{_extras()[name.lower()]}] extra ({name} is not installed)")
    assert code == 0, f"{where}: `{command} --help` exited {code}:\n{text[-2000:]}"
    if words[0] == "workingset" or words[2].split(".")[0] in PACKAGES:
        known = set(re.findall(r"--[a-z][\w-]*", text))
        unknown = sorted(_long_options(command) - known)
        assert not unknown, f"{where}: `{command}` gives options its --help does not know: {unknown}"


# -- the event schema ---------------------------------------------------------------------


def test_the_event_table_lists_every_event_with_its_fields():
    from typing import get_args

    from agents.events import EndReason, Event

    union, _ = get_args(Event)
    page = _doc(ROOT / "docs" / "events.md").prose
    rows = dict(re.findall(r"\| `(\w+)` \| ([^|]+(?:\\\|[^|]*)*) \|", page))
    models = {m.model_fields["type"].default: m for m in get_args(union)}
    assert sorted(rows) == sorted(models), "docs/events.md and agents/events.py list other event types"
    for kind, model in models.items():
        shown = set(re.findall(r"`(\w+)`", rows[kind]))
        unlisted = sorted(set(model.model_fields) - {"type", "session_id", "ts", "path"} - shown)
        assert not unlisted, f"docs/events.md: {kind} does not list its fields {unlisted}"
    reasons = set(get_args(EndReason)) - set(re.findall(r"`(\w+)`", rows["session_ended"]))
    assert not reasons, f"docs/events.md: session_ended does not list the reasons {sorted(reasons)}"


# -- task file lines ----------------------------------------------------------------------


def test_every_task_the_docs_show_is_a_valid_task_file_row(tmp_path):
    from cluster.eval.task_file import load_tasks

    shown = [
        json.loads(body)
        for path in DOCS
        for lang, body in _doc(path).blocks
        if lang == "json" and '"instruction"' in body
    ]
    assert shown, "the docs show no task row"
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(row) + "\n" for row in shown))
    loaded = load_tasks(tasks)
    assert not loaded.problems, [str(p) for p in loaded.problems]


# -- configuration and scripted models ------------------------------------------------------


def _blocks(lang: str) -> list[tuple[str, str]]:
    return [(p.relative_to(ROOT).as_posix(), body) for p in DOCS for kind, body in _doc(p).blocks if kind == lang]


def test_every_config_file_the_docs_show_holds_only_settings_and_loads():
    from agents.settings._config import WorkingsetSettings
    from agents.settings._keys import unknown_keys

    shown = [(where, tomllib.loads(body)) for where, body in _blocks("toml")]
    configs = [(where, data) for where, data in shown if "project" not in data]  # not a pyproject.toml
    assert configs, "the docs show no config file"
    for where, data in configs:
        assert not unknown_keys(WorkingsetSettings, data), f"{where}: {unknown_keys(WorkingsetSettings, data)}"
        WorkingsetSettings(**data)


def test_every_scripted_model_the_docs_show_loads(tmp_path):
    from agents.providers.scripted import load_script

    shown = [(where, body) for where, body in _blocks("yaml") if body.startswith("turns:")]
    assert shown, "the docs show no scripted model"
    for n, (where, body) in enumerate(shown):
        (tmp_path / f"{n}.yaml").write_text(body)
        assert load_script(tmp_path / f"{n}.yaml").turns, where
