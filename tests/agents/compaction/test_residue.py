"""The extractive residue of a cleared tool output: only spans of the output, in a fixed
order, within a character allowance."""

from agents.compaction.residue import residue

PYTEST = """\
============================= test session starts ==============================
tests/test_a.py .F                                                       [100%]
E       assert 1 == 2
FAILED tests/test_a.py::test_two - assert 1 == 2
========================= 1 failed, 1 passed in 0.05s =========================
"""

TRACEBACK = """\
Traceback (most recent call last):
  File "src/loader.py", line 42, in load
    import spam
ImportError: cannot import name spam
"""


def test_no_allowance_keeps_nothing():
    assert residue(PYTEST, 0) == ""


def test_the_exit_status_is_kept():
    assert residue("<returncode>2</returncode>\nboom", 100).startswith("exit 2")


def test_the_test_tally_and_failing_tests_are_kept():
    kept = residue(PYTEST, 300)
    assert "1 failed, 1 passed in 0.05s" in kept and "FAILED tests/test_a.py::test_two" in kept


def test_error_lines_and_traceback_locations_are_kept():
    kept = residue(TRACEBACK, 300)
    assert "ImportError: cannot import name spam" in kept and "src/loader.py:42 in load" in kept


def test_file_line_references_of_a_grep_are_kept():
    assert "src/parser.py:12" in residue("src/parser.py:12:    return tokens\n", 200)


def test_definitions_are_kept_with_their_line():
    assert residue("  10\tdef parse(text):\n  20\tclass Token:\n", 200).endswith("parse (line 10); Token (line 20)")


def test_the_residue_never_exceeds_its_allowance():
    assert len(residue(PYTEST + TRACEBACK * 5, 60)) <= 60


def test_plain_prose_leaves_no_residue():
    assert residue("all good here, nothing to report", 200) == ""


def test_the_same_text_gives_the_same_residue():
    assert residue(PYTEST + TRACEBACK, 200) == residue(PYTEST + TRACEBACK, 200)
