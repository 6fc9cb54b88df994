"""Where the idmapped workspace mount should live: what a private mount namespace per
call costs over the alternative (one long-lived staging mount per workspace), in ms.

    sudo python -m benchmarks.sandbox_stage [--calls 200]

Spawns /bin/true, interleaved, in three ways (root only, as the sandbox stages as root):
- vfork:    no preexec step (the floor);
- preexec:  a no-op preexec step — what a per-workspace staging mount, made once and
            kept in the host's mount table, would still cost per call (the cgroup join
            and the uid drop need a preexec step anyway);
- private:  the sandbox's per-call stage: open_tree + idmap the workspace, then in the
            child unshare(CLONE_NEWNS), make / private, a tmpfs, move_mount — and the
            namespace's teardown when the process exits.
The difference private - preexec is the price of never leaving a mount on the host.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tools.sandbox import DEFAULT_SANDBOX_ID
from tools.sandbox.identity import Identity, Stage


def _spawn(preexec) -> float:
    started = time.perf_counter()
    subprocess.run(["/bin/true"], preexec_fn=preexec, check=True)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("benchmarks.sandbox_stage: run as root (the stage is what the sandbox does as root)")
    identity = Identity(DEFAULT_SANDBOX_ID, DEFAULT_SANDBOX_ID, drops_root=True)
    samples: dict[str, list[float]] = {"vfork": [], "preexec": [], "private": []}
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp).resolve()
        for _ in range(args.calls):
            samples["vfork"].append(_spawn(None))
            samples["preexec"].append(_spawn(lambda: None))
            stage = Stage.prepare(workspace, identity)
            try:
                samples["private"].append(_spawn(stage.enter))
            finally:
                stage.close()
    print(f"{args.calls} spawns of /bin/true each, interleaved (load {os.getloadavg()[0]:.1f})\n")
    print(f"{'variant':<10} {'median ms':>10} {'p90 ms':>8}")
    for name, values in samples.items():
        p90 = statistics.quantiles(values, n=10)[8]
        print(f"{name:<10} {statistics.median(values):>10.2f} {p90:>8.2f}")
    added = statistics.median(samples["private"]) - statistics.median(samples["preexec"])
    print(f"\na private mount namespace per call adds {added:.2f} ms median over a kept staging mount")


if __name__ == "__main__":
    main()
