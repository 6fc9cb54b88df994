"""The batch's exceptions for workspaces, patches and grading copies. They are kinds of
WorkingsetError; the whole tree is drawn in agents/errors.py.

    TaskEnded              the task ends here with an error row (task_flow.py)
    └── EnvironmentFailed  the task's environment could not be made (names its key)
    WorkspaceError         a workspace, base or grading copy could not be made or read
    ├── GitError           host-side git failed (the message names the step and why)
    └── PatchNotGradable   the agent's patch cannot be graded: too large, or does not apply
                           (the task fails; the agent made the patch)
"""

from __future__ import annotations

from agents.errors import WorkingsetError

__all__ = ["EnvironmentFailed", "GitError", "PatchNotGradable", "TaskEnded", "WorkspaceError"]


class TaskEnded(WorkingsetError):
    """The task ends here with an error row."""


class EnvironmentFailed(TaskEnded):
    """The task's environment could not be made; `key` names it for the row."""

    def __init__(self, message: str, key: str):
        super().__init__(message)
        self.key = key

    def __reduce__(self):  # crosses process boundaries (Ray) with its key
        return (type(self), (str(self), self.key))


class WorkspaceError(WorkingsetError):
    """The workspace could not be made or read; the message names the repository and why."""


class GitError(WorkspaceError):
    """A host-side git command failed or timed out."""


class PatchNotGradable(WorkspaceError):
    """The agent's patch cannot be graded; the message says why (a failed row, not an error)."""
