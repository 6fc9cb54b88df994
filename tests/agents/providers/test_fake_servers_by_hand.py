"""The fake API servers run by hand (docs/running-agents.md: `python3 -m
agents.providers.testing.openai_server --port 8011`): on a port another process holds,
one line on stderr and exit 2."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from tests.support import ROOT


@pytest.mark.parametrize("server", ["openai_server", "messages_server"])
def test_a_fake_server_on_a_taken_port_says_so_in_one_line_and_exits_2(server):
    with socket.create_server(("127.0.0.1", 0)) as holder:
        port = holder.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", f"agents.providers.testing.{server}", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    (line,) = done.stderr.splitlines()
    assert done.returncode == 2 and done.stdout == ""
    assert f"port {port} on 127.0.0.1 is in use" in line and "give another port with --port N" in line
