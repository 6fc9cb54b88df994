"""The grader's in-sandbox modules, copied where a sandbox can read them.

One directory per user and version of the modules, named by their digest under the
system's temporary directory and shared by every process of that user (so nothing is
left behind per process): readable by all (the sandbox's uid reads it; bubblewrap binds
it read-only, like a toolchain), writable by its owner only. One found there that this
user does not own, that others can write, or whose files differ is not used: a fresh
private one is made instead. The workspace never sees it and cannot change it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = ["GraderFiles"]

_MODULES = ("workingset_grader_boot.py", "workingset_grader_reporter.py")


@dataclass(frozen=True)
class GraderFiles:
    directory: Path

    @property
    def bootstrap(self) -> str:
        """The `python -c` text that starts the boot module from this directory."""
        return f"import sys;sys.path.insert(0,{str(self.directory)!r});import workingset_grader_boot as b;b.main()"

    @classmethod
    @functools.cache
    def here(cls) -> GraderFiles:
        package = resources.files("cluster.eval.verdicts.in_sandbox")
        contents = {name: package.joinpath(name).read_bytes() for name in _MODULES}
        digest = hashlib.sha256(b"".join(contents.values())).hexdigest()[:16]
        shared = Path(tempfile.gettempdir()) / f"workingset-grader-{os.geteuid()}-{digest}"
        if _intact(shared, contents):
            return cls(shared)
        fresh = Path(tempfile.mkdtemp(prefix="workingset-grader-"))
        for name, data in contents.items():
            (fresh / name).write_bytes(data)
            (fresh / name).chmod(0o644)
        fresh.chmod(0o755)
        try:
            fresh.rename(shared)  # atomic; fails when another process made it first
        except OSError:
            return cls(shared) if _intact(shared, contents) else cls(fresh)
        return cls(shared)


def _intact(directory: Path, contents: dict[str, bytes]) -> bool:
    """Ours, writable by us alone, holding exactly these files."""
    try:
        st = os.lstat(directory)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return False
        if sorted(os.listdir(directory)) != sorted(contents):
            return False
        for name, data in contents.items():
            fst = os.lstat(directory / name)
            if not stat.S_ISREG(fst.st_mode) or fst.st_uid != os.geteuid() or fst.st_mode & 0o022:
                return False
            if (directory / name).read_bytes() != data:
                return False
    except OSError:
        return False
    return True
