"""Which of the project's modules one model call passes through, from the turn to the provider and back.

    python -m benchmarks.call_path [--list]

A session is opened in this process as `workingset run --local` opens it, on the Anthropic
provider talking to the fake Messages server on 127.0.0.1 (no key, no network). After one
warm-up turn, a second turn of exactly one model call (a text reply, no tools) runs under
a profiler hook that notes the module of every function of tools/, agents/ or cluster/
that is entered. The figure is how many distinct modules that is: what a reader follows
to see one call through. Opening the session is not counted, nor is the CLI's parsing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOMS = ("tools", "agents", "cluster", "benchmarks")


def _fake_server():  # noqa: ANN202 - the server's import is deferred with its dependencies
    from agents.providers.testing import FakeMessagesServer

    return FakeMessagesServer()


async def _one_call(workspace: Path, url: str) -> set[str]:
    from agents.opening import OpenSpec, SessionRuntime, open_or_resume
    from agents.settings import WorkingsetSettings

    settings = WorkingsetSettings.model_validate(
        {
            "model": "anthropic:claude-sonnet-4-5",
            "home": str(workspace.parent / "home"),
            "providers": {"anthropic": {"base_url": url}},
        }
    )
    session = await open_or_resume(OpenSpec(settings, workspace), SessionRuntime())
    await session.run_turn("warm up")
    seen: set[str] = set()

    def note(frame, event, arg):  # noqa: ANN001 - sys.setprofile's signature
        if event == "call":
            module = frame.f_globals.get("__name__", "")
            if module.split(".")[0] in ROOMS:
                seen.add(module)

    sys.setprofile(note)
    try:
        await session.run_turn("Say hello.")
    finally:
        sys.setprofile(None)
    await session.aclose()
    return seen - {__name__}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="name the modules, not only count them")
    args = parser.parse_args()
    os.environ["ANTHROPIC_API_KEY"] = "fake-key"  # the fake server takes any key
    with tempfile.TemporaryDirectory() as tmp, _fake_server() as server:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        (workspace / "README.md").write_text("a project\n")
        modules = asyncio.run(_one_call(workspace, server.url))
    print(f"modules on the path of one model call: {len(modules)}")
    if args.list:
        for name in sorted(modules):
            print(f"  {name}")


if __name__ == "__main__":
    main()
