"""The seccomp filter of an architecture this machine cannot run (aarch64), checked by
running its classic BPF on `struct seccomp_data` as the kernel would. The sandbox tests
(test_sandbox*.py) check the native filter in the real kernel."""

from __future__ import annotations

import errno
import struct

from tools.sandbox.seccomp import filter_program

_AARCH64 = 0xC00000B7
_SOCKET, _SOCKETPAIR, _MOUNT = 198, 199, 40  # asm-generic/unistd.h
ALLOW = "allow"


def verdict(program: bytes, arch: int, nr: int, *args: int) -> str | int:
    """What the filter answers: "allow" or the errno it returns."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *args, *[0] * (6 - len(args)))
    insns = [struct.unpack_from("<HBBI", program, i) for i in range(0, len(program), 8)]
    pc, accumulator = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            accumulator = struct.unpack_from("<I", data, k)[0]
        elif code == 0x15:  # BPF_JMP | BPF_JEQ | BPF_K
            pc += jt if accumulator == k else jf
        elif code == 0x45:  # BPF_JMP | BPF_JSET | BPF_K
            pc += jt if accumulator & k else jf
        elif code == 0x06:  # BPF_RET | BPF_K
            return ALLOW if k == 0x7FFF0000 else k & 0xFFFF
        else:
            raise AssertionError(f"opcode {code:#x} at {pc} is not one the filter uses")
        pc += 1


def test_the_aarch64_filter_allows_only_unix_ip_and_routing_netlink_sockets():
    program = filter_program("aarch64")
    for family in (1, 2, 10):  # AF_UNIX, AF_INET, AF_INET6
        assert verdict(program, _AARCH64, _SOCKET, family, 1, 0) == ALLOW
        assert verdict(program, _AARCH64, _SOCKETPAIR, family, 1, 0) == ALLOW
    assert verdict(program, _AARCH64, _SOCKET, 16, 3, 0) == ALLOW  # NETLINK_ROUTE
    assert verdict(program, _AARCH64, _SOCKET, 16, 3, 12) == errno.EPROTONOSUPPORT  # NETLINK_NETFILTER
    for family in (40, 17, 38, 15, 44, 31):  # vsock, packet, alg, key, xdp, bluetooth
        assert verdict(program, _AARCH64, _SOCKET, family, 1, 0) == errno.EAFNOSUPPORT
        assert verdict(program, _AARCH64, _SOCKETPAIR, family, 1, 0) == errno.EAFNOSUPPORT
    assert verdict(program, _AARCH64, _MOUNT) == errno.EPERM  # the rest of the filter is as before
    assert verdict(program, 0x40000028, _SOCKET, 2, 1, 0) == errno.EPERM  # arm32 compat: every call
