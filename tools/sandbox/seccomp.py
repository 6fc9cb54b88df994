"""The seccomp filter bwrap installs (`--seccomp FD`) just before it runs the command.

A classic BPF program over `struct seccomp_data` (nr at offset 0, arch at 4, the
arguments from 16), generated here, with no system library. It allows everything
except the calls below, which no build or test needs and which are how a process
reaches past its own sandbox:

| denied (EPERM unless noted) | why |
|---|---|
| `unshare` and `clone` with CLONE_NEWUSER | a new user namespace hands back every capability inside it, the usual first step of a kernel exploit; bwrap's `--disable-userns` also caps the count at the namespace level |
| `clone3` (ENOSYS) | its flags live in memory a filter cannot read; ENOSYS makes libc fall back to `clone`, which is checked |
| `mount`, `umount2`, `pivot_root`, `chroot`, the new mount API (`open_tree`, `move_mount`, `fsopen`, `fsconfig`, `fsmount`, `fspick`, `mount_setattr`, `open_tree_attr`) | the view of the host is fixed by bwrap; nothing inside may change it |
| `ptrace`, `process_vm_readv`, `process_vm_writev`, `pidfd_getfd`, `kcmp` | reading or steering another process (another sandboxed command, or bwrap's own init) |
| `keyctl`, `add_key`, `request_key` | the kernel keyring is not namespaced: keys of the same uid elsewhere |
| `bpf`, `perf_event_open` | kernel programs and performance counters: large attack surface, host-wide data |
| `kexec_load`, `kexec_file_load`, `init_module`, `finit_module`, `delete_module` | replacing the kernel or loading code into it |
| `reboot`, `swapon`, `swapoff`, `settimeofday`, `clock_settime`, `adjtimex`, `clock_adjtime`, `acct`, `quotactl`, `quotactl_fd`, `syslog`, `vhangup`, `nfsservctl`, `lookup_dcookie` | machine administration and the kernel log |
| `iopl`, `ioperm` (x86) | raw port I/O |
| `userfaultfd` | lets an exploit stall the kernel at a chosen page fault to win a race |
| `setns` | joining another namespace through a leaked fd |
| `open_by_handle_at` | opens files by handle, bypassing path checks (the classic container escape) |
| `io_uring_setup`, `io_uring_enter`, `io_uring_register` (ENOSYS) | a large, often-exploited kernel surface; programs fall back to ordinary I/O on ENOSYS |
| `chmod`, `fchmod`, `fchmodat`, `fchmodat2` to a mode with S_ISUID or S_ISGID; `open`, `openat`, `creat`, `mknod`, `mknodat` creating with those bits | the workspace is idmapped: a file the command makes lands on disk owned by the workspace's owner (root, in evaluation), so a setuid bit would hand that owner's identity to anyone on the host who runs it |
| `openat2` (ENOSYS) | its mode lives in memory a filter cannot read; libc's `open` does not use it |
| x32 calls on x86-64, and any call made through a foreign ABI (i386 `int 0x80`, arm32 compat) | the numbers above are the native table's; another ABI would slip past them |

`socket` and `socketpair` are allowed for an allow-list of address families, the ones
builds and tests use: `AF_UNIX`, `AF_INET`, `AF_INET6`, and `AF_NETLINK` with protocol
`NETLINK_ROUTE` only. Every other family (`AF_VSOCK` to the hypervisor, `AF_PACKET`,
`AF_ALG`'s kernel crypto, `AF_KEY`, `AF_XDP`, `AF_BLUETOOTH`, `AF_TIPC`, `AF_RDS`, and
whatever a later kernel adds) fails with EAFNOSUPPORT, as on a kernel built without it:
these are seldom-used protocol stacks, several of them loaded as modules on first use,
with a long record of exploitable bugs. Another netlink protocol (netfilter, xfrm, generic
netlink, audit, uevents, sock_diag) fails with EPROTONOSUPPORT. NETLINK_ROUTE stays
because glibc's `getifaddrs` and `if_nameindex` need it (node's `os.networkInterfaces`,
psutil, `ip`) and `getaddrinfo` with AI_ADDRCONFIG asks it (that one falls back when it
is refused); pip, git and curl create no netlink socket at all. Without CAP_NET_ADMIN it
can only read the sandbox's own network namespace: a loopback device. The family is an
`int`, so the kernel reads only the argument's low word, which is what the filter reads.

Not filtered, and why that is safe here: `socket(AF_UNIX)` — the allow-list view shows
no host socket (`/run` and `/tmp` are private, `/var` and home are absent) and
abstract sockets belong to the network namespace, which is the sandbox's own; other
namespace flags of `unshare`/`clone` need CAP_SYS_ADMIN, which the command lacks.
Most of the denied calls also need a capability the command does not have; the filter
makes the refusal independent of kernel bugs in those checks.
"""

