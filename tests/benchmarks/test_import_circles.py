"""No room of the repository (agents/, tools/, cluster/, benchmarks/) has an import circle.

The count is `benchmarks.import_circles`, which reads every import as a reader would:
at module level, inside functions and under `if TYPE_CHECKING:` alike."""

from benchmarks.import_circles import circles, import_graph
from tests.support import ROOT


def test_no_room_has_an_import_circle():
    graph = import_graph(ROOT)
    assert len(graph) > 100  # the walk found the rooms
    assert circles(graph) == []


def test_two_modules_importing_each_other_inside_functions_are_a_circle(tmp_path):
    package = tmp_path / "agents"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "first.py").write_text("def f():\n    from agents.second import g\n")
    (package / "second.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import agents.first\n")
    assert circles(import_graph(tmp_path)) == [["agents.first", "agents.second"]]
