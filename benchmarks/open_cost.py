"""CPU per session open in one process, by model provider.

    python -m benchmarks.open_cost [--sessions 50]

Opens `--sessions` sessions (and closes them) for each model spec — scripted,
`anthropic:`, `openai:` (placeholder keys; opening calls no API) — after one warm-up
open, and prints CPU ms per open. A real provider's session builds SDK clients (the
main model's and the judge's), and a subagent builds one per child, so what a client
costs to make is paid per session and per child in a batch.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

import yaml

from agents.opening import OpenSpec, SessionRuntime, open_or_resume
from agents.settings import load_settings
from benchmarks.cpu_tree import load_average


async def open_many(root: Path, spec: str, sessions: int) -> float:
    settings = load_settings(
        root,
        {
            "model": spec,
            "home": str(root / f"home-{spec.partition(':')[0]}"),
            "permissions": {"mode": "default", "headless": "deny-asks"},
        },
    )
    spaces = []
    for i in range(sessions + 1):
        ws = root / f"ws-{spec.partition(':')[0]}-{i}"
        ws.mkdir()
        spaces.append(ws)
    first = await open_or_resume(OpenSpec(settings, spaces[0]), SessionRuntime())  # imports, caches
    await first.aclose()
    started = time.process_time()
    for ws in spaces[1:]:
        session = await open_or_resume(OpenSpec(settings, ws), SessionRuntime())
        await session.aclose()
    return (time.process_time() - started) * 1000 / sessions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50)
    args = parser.parse_args()
    os.environ.setdefault("ANTHROPIC_API_KEY", "placeholder-not-used")
    os.environ.setdefault("OPENAI_API_KEY", "placeholder-not-used")
    with tempfile.TemporaryDirectory(prefix="workingset-open-") as tmp:
        root = Path(tmp)
        script = root / "script.yaml"
        script.write_text(yaml.safe_dump({"turns": [{"text": "done"}]}))
        for spec in (f"scripted:{script}", "anthropic:claude-sonnet-4-5", "openai:gpt-4o"):
            ms = asyncio.run(open_many(root, spec, args.sessions))
            print(f"{spec.partition(':')[0]:<10} {ms:7.2f} CPU ms per session open  ({load_average()})", flush=True)


if __name__ == "__main__":
    main()
