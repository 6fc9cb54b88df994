"""Which files of a patch count as test infrastructure (patch_touches_tests)."""

from cluster.eval.patch_audit import touched_test_files


def test_test_modules_helpers_and_interpreter_hooks_count_and_source_files_do_not():
    files = [
        "calc.py",
        "conftest.py",
        "pkg/conftest.py",
        "tests/helpers.py",
        "test/data.json",
        "pkg/test_x.py",
        "pkg/x_test.py",
        "sitecustomize.py",
        "lib/usercustomize.py",
        "evil.pth",
        "pytest.ini",
        "docs/index.md",
        "contest.py",
        "latest_news.py",
    ]
    assert touched_test_files(files, {}) == [
        "conftest.py",
        "evil.pth",
        "lib/usercustomize.py",
        "pkg/conftest.py",
        "pkg/test_x.py",
        "pkg/x_test.py",
        "pytest.ini",
        "sitecustomize.py",
        "test/data.json",
        "tests/helpers.py",
    ]


def test_files_the_hidden_tests_replace_count():
    assert touched_test_files(["src/fixtures.py", "calc.py"], {}, hidden={"src/fixtures.py"}) == ["src/fixtures.py"]


def test_packaging_files_count_only_when_their_pytest_section_changes():
    before = b'[project]\nname = "calc"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'
    version = before.replace(b'"calc"', b'"calc2"')
    addopts = before.replace(b'"-q"', b'"-q -p evil"')
    assert touched_test_files(["pyproject.toml"], {"pyproject.toml": (before, version)}) == []
    assert touched_test_files(["pyproject.toml"], {"pyproject.toml": (before, addopts)}) == ["pyproject.toml"]
    cfg = b"[metadata]\nname = calc\n"
    assert touched_test_files(["setup.cfg"], {"setup.cfg": (cfg, cfg + b"version = 2\n")}) == []
    assert touched_test_files(["setup.cfg"], {"setup.cfg": (cfg, cfg + b"[tool:pytest]\naddopts = -p evil\n")}) == [
        "setup.cfg"
    ]
    assert touched_test_files(["tox.ini"], {"tox.ini": (None, b"[pytest]\naddopts = -x\n")}) == ["tox.ini"]
    assert touched_test_files(["tox.ini"], {"tox.ini": (None, b"[tox]\nenvlist = py3\n")}) == []
    assert touched_test_files(["setup.cfg"], {"setup.cfg": (cfg, b"not [ini")}) == ["setup.cfg"]  # unreadable: counts
