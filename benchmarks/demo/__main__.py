"""The offline main job: a scripted agent fixes a bug in a fresh copy of a sample repo.

    python -m benchmarks.demo [--json] [--keep DIR]

The sample workspace is copied to a temporary directory first, so the demo can be
run any number of times and never edits the files shipped with Workingset.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from cluster.terminal import main as workingset_main

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON events instead of text")
    parser.add_argument("--keep", type=Path, help="copy the workspace here and keep it")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="workingset-demo-") as tmp:
        workspace = args.keep or Path(tmp) / "workspace"
        shutil.copytree(HERE / "workspace", workspace, dirs_exist_ok=True)
        flags = ["--json"] if args.json else []
        return workingset_main(
            [
                "run",
                "Fix the failing greeting test and verify it.",
                "--cwd",
                str(workspace),
                "--model",
                f"scripted:{HERE / 'script.yaml'}",
                # Edits are accepted; the one command the agent may run is named.
                "--permission-mode",
                "accept-edits",
                "--allow",
                "Bash(python test_greeting.py:*)",
                *flags,
            ]
        )


if __name__ == "__main__":
    sys.exit(main())
