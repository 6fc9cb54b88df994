"""What an approval prompt shows for a file change: a bounded unified diff.

An Edit is shown as the diff of old_string to new_string; a Write as the diff of the
file's current content to the new content (a new file: all additions). The current
content is read only when that is safe: through a handle on the workspace that never
leaves it (tools.files._beneath), regular files only (a FIFO or device is never opened for
reading), at most `MAX_READ_BYTES`, and text only. Otherwise the prompt says why no
diff is shown. The diff is cut at `MAX_DIFF_LINES` lines, with a line saying so.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from pydantic import BaseModel

from tools.files import Beneath, BeneathError, EditInput, WriteInput, relative_path

__all__ = ["MAX_DIFF_LINES", "MAX_READ_BYTES", "change_preview"]

MAX_DIFF_LINES = 200
MAX_LINE_CHARS = 400
MAX_READ_BYTES = 256 * 1024
_MAX_DIFF_INPUT_LINES = 5_000  # difflib is quadratic at worst: larger inputs are not diffed


def change_preview(args: BaseModel, workspace: Path) -> str | None:
    """The diff an approval prompt shows for this call, or None for a call that is not a
    file change."""
    if isinstance(args, EditInput):
        title = f"{args.path} (every occurrence)" if args.replace_all else args.path
        return _diff(args.old_string, args.new_string, f"a/{title}", f"b/{title}")
    if isinstance(args, WriteInput):
        current, why = _current_text(workspace, args)
        if why:
            return f"(no diff: {why})\n" + _diff("", args.content, "/dev/null", f"b/{args.path}")
        before = "/dev/null" if current is None else f"a/{args.path}"
        return _diff(current or "", args.content, before, f"b/{args.path}")
    return None


def _current_text(workspace: Path, args: WriteInput) -> tuple[str | None, str | None]:
    """The file's text now (None when it does not exist), or why it is not shown. The
    file is the one the permission check pinned the call to, when it has been checked."""
    pinned = args.pinned_target()
    if isinstance(pinned, str):
        return None, pinned  # the call will be refused
    try:
        with Beneath(workspace) as root:
            rel = pinned.real if pinned is not None else relative_path(workspace, args.path)
            follow = pinned is None  # a pinned path is symlink-free and must stay so
            if root.stat(rel, follow_links=follow) is None:
                return None, None  # a new file
            data = root.read_regular(rel, MAX_READ_BYTES + 1, follow_links=follow)
    except (BeneathError, OSError) as exc:  # not a regular file, outside the workspace, …
        return None, str(exc)
    if len(data) > MAX_READ_BYTES:
        return None, f"the current file is larger than {MAX_READ_BYTES // 1024} KiB"
    if b"\0" in data:
        return None, "the current file is binary"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, "the current file is not UTF-8 text"


def _diff(old: str, new: str, before: str, after: str) -> str:
    old_lines, new_lines = old.splitlines(), new.splitlines()
    if max(len(old_lines), len(new_lines)) > _MAX_DIFF_INPUT_LINES:
        return f"(no diff: more than {_MAX_DIFF_INPUT_LINES} lines)"
    lines = list(difflib.unified_diff(old_lines, new_lines, before, after, lineterm=""))
    if not lines:
        return "(no change)"
    shown = [_clip(line) for line in lines[:MAX_DIFF_LINES]]
    if len(lines) > MAX_DIFF_LINES:
        shown.append(f"… {len(lines) - MAX_DIFF_LINES} more diff lines not shown")
    return "\n".join(shown)


def _clip(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}… ({len(line) - MAX_LINE_CHARS} more characters on this line)"
