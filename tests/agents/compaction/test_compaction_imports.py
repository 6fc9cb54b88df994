"""The compaction package imports in one direction: no module of it imports, directly or
through others, a module that imports it back (every import statement counts, at
module level or inside a function; only `if TYPE_CHECKING:` blocks are left out)."""

import ast
from pathlib import Path

from tests.support import ROOT

PACKAGE = ROOT / "agents" / "compaction"


def _module_name(path: Path) -> str:
    parts = ["agents", *path.relative_to(PACKAGE.parent).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text())
    skipped = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                target = f"{node.module}.{alias.name}"
                found.add(target if target in known else node.module)
    return found & known


def _graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(paths)
    return {name: _imports(path, known) - {name} for name, path in paths.items()}


def _circle_from(start: str, graph: dict[str, set[str]]) -> list[str] | None:
    stack = [(start, [start])]
    while stack:
        node, path = stack.pop()
        for nxt in graph[node]:
            if nxt == start:
                return path
            if nxt not in path:
                stack.append((nxt, [*path, nxt]))
    return None


def test_the_compaction_package_has_no_import_circle():
    graph = _graph()
    # A package __init__ re-exports its modules; importing it first is not a circle.
    inits = {n for n in graph if (PACKAGE.parent / n.replace(".", "/")).is_dir()}
    graph = {n: targets - inits for n, targets in graph.items()}
    assert len(graph) > 15  # the walk found the package
    circles = {n: c for n in graph if (c := _circle_from(n, graph))}
    assert circles == {}


def test_the_registry_is_built_from_the_explicit_table_of_built_ins():
    from agents.compaction.registry import STRATEGIES
    from agents.compaction.strategies import BUILTIN_STRATEGIES

    assert BUILTIN_STRATEGIES.items() <= STRATEGIES.items()
    assert "agents.compaction.registry" not in _graph()["agents.compaction.strategies"]
