"""The command line starts without the heavy libraries: building the parser and printing
any command's help imports no model SDK, no MCP SDK, no Ray, no gRPC, no tree-sitter and
none of the benchmark's numerics. Checked by what a fresh interpreter has imported, not
by a clock (`workingset --help` takes ~0.7 s of CPU with this, ~4 s without)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.eval_support import ROOT

HEAVY = ("anthropic", "openai", "mcp", "mcp_types", "ray", "grpc", "tree_sitter", "matplotlib", "scipy", "numpy")

_AFTER = """
import contextlib, json, sys
import cluster.terminal._cli
argv = json.loads(sys.argv[1])
if argv is not None:
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(None):
        cluster.terminal._cli.main(argv)
print(json.dumps(sorted(m for m in {heavy} if m in sys.modules)))
"""


def _imported_after(argv: list[str] | None) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _AFTER.format(heavy=HEAVY), json.dumps(argv)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_the_command_line_imports_no_heavy_library():
    assert _imported_after(None) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["run", "--help"],
        ["eval", "--help"],
        ["bench", "compaction", "--help"],
        ["sessions", "--help"],
        ["memory", "--help"],
        ["trust", "--help"],
    ],
    ids=lambda argv: " ".join(argv),
)
def test_a_commands_help_imports_no_heavy_library(argv):
    assert _imported_after(argv) == []