from __future__ import annotations

import errno
import platform
import struct
from dataclasses import dataclass

from tools.sandbox.errors import SandboxUnavailable

__all__ = ["DENIED", "SeccompUnsupported", "filter_program", "native_arch"]

# BPF opcodes (linux/filter.h, linux/bpf_common.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JSET_K = 0x45
_RET_K = 0x06

_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000

_OFF_NR, _OFF_ARCH, _OFF_ARGS = 0, 4, 16  # args[i] at 16 + 8 i; little-endian: low word first
_CLONE_NEWUSER = 0x10000000
_X32_SYSCALL_BIT = 0x40000000

DENIED = (
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "open_tree_attr",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "settimeofday",
    "clock_settime",
    "adjtimex",
    "clock_adjtime",
    "acct",
    "quotactl",
    "quotactl_fd",
    "syslog",
    "vhangup",
    "nfsservctl",
    "lookup_dcookie",
    "iopl",
    "ioperm",
    "userfaultfd",
    "setns",
    "open_by_handle_at",
)
# socket(family, type, protocol) and socketpair(family, type, protocol, sv): the families
# that may be created (linux/socket.h), and the one netlink protocol (linux/netlink.h).
_AF_UNIX, _AF_INET, _AF_INET6, _AF_NETLINK = 1, 2, 10, 16
_NETLINK_ROUTE = 0
_SOCKET_CALLS = ("socket", "socketpair")
_ENOSYS = ("clone3", "io_uring_setup", "io_uring_enter", "io_uring_register", "openat2")
_S_ISUID_ISGID = 0o6000
# (call, argument index, bits that make it refused)
_ARGUMENT_CHECKS = (
    ("clone", 0, _CLONE_NEWUSER),
    ("unshare", 0, _CLONE_NEWUSER),
    ("chmod", 1, _S_ISUID_ISGID),
    ("fchmod", 1, _S_ISUID_ISGID),
    ("fchmodat", 2, _S_ISUID_ISGID),
    ("fchmodat2", 2, _S_ISUID_ISGID),
    ("open", 2, _S_ISUID_ISGID),
    ("openat", 3, _S_ISUID_ISGID),
    ("creat", 1, _S_ISUID_ISGID),
    ("mknod", 1, _S_ISUID_ISGID),
    ("mknodat", 2, _S_ISUID_ISGID),
)

# Numbers shared by every architecture (the common table, Linux 5.1+).
_COMMON = {
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "clone3": 435,
    "openat2": 437,
    "pidfd_getfd": 438,
    "mount_setattr": 442,
    "quotactl_fd": 443,
    "fchmodat2": 452,
    "open_tree_attr": 467,
}
# From asm/unistd_64.h (x86-64) and asm-generic/unistd.h (aarch64).
_X86_64 = {
    **_COMMON,
    "socket": 41,
    "socketpair": 53,
    "open": 2,
    "clone": 56,
    "creat": 85,
    "chmod": 90,
    "fchmod": 91,
    "mknod": 133,
    "openat": 257,
    "mknodat": 259,
    "fchmodat": 268,
    "ptrace": 101,
    "syslog": 103,
    "vhangup": 153,
    "pivot_root": 155,
    "adjtimex": 159,
    "chroot": 161,
    "acct": 163,
    "settimeofday": 164,
    "mount": 165,
    "umount2": 166,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "iopl": 172,
    "ioperm": 173,
    "init_module": 175,
    "delete_module": 176,
    "quotactl": 179,
    "nfsservctl": 180,
    "lookup_dcookie": 212,
    "clock_settime": 227,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "unshare": 272,
    "perf_event_open": 298,
    "open_by_handle_at": 304,
    "clock_adjtime": 305,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "kcmp": 312,
    "finit_module": 313,
    "kexec_file_load": 320,
    "bpf": 321,
    "userfaultfd": 323,
}
_AARCH64 = {
    **_COMMON,
    "socket": 198,
    "socketpair": 199,
    "mknodat": 33,
    "fchmod": 52,
    "fchmodat": 53,
    "openat": 56,
    "lookup_dcookie": 18,
    "umount2": 39,
    "mount": 40,
    "pivot_root": 41,
    "nfsservctl": 42,
    "chroot": 51,
    "vhangup": 58,
    "quotactl": 60,
    "acct": 89,
    "unshare": 97,
    "kexec_load": 104,
    "init_module": 105,
    "delete_module": 106,
    "clock_settime": 112,
    "syslog": 116,
    "ptrace": 117,
    "reboot": 142,
    "settimeofday": 170,
    "adjtimex": 171,
    "add_key": 217,
    "request_key": 218,
    "keyctl": 219,
    "clone": 220,
    "swapon": 224,
    "swapoff": 225,
    "perf_event_open": 241,
    "open_by_handle_at": 265,
    "clock_adjtime": 266,
    "setns": 268,
    "process_vm_readv": 270,
    "process_vm_writev": 271,
    "kcmp": 272,
    "finit_module": 273,
    "bpf": 280,
    "userfaultfd": 282,
    "kexec_file_load": 294,
}


