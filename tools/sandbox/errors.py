"""Why the sandbox cannot run a command on this host (the tools' exception tree is drawn
in agents/errors.py).

The probes raise the specific kinds (no cgroup, no safe identity, no seccomp filter for
this machine) and probe.py or runner.py re-raise them as a plain SandboxUnavailable
with the fix and the opt-out appended. They are kinds of it all the same, so one that
escapes is still an error result the model sees, never a crash.
"""

from __future__ import annotations

from tools.base import ToolError

__all__ = ["SandboxUnavailable"]


class SandboxUnavailable(ToolError, RuntimeError):
    """The sandbox cannot start with its protections on this host, and the user did not
    opt out. A ToolError, so Bash reports it as an error result instead of crashing."""
