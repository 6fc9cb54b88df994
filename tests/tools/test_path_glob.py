"""The path glob that permission rules and the file tools' deny list share."""

import pytest

from tools.files._path_glob import path_glob_match


@pytest.mark.parametrize(
    ("subject", "pattern", "matches"),
    [
        ("src/a.py", "src/*.py", True),
        ("src/pkg/a.py", "src/*.py", False),
        ("src/pkg/a.py", "src/**", True),
        ("src", "src/**", False),
        ("a.py", "?.py", True),
        ("ab/c", "a?/c", True),
        ("a/c", "a?c", False),
        ("[x]", "[x]", True),
    ],
)
def test_double_star_crosses_directories_and_single_characters_do_not(subject, pattern, matches):
    assert path_glob_match(subject, pattern) is matches


def test_double_star_covers_a_file_name_with_a_newline():
    assert path_glob_match("secrets/a\nb.pem", "secrets/**")


def test_many_stars_against_a_long_path_finish():
    # `re` backtracks through every split of 5,000 characters among the stars.
    assert not path_glob_match("a" * 5_000, "*a*a*a*a*a*a*a*a*b")


@pytest.mark.parametrize(
    ("subject", "pattern", "matches"),
    [
        ("sub/.env", ".env", True),  # no slash: the name at any depth
        ("sub/.env", "/.env", False),  # a leading slash anchors at the workspace
        (".env", "/.env", True),
        ("a/b/.env", "**/.env", True),
        (".env", "**/.env", True),  # `**/` is zero or more directories
        ("a/b/c.py", "a/**/c.py", True),
        ("a/c.py", "a/**/c.py", True),
        ("src/pkg/a.py", "src", True),  # a matching directory covers what lies beneath it
        ("src/pkg/a.py", "src/", True),
        ("lib/src/a.py", "/src", False),
        ("src/a.py", "src/**.py", True),  # `**` inside a segment is `*`
        ("src/pkg/a.py", "src/**.py", False),
        ("/etc/passwd", "**", False),  # an absolute subject lies outside the workspace
    ],
)
def test_patterns_read_as_gitignore_reads_a_line(subject, pattern, matches):
    assert path_glob_match(subject, pattern) is matches
