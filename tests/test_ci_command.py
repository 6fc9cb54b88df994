"""CI runs exactly the test command the README gives, and that command type-checks."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_command() -> str:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"Run the tests \(this is exactly what CI runs\):\n\n```bash\n(.+)\n```", readme)
    assert match, "the README's test command is not where this test looks for it"
    return match.group(1)


def test_ci_runs_the_readme_test_command_verbatim():
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert lines[-1] == _readme_command()


def test_the_test_command_runs_ruff_mypy_and_pytest():
    assert _readme_command() == "ruff check . && mypy && python3 -m pytest -q"
