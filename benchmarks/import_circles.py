"""Import circles inside each room of the repository.

    python3 -m benchmarks.import_circles [--root DIR]

A circle is a group of modules of one room (agents/, tools/, cluster/, benchmarks/)
that import each other round: a strongly connected component of more than one module
in the room's import graph. Every import counts, those under `if TYPE_CHECKING:` and
inside functions too (a circle hidden from the interpreter is still one for a
reader). `from package import name` counts as importing `package.name` when that is a
module, else the package itself. Reads the source as text; nothing is imported.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOMS = ("agents", "tools", "cluster", "benchmarks")


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(tree: ast.AST, package: str) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            names += [base, *(f"{base}.{alias.name}" for alias in node.names)]
    return names


def import_graph(root: Path) -> dict[str, set[str]]:
    modules = {module_name(root, p): p for room in ROOMS for p in (root / room).rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = (resolve(t) for t in imported_names(ast.parse(path.read_text()), package))
        graph[name] = {t for t in targets if t and t != name and t.split(".")[0] == name.split(".")[0]}
    return graph


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
                    group = stack[stack.index(node):]
                    del stack[stack.index(node):]
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


if __name__ == "__main__":
    main()
