"""The sandbox launcher: what the command's process does before it becomes bubblewrap.

    launcher STEP ARGS... -- PROGRAM ARGS...

The harness starts the launcher with vfork+exec: no Python runs between fork and exec,
and the harness's memory (and its threads' locks) never reach the child. The launcher
carries out its steps in order, then executes PROGRAM (bwrap) in place, so the pid the
harness spawned is bwrap's. Two builds of one program:
- launcher.c, compiled when Workingset is installed (setup.py; `cc` needed), which
  starts in about a millisecond;
- this module, run as `python -I -S launcher.py` where the C one was not built (or does
  not run here): the same steps, an interpreter's start-up slower per call (20-50 ms).

The steps (`Steps` writes them; every fd a step is given is closed by it):
    error-fd FD        where a failure goes, as "<step name>: <error>" (close-on-exec)
    step NAME          names the steps that follow in a failure
    join FD            write "0" to FD, a cgroup v1 `tasks`: move this thread, the only one,
                       into the call's cgroup (cgroup.procs would wait for an RCU grace
                       period first, 10-20 ms; one thread's move takes no global lock)
    spawn-into DIRFD   cgroup v2: go on as a child made inside the cgroup (clone3 with
                       CLONE_INTO_CGROUP; no move at all), this process waiting for it and
                       ending as it ended; without clone3 (or in Python), join through the
                       cgroup's cgroup.procs
    mount-ns           a private mount namespace, / made private
    user-ns UID GID    a user and mount namespace mapping only UID and GID (as themselves)
    tmpfs DIR OPTIONS  mount a tmpfs
    mkdir DIR
    bind SRC DST       make DST like SRC (a directory or an empty file), bind SRC on it
    attach FD DIR      move a detached mount (an fd) to DIR
    layer SIZE INODES MODE ATIME_NS MTIME_NS XATTR SOCKET DIR
                       make the workspace layer (`make_layer`), send it over SOCKET
                       (SCM_RIGHTS), attach it at DIR
    overlay DIR OPTIONS  mount an overlayfs (nosuid, nodev)
    rlimit RESOURCE VALUE  soft and hard limit
    ids UID GID        no supplementary groups, then the gid and uid (real, effective, saved)

This file uses the standard library and linux.py only, so that it runs without the
package on sys.path.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # not `signal`, which imports enum: start-up cost
import os
import resource
import sys

TYPE_CHECKING = False  # not typing's: importing typing costs more than the rest of the start-up
if TYPE_CHECKING:
    from collections.abc import Callable

if __package__:
    import tools.sandbox.linux as linux
else:  # run as the launcher: linux.py beside this file, found after the standard library
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    import linux  # type: ignore[no-redef, import-not-found]

__all__ = ["BUILT", "SCRIPT", "Steps", "make_layer", "python_launcher"]

SCRIPT = os.path.realpath(__file__)  # (no pathlib: it would slow the launcher's start)
# launcher.c, compiled by setup.py beside this file.
BUILT = os.path.join(os.path.dirname(SCRIPT), "sandbox-launcher")


def python_launcher() -> tuple[str, ...]:
    """This file as the launcher, run by the harness's own interpreter: isolated (no
    environment variables, no user site) and without site-packages."""
    return (sys.executable, "-I", "-S", SCRIPT)


def make_layer(
    size: int, inodes: int, mode: int, times_ns: tuple[int, int], ids: tuple[int, int] | None, probe_xattr: str
) -> int:
    """A capped tmpfs as a detached mount fd, holding `upper/` (with this mode, times and
    ids) and `work/`. Fails if the tmpfs cannot hold the xattrs overlayfs marks replaced
    directories with (`probe_xattr`'s namespace; user xattrs on tmpfs need Linux 6.6)."""
    fd = linux.detached_tmpfs({"size": str(size), "nr_inodes": str(inodes), "mode": "0700"})
    try:
        os.mkdir("upper", 0o700, dir_fd=fd)
        os.mkdir("work", 0o700, dir_fd=fd)
        work = os.open("work", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
        try:
            os.setxattr(work, probe_xattr, b"1")
        except OSError as exc:
            namespace = probe_xattr.split(".")[0]
            raise OSError(exc.errno, f"tmpfs cannot hold {namespace}.* xattrs: {exc.strerror}") from None
        finally:
            os.close(work)
        if ids is not None:
            os.chown("upper", *ids, dir_fd=fd)
        os.chmod("upper", mode, dir_fd=fd)
        os.utime("upper", ns=times_ns, dir_fd=fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


class Steps:
    """The launcher's command line, step by step, and the fds it must be given."""

    def __init__(self) -> None:
        self.words: list[str] = []
        self.fds: list[int] = []

    def _add(self, *words: object, fds: tuple[int, ...] = ()) -> None:
        self.words += [str(word) for word in words]
        self.fds += fds

    def error_fd(self, fd: int) -> None:
        self._add("error-fd", fd, fds=(fd,))

    def step(self, name: str) -> None:
        self._add("step", name)

    def join(self, fd: int) -> None:
        self._add("join", fd, fds=(fd,))

    def spawn_into(self, directory_fd: int) -> None:
        self._add("spawn-into", directory_fd, fds=(directory_fd,))

    def mount_ns(self) -> None:
        self._add("mount-ns")

    def user_ns(self, uid: int, gid: int) -> None:
        self._add("user-ns", uid, gid)

    def tmpfs(self, directory: str, options: str) -> None:
        self._add("tmpfs", directory, options)

    def mkdir(self, directory: str) -> None:
        self._add("mkdir", directory)

    def bind(self, source: str, target: str) -> None:
        self._add("bind", source, target)

    def attach(self, fd: int, directory: str) -> None:
        self._add("attach", fd, directory, fds=(fd,))

    def layer(
        self,
        size: int,
        inodes: int,
        mode: int,
        times_ns: tuple[int, int],
        probe_xattr: str,
        sender: int,
        directory: str,
    ) -> None:
        self._add("layer", size, inodes, mode, *times_ns, probe_xattr, sender, directory, fds=(sender,))

    def overlay(self, directory: str, options: str) -> None:
        self._add("overlay", directory, options)

    def rlimit(self, which: int, value: int) -> None:
        self._add("rlimit", which, value)

    def ids(self, uid: int, gid: int) -> None:
        self._add("ids", uid, gid)

    def command(self, launcher: tuple[str, ...], program: list[str]) -> list[str]:
        """The whole command line: the launcher, these steps, then `program`."""
        return [*launcher, *self.words, "--", *program]


# --- the launcher itself, run as a program ---------------------------------------------


def _join(fd: str) -> None:
    # `tasks` moves one thread: this process must have no other.
    with open("/proc/self/status") as status:
        threads = next(line.split()[1] for line in status if line.startswith("Threads:"))
    if threads != "1":
        raise OSError(0, f"the launcher has {threads} threads; joining through tasks would leave some behind")
    os.write(int(fd), b"0")
    os.close(int(fd))


def _spawn_into(directory: str) -> None:
    procs = os.open("cgroup.procs", os.O_WRONLY | os.O_CLOEXEC, dir_fd=int(directory))
    try:
        os.write(procs, b"0")
    finally:
        os.close(procs)
        os.close(int(directory))


def _mount_ns() -> None:
    linux.unshare(linux.CLONE_NEWNS)
    linux.mount("none", "/", None, linux.MS_REC | linux.MS_PRIVATE)


def _user_ns(uid: str, gid: str) -> None:
    linux.unshare(linux.CLONE_NEWUSER | linux.CLONE_NEWNS)
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1\n"), ("gid_map", f"{gid} {gid} 1\n")):
        fd = os.open(f"/proc/self/{name}", os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
    linux.mount("none", "/", None, linux.MS_REC | linux.MS_PRIVATE)


def _bind(source: str, target: str) -> None:
    if os.path.isdir(source):
        os.mkdir(target)
    else:
        os.close(os.open(target, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600))
    linux.mount(source, target, None, linux.MS_BIND | linux.MS_REC)


def _attach(fd: str, directory: str) -> None:
    linux.move_mount(int(fd), directory)
    os.close(int(fd))


def _layer(size: str, inodes: str, mode: str, atime: str, mtime: str, probe: str, sender: str, directory: str) -> None:
    import socket

    fd = make_layer(int(size), int(inodes), int(mode), (int(atime), int(mtime)), None, probe)
    with socket.socket(fileno=int(sender)) as channel:
        socket.send_fds(channel, [b"L"], [fd])
    linux.move_mount(fd, directory)
    os.close(fd)


def _ids(uid: str, gid: str) -> None:
    os.setgroups([])
    os.setresgid(int(gid), int(gid), int(gid))
    os.setresuid(int(uid), int(uid), int(uid))


_STEPS: dict[str, Callable[..., None]] = {
    "join": _join,
    "spawn-into": _spawn_into,
    "mount-ns": _mount_ns,
    "user-ns": _user_ns,
    "tmpfs": lambda directory, options: linux.mount("tmpfs", directory, "tmpfs", 0, options),
    "mkdir": lambda directory: os.mkdir(directory),
    "bind": _bind,
    "attach": _attach,
    "layer": _layer,
    "overlay": lambda directory, options: linux.mount(
        "overlay", directory, "overlay", linux.MS_NOSUID | linux.MS_NODEV, options
    ),
    "rlimit": lambda which, value: resource.setrlimit(int(which), (int(value), int(value))),
    "ids": _ids,
}
_ARGUMENTS = {
    "join": 1,
    "spawn-into": 1,
    "mount-ns": 0,
    "user-ns": 2,
    "tmpfs": 2,
    "mkdir": 1,
    "bind": 2,
    "attach": 2,
    "layer": 8,
    "overlay": 2,
    "rlimit": 2,
    "ids": 2,
}


def main(argv: list[str]) -> None:
    error_fd, step, i = -1, "starting the sandbox", 0
    try:
        while i < len(argv) and argv[i] != "--":
            name = argv[i]
            if name == "error-fd":
                error_fd = int(argv[i + 1])
                os.set_inheritable(error_fd, False)
                i += 2
            elif name == "step":
                step, i = argv[i + 1], i + 2
            else:
                count = _ARGUMENTS[name]
                _STEPS[name](*argv[i + 1 : i + 1 + count])
                i += 1 + count
        step = "starting bubblewrap"
        # Python ignores these at start-up, and an ignored signal stays ignored across exec.
        for number in (_signal.SIGPIPE, _signal.SIGXFSZ):
            _signal.signal(number, _signal.SIG_DFL)
        os.execv(argv[i + 1], argv[i + 1 :])
    except BaseException as exc:  # noqa: BLE001 — whatever it was, the harness hears of it
        if error_fd >= 0:
            try:  # noqa: SIM105 — contextlib would add its imports to every call's start-up
                os.write(error_fd, f"{step}: {exc}".encode(errors="replace")[:4000])
            except OSError:
                pass
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
