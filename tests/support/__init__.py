"""What the tests share, in one place: fakes (`fakes`: the recording and scripted models,
script files), fixtures' machinery for eval runs (`eval_support`), the Bash sandbox
(`sandbox_support`), snapshots (`snapshot_support`, `resume_support`), compaction
(`clear_then_summarize_support`), Ray clusters a test starts itself (`ray_head`,
`token_cluster`, `not_ray`), TLS (`tls_support`) and a real MCP server (`mcp_test_server`).
The fake model APIs ship with the package: agents.providers.testing.

Tests import from here; no module outside tests/ imports tests/.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository's root
MCP_TEST_SERVER = Path(__file__).resolve().parent / "mcp_test_server.py"
