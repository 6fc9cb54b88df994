"""Children are reaped through pidfds by whichever event loop started them, with no thread each."""

import asyncio
import sys
import threading

import pytest

from tools.child_watch import watch_children_by_pidfd


async def _exit_code(n: int) -> int:
    proc = await asyncio.create_subprocess_exec("sh", "-c", f"exit {n}")
    return await proc.wait()


async def _threads_while_a_child_runs() -> list[str]:
    proc = await asyncio.create_subprocess_exec("cat", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL)
    names = [t.name for t in threading.enumerate()]
    assert proc.stdin is not None
    proc.stdin.close()  # cat ends
    await proc.wait()
    return names


def test_every_event_loop_of_the_process_reaps_its_own_children():
    watch_children_by_pidfd()
    codes = [asyncio.run(_exit_code(n)) for n in (3, 4)]  # two loops, one after the other
    in_thread: list[int] = []
    worker = threading.Thread(target=lambda: in_thread.append(asyncio.run(_exit_code(5))))
    worker.start()
    worker.join()
    assert codes + in_thread == [3, 4, 5]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="Python 3.12 watches children by pidfd itself")
def test_a_running_child_has_no_thread_waiting_for_it():
    watch_children_by_pidfd()
    assert not [name for name in asyncio.run(_threads_while_a_child_runs()) if "waitpid" in name]
