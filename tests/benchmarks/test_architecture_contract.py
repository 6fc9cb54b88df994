"""The architecture's contract: rooms in one order, packages with a public face.

Built on `benchmarks.import_circles`, which reads the imports as a reader would (every
statement, inside functions and under `if TYPE_CHECKING:` too; nothing is imported to
find them). The contract holds for the four rooms (tools, agents, cluster, benchmarks):

- the rooms import one way, `tools <- agents <- cluster <- benchmarks`;
- Ray is imported in cluster/ and benchmarks/ only;
- code outside a package imports the package's `__init__`, never one of its modules
  (`from agents.snapshots import DiskSnapshotStore`). A room's own top-level modules are
  its vocabulary and are imported directly (`agents.ports`, `tools.base`: what plugins
  use). Tests are not bound by this: they may import a package's internals;
- each package's `__all__` is what it exports: every name in it resolves, and every
  public name the `__init__` defines or re-exports from the rooms is in it (httpx's
  test_exported_members is the model);
- no package level holds more than 15 modules, except the levels below that are not
  split yet, each held to the count it has now so that it can only shrink.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from benchmarks.import_circles import (
    ROOMS,
    deep_imports,
    import_graph,
    modules_per_level,
    packages,
    room_modules,
    third_party_imports,
)

ROOT = Path(__file__).resolve().parents[2]
MOST_MODULES = 15
# Levels still wider than MOST_MODULES, each at its count today: they may only shrink.
NOT_SPLIT_YET = {
    "benchmarks": 37,
    "benchmarks.compaction": 31,
    "cluster.eval": 32,
    "agents.compaction": 22,
}
# Benchmarks that measure a package's internals reach inside it, as tests may.
REACHES_INSIDE = {
    # swaps the proxy's ClientHello check (a module global) to time the proxy without it
    "benchmarks.egress_proxy: cluster.eval.environments.egress",
    # reads which build of the launcher (C or Python) the sandbox started
    "benchmarks.sandbox_overhead: tools.sandbox.launcher",
    # units.split_keeping_recent (counts events) is not the package's boundaries.split_keeping_recent
    "benchmarks.compaction.peer_rules: agents.compaction.units",
}


ROOMS_IN_ORDER = ("tools", "agents", "cluster", "benchmarks")


def _room(module: str) -> int:
    return ROOMS_IN_ORDER.index(module.split(".")[0])


def _init_exports(package: str) -> set[str]:
    """The public names a package's __init__ defines, or imports from a module of the rooms."""
    tree = ast.parse(room_modules(ROOT)[package].read_text())
    body = [*tree.body, *(n for node in tree.body if isinstance(node, ast.If) for n in node.body)]
    names: set[str] = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] in ROOMS):
            names |= {a.asname or a.name for a in node.names}
    return {n for n in names if not n.startswith("_")}


def test_the_rooms_import_one_way_tools_agents_cluster_benchmarks():
    graph = import_graph(ROOT, across_rooms=True)
    upward = sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets if _room(t) > _room(m))
    assert len(graph) > 100  # the walk found the rooms
    assert upward == []


def test_only_cluster_and_benchmarks_import_ray():
    assert {room: "ray" in third_party_imports(ROOT, room) for room in ROOMS} == {
        "tools": False,
        "agents": False,
        "cluster": True,
        "benchmarks": True,
    }


def test_code_outside_a_package_imports_only_its_init():
    assert set(deep_imports(ROOT)) - REACHES_INSIDE == set()


def test_a_module_imported_from_inside_a_package_counts_as_deep(tmp_path):
    for folder in ("agents", "agents/snapshots"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "agents/snapshots/_shelf.py").write_text("class Shelf: ...\n")
    (tmp_path / "agents/reader.py").write_text("from agents.snapshots._shelf import Shelf\n")
    assert deep_imports(tmp_path) == ["agents.reader: agents.snapshots._shelf"]


def test_every_name_in_a_packages_all_resolves():
    unresolved = []
    for package in packages(ROOT):
        module = importlib.import_module(package)
        unresolved += [f"{package}.{n}" for n in getattr(module, "__all__", []) if not hasattr(module, n)]
    assert unresolved == []


def test_every_public_name_a_package_defines_or_reexports_is_in_its_all():
    differ = {}
    for package in packages(ROOT):
        declared = set(getattr(importlib.import_module(package), "__all__", []))
        if declared != _init_exports(package):
            differ[package] = sorted(declared ^ _init_exports(package))
    assert differ == {}


def test_a_package_level_holds_at_most_fifteen_modules_or_no_more_than_it_holds_today():
    levels = modules_per_level(ROOT)
    wide = {level: n for level, n in levels.items() if n > NOT_SPLIT_YET.get(level, MOST_MODULES)}
    assert len(levels) > 10  # the walk found the packages
    assert wide == {}
