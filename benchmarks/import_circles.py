"""Import circles inside each room of the repository.

    python3 -m benchmarks.import_circles [--root DIR]

A circle is a group of modules of one room (agents/, tools/, cluster/, benchmarks/)
that import each other round: a strongly connected component of more than one module
in the room's import graph. Every import counts, those under `if TYPE_CHECKING:` and
inside functions too (a circle hidden from the interpreter is still one for a
reader). `from package import name` counts as importing `package.name` when that is a
module, else the module the package's __init__ takes `name` from (a package re-exports
what its modules define: the reader follows the name there), else the package itself.
Reads the source as text; nothing is imported.

It also counts the deep imports: statements in the four rooms that name a module inside
a package the importing module is not part of (`from agents.snapshots._store import X`
rather than `from agents.snapshots import X`), and the modules at each package level.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOMS = ("agents", "tools", "cluster", "benchmarks")


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(tree: ast.AST, package: str) -> list[tuple[str, list[str]]]:
    """(module, names) per import statement: `import a.b` -> ("a.b", []); `from a import
    x, y` -> ("a", ["a.x", "a.y"])."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            found.append((base, [f"{base}.{alias.name}" for alias in node.names]))
    return found


# Repositories the agent works in (the demo's, the eval tasks'): files of the rooms, not modules.
WORKSPACES = ("benchmarks/demo/workspace", "benchmarks/eval_tasks/repos")


def room_modules(root: Path) -> dict[str, Path]:
    return {
        module_name(root, p): p
        for room in ROOMS
        for p in (root / room).rglob("*.py")
        if not p.relative_to(root).as_posix().startswith(WORKSPACES)
    }


def reexports(path: Path) -> dict[str, str]:
    """name -> module, for the `from module import name` statements of a package __init__
    (at its top level or under `if TYPE_CHECKING:`)."""
    tree = ast.parse(path.read_text())
    statements = [*tree.body, *(n for node in tree.body if isinstance(node, ast.If) for n in node.body)]
    return {
        alias.asname or alias.name: node.module
        for node in statements
        if isinstance(node, ast.ImportFrom) and node.module and not node.level
        for alias in node.names
    }


def import_graph(root: Path, *, across_rooms: bool = False) -> dict[str, set[str]]:
    """module -> the modules of its room it imports (of every room, `across_rooms`)."""
    modules = room_modules(root)
    homes = {name: reexports(path) for name, path in modules.items() if path.name == "__init__.py"}

    def home(name: str) -> str | None:
        """The module a name of a package lives in: a submodule, or one the package re-exports it from."""
        package, _, attr = name.rpartition(".")
        if name in modules:
            return name
        if package in homes and homes[package].get(attr, "").startswith(package + "."):
            return homes[package][attr]
        return None

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str | None] = set()
        for base, names in imported_names(ast.parse(path.read_text()), package):
            found = [home(n) for n in names]
            # Every name found in a module of the package: those modules, not its __init__.
            targets |= set(found) if names and all(found) else {resolve(base), *found}
        graph[name] = {
            t for t in targets if t and t != name and (across_rooms or t.split(".")[0] == name.split(".")[0])
        }
    return graph


def third_party_imports(root: Path, room: str) -> set[str]:
    """The top-level names of what the modules of one room import from outside the rooms."""
    found = set()
    for name, path in room_modules(root).items():
        if name.split(".")[0] == room:
            package = name if path.name == "__init__.py" else name.rpartition(".")[0]
            found |= {base.split(".")[0] for base, _ in imported_names(ast.parse(path.read_text()), package)}
    return found - set(ROOMS)


def packages(root: Path) -> list[str]:
    """The packages inside the rooms (the rooms themselves are not packages here)."""
    return sorted(n for n, p in room_modules(root).items() if p.name == "__init__.py" and n not in ROOMS)


def deep_imports(root: Path) -> list[str]:
    """`importer: target` for each statement of the rooms that names a module inside a
    package its importer is not part of; a package's own __init__ is never deep."""
    modules = room_modules(root)
    inits = {n for n, p in modules.items() if p.name == "__init__.py"}
    found = []
    for name, path in sorted(modules.items()):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                targets = [t for t in targets if t in modules] or [node.module]
                targets = targets[1:] if len(targets) > 1 else targets
            else:
                continue
            for target in targets:
                parent = target.rpartition(".")[0]
                if target in inits and not target.rpartition(".")[2].startswith("_"):
                    continue
                if parent in inits and parent not in ROOMS and not (name + ".").startswith(parent + "."):
                    found.append(f"{name}: {target}")
    return found


def modules_per_level(root: Path) -> dict[str, int]:
    """Each room and package -> how many modules it holds directly (__init__ not counted)."""
    modules = room_modules(root)
    levels = {n: 0 for n, p in modules.items() if p.name == "__init__.py"}
    for name, path in modules.items():
        if path.name != "__init__.py" and name.rpartition(".")[0] in levels:
            levels[name.rpartition(".")[0]] += 1
    return levels


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = stack[stack.index(node) :]
                    del stack[stack.index(node) :]
                    if len(group) > 1:
                        found.append(sorted(group))
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                work.append((step, iter(sorted(graph[step]))))
            elif step in stack:
                low[node] = min(low[node], index[step])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    root = parser.parse_args().root.resolve()
    found = circles(import_graph(root))
    for room in ROOMS:
        inside = [c for c in found if c[0].split(".")[0] == room]
        print(f"{room}: {len(inside)} circle(s)")
        for group in inside:
            print("   ", " ".join(group))
    print(f"total: {len(found)}")
    levels = modules_per_level(root)
    widest = max(levels, key=levels.__getitem__)
    print(f"modules per package level: max {levels[widest]} ({widest})")
    print(f"deep imports from outside a package: {len(deep_imports(root))}")


if __name__ == "__main__":
    main()
