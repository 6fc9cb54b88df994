"""CI runs exactly the test command the README gives, and that command type-checks."""

import re

from tests.support import ROOT


def _readme_command() -> str:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"Run the tests \(this is exactly what CI runs\):\n\n```bash\n(.+)\n```", readme)
    assert match, "the README's test command is not where this test looks for it"
    return match.group(1)


def test_ci_runs_the_readme_test_command_verbatim():
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert lines[-1] == _readme_command()


def test_the_test_command_runs_ruff_its_formatter_check_mypy_and_pytest():
    assert _readme_command() == "ruff check . && ruff format --check . && mypy && python3 -m pytest -q"


def test_the_quickstart_shows_the_readme_test_command():
    page = (ROOT / "docs" / "quickstart.md").read_text()
    assert f"```bash\n{_readme_command()}\n```" in page
