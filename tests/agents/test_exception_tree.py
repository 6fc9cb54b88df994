"""The exception trees drawn in agents/errors.py are the classes agents/, tools/ and cluster/ define."""

from __future__ import annotations

import ast
import builtins
import re

import agents.errors
from tests.support import ROOT

ROOMS = ("agents", "tools", "cluster")
# An indented line of a drawing: the tree's glyphs, then a class name.
DRAWN = re.compile(r"^    ((?:│   |    )*)(├── |└── )?([A-Za-z_]\w*)")


def _base_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _defined() -> dict[str, list[str]]:
    """Exception classes (by name) defined anywhere in the rooms, with their base names."""
    classes: dict[str, list[list[str]]] = {}
    for room in ROOMS:
        for path in (ROOT / room).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ClassDef):
                    classes.setdefault(node.name, []).append([b for b in map(_base_name, node.bases) if b])

    def foreign_exception(name: str) -> bool:
        found = getattr(builtins, name, None)
        return isinstance(found, type) and issubclass(found, BaseException)

    exceptions: dict[str, list[str]] = {}
    grown = True
    while grown:
        grown = False
        for name, definitions in classes.items():
            for bases in definitions:
                if name not in exceptions and any(foreign_exception(b) or b in exceptions for b in bases):
                    assert len(definitions) == 1, f"two exception classes are named {name}"
                    exceptions[name] = bases
                    grown = True
    return exceptions


def _drawn() -> dict[str, str | None]:
    """Each class the docstring draws, with the class drawn above it (None for a root)."""
    parents: dict[str, str | None] = {}
    path: list[str] = []
    for line in (agents.errors.__doc__ or "").splitlines():
        match = DRAWN.match(line)
        if match is None:
            continue
        depth = len(match.group(1)) // 4 + (1 if match.group(2) else 0)
        name = match.group(3)
        assert name not in parents, f"{name} is drawn twice"
        del path[depth:]
        parents[name] = path[-1] if path else None
        path.append(name)
    return parents


def test_every_exception_class_is_drawn_in_the_tree():
    missing = set(_defined()) - set(_drawn())
    assert not missing, f"draw these in agents/errors.py's docstring: {sorted(missing)}"


def test_the_tree_draws_no_class_that_is_not_defined():
    stale = set(_drawn()) - set(_defined())
    assert not stale, f"drawn in agents/errors.py but defined nowhere: {sorted(stale)}"


def test_each_class_is_drawn_under_its_own_parent():
    defined = _defined()
    for name, parent in _drawn().items():
        bases = defined.get(name, [])
        if parent is None:  # a root derives from no exception of ours
            assert not set(bases) & set(defined), f"{name} is drawn as a root but derives from {bases}"
        else:
            assert parent in bases, f"{name} is drawn under {parent} but derives from {bases}"


def test_the_drawing_finds_both_trees():
    roots = [name for name, parent in _drawn().items() if parent is None]
    assert roots[:2] == ["WorkingsetError", "ToolError"] and len(_drawn()) > 30