@dataclass(frozen=True)
class _Arch:
    audit_arch: int
    numbers: dict[str, int]
    has_x32: bool


_ARCHES = {
    "x86_64": _Arch(0xC000003E, _X86_64, has_x32=True),
    "aarch64": _Arch(0xC00000B7, _AARCH64, has_x32=False),
}


class SeccompUnsupported(SandboxUnavailable):
    """No filter is known for this machine's architecture."""


def native_arch(machine: str | None = None) -> _Arch:
    machine = machine or platform.machine()
    arch = _ARCHES.get(machine)
    if arch is None:
        raise SeccompUnsupported(f"no seccomp filter for the {machine} architecture (only {', '.join(_ARCHES)})")
    return arch


class _Program:
    """Instructions with symbolic jump targets, resolved to cBPF's relative offsets."""

    def __init__(self) -> None:
        self.insns: list[tuple[int, int, str | None, str | None]] = []
        self.labels: dict[str, int] = {}

    def emit(self, code: int, k: int, jt: str | None = None, jf: str | None = None) -> None:
        self.insns.append((code, k, jt, jf))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.insns)

    def assemble(self) -> bytes:
        out = bytearray()
        for index, (code, k, jt, jf) in enumerate(self.insns):
            out += struct.pack("<HBBI", code, self._offset(index, jt), self._offset(index, jf), k)
        return bytes(out)

    def _offset(self, index: int, label: str | None) -> int:
        if label is None:
            return 0
        offset = self.labels[label] - index - 1
        if not 0 <= offset <= 255:
            raise ValueError(f"jump to {label} out of range ({offset})")
        return offset


def filter_program(machine: str | None = None) -> bytes:
    """The compiled filter for this machine, as bwrap reads it (struct sock_filter[])."""
    arch = native_arch(machine)
    p = _Program()
    p.emit(_LD_W_ABS, _OFF_ARCH)
    p.emit(_JEQ_K, arch.audit_arch, None, "eperm")  # a foreign ABI: every call refused
    p.emit(_LD_W_ABS, _OFF_NR)
    if arch.has_x32:
        p.emit(_JSET_K, _X32_SYSCALL_BIT, "eperm", None)
    for name in DENIED:
        if name in arch.numbers:
            p.emit(_JEQ_K, arch.numbers[name], "eperm", None)
    for name in _ENOSYS:
        p.emit(_JEQ_K, arch.numbers[name], "enosys", None)
    checks = [(name, arg, bits) for name, arg, bits in _ARGUMENT_CHECKS if name in arch.numbers]
    for name, _, _ in checks:
        p.emit(_JEQ_K, arch.numbers[name], f"check-{name}", None)
    for name in _SOCKET_CALLS:
        p.emit(_JEQ_K, arch.numbers[name], "check-family", None)
    p.emit(_RET_K, _RET_ALLOW)
    for name, arg, bits in checks:
        p.label(f"check-{name}")
        p.emit(_LD_W_ABS, _OFF_ARGS + 8 * arg)
        p.emit(_JSET_K, bits, "eperm", None)
        p.emit(_RET_K, _RET_ALLOW)
    _emit_family_check(p)
    p.label("eperm")
    p.emit(_RET_K, _RET_ERRNO | errno.EPERM)
    p.label("enosys")
    p.emit(_RET_K, _RET_ERRNO | errno.ENOSYS)
    return p.assemble()


def _emit_family_check(p: _Program) -> None:
    """socket/socketpair: an allowed family goes on, NETLINK_ROUTE only among netlink's
    (cBPF jumps only forward, hence the allow at the end)."""
    p.label("check-family")
    p.emit(_LD_W_ABS, _OFF_ARGS)
    for family in (_AF_UNIX, _AF_INET, _AF_INET6):
        p.emit(_JEQ_K, family, "family-allowed", None)
    p.emit(_JEQ_K, _AF_NETLINK, None, "eafnosupport")
    p.emit(_LD_W_ABS, _OFF_ARGS + 8 * 2)
    p.emit(_JEQ_K, _NETLINK_ROUTE, "family-allowed", None)
    p.emit(_RET_K, _RET_ERRNO | errno.EPROTONOSUPPORT)
    p.label("eafnosupport")
    p.emit(_RET_K, _RET_ERRNO | errno.EAFNOSUPPORT)
    p.label("family-allowed")
    p.emit(_RET_K, _RET_ALLOW)
