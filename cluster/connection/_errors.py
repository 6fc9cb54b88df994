"""The Ray runtime's exceptions, in a module without Ray: the command line catches them
(and checks an address) before it has imported Ray, or without ever importing it.

    ClusterError            the Ray runtime cannot start or be joined
    └── ClusterJoinError    the command names a cluster this process cannot join: no GCS
                            at the address, a form Workingset does not take, or a token
                            it lacks (also ConfigError: fix the command, exit 2)
"""

from __future__ import annotations

from agents.errors import ConfigError, WorkingsetError

__all__ = ["ClusterError", "ClusterJoinError"]


class ClusterError(WorkingsetError):
    """Ray could not be started or reached."""


class ClusterJoinError(ClusterError, ConfigError):
    """`--address` (or RAY_ADDRESS) names no Ray cluster this process can join: nothing
    listens there, something else does, it is a form Workingset does not take, or the
    cluster wants a token this process does not have."""
