"""The node's tool slots (cluster.tool_slots): at most N Bash calls at once across the
processes on a node, each slot let go by the kernel when its holder ends."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from cluster.tool_slots import NodeSlots, SlotDirectoryUnsafe

_HANG_BOUND_S = 60  # only catches a hang


async def test_a_call_waits_while_every_slot_is_held_and_runs_once_one_is_let_go(tmp_path):
    slots = NodeSlots(tmp_path / "node", 1)
    first_in, first_may_leave = asyncio.Event(), asyncio.Event()
    order: list[str] = []

    async def first() -> None:
        async with slots.hold():
            first_in.set()
            await first_may_leave.wait()
            order.append("first leaves")

    async def second() -> None:
        async with slots.hold():
            order.append("second runs")

    holder = asyncio.ensure_future(first())
    await first_in.wait()
    waiter = asyncio.ensure_future(second())
    assert slots._try_any() is None  # the one slot is the first call's
    first_may_leave.set()
    async with asyncio.timeout(_HANG_BOUND_S):
        await asyncio.gather(holder, waiter)
    assert order == ["first leaves", "second runs"]


async def test_two_slots_let_two_calls_in_at_once(tmp_path):
    slots = NodeSlots(tmp_path / "node", 2)
    async with slots.hold(), slots.hold():
        assert slots._try_any() is None


def test_a_slot_held_by_a_process_killed_with_sigkill_is_free_again(tmp_path):
    directory = tmp_path / "node"
    NodeSlots(directory, 1)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import fcntl, os, sys\n"
                f"fd = os.open({str(directory / 'slot-0')!r}, os.O_RDWR | os.O_CREAT)\n"
                "fcntl.flock(fd, fcntl.LOCK_EX)\n"
                "print('held', flush=True)\n"
                "sys.stdin.read()\n"
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        slots = NodeSlots(directory, 1)  # as another process on the node sees them
        assert slots._try_any() is None
        holder.kill()
        holder.wait()
        assert slots._try_any() is not None
    finally:
        holder.kill()
        holder.wait()


async def test_a_call_cancelled_while_it_waits_gives_its_slot_back(tmp_path):
    slots = NodeSlots(tmp_path / "node", 1)
    held, may_leave = asyncio.Event(), asyncio.Event()

    async def holder() -> None:
        async with slots.hold():
            held.set()
            await may_leave.wait()

    async def waiter() -> None:
        async with slots.hold():
            raise AssertionError("a cancelled call ran")

    first = asyncio.ensure_future(holder())
    await held.wait()
    cancelled = asyncio.ensure_future(waiter())
    await asyncio.sleep(0)  # let it start waiting
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    may_leave.set()
    await first
    async with asyncio.timeout(_HANG_BOUND_S), slots.hold():
        pass  # the slot came back from the cancelled wait


def test_a_slot_directory_others_can_write_is_refused_in_one_line(tmp_path):
    shared = tmp_path / "node"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(SlotDirectoryUnsafe) as refused:
        NodeSlots(shared, 1)
    assert str(shared) in str(refused.value) and "TMPDIR" in str(refused.value)
