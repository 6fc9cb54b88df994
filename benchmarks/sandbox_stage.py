"""Where the idmapped workspace mount should live: what a private mount namespace per
call costs over the alternative (one long-lived staging mount per workspace), in ms.

    sudo python -m benchmarks.sandbox_stage [--calls 200]

Spawns /bin/true, interleaved, in four ways (root only, as the sandbox stages as root):
- spawn:    /bin/true itself (the floor);
- launcher: through the sandbox's launcher (launcher.py; the C build where it was
            built), no steps — what a per-workspace staging mount, made once and kept in
            the host's mount table, would still cost per call (the cgroup join and the
            uid drop need the launcher anyway);
- private:  the per-call stage without a layer: open_tree + idmap the workspace, then in
            the launcher unshare(CLONE_NEWNS), make / private, a tmpfs, move_mount — and
            the namespace's teardown when the process exits;
- layered:  the sandbox's per-call stage: the same, plus the workspace layer (a capped
            tmpfs made by the harness, attached in the launcher under an overlayfs).
The difference private - launcher is the price of never leaving a mount on the host;
layered - private is the price of a kernel-enforced cap on the workspace's growth.
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

from tools.sandbox import (
    DEFAULT_SANDBOX_ID,
    Identity,
    LayerSpec,
    Stage,
    Steps,
    built_launcher,
    idmapped_tree,
    make_layer,
    stage_root,
)


def _staged(launcher: tuple[str, ...], workspace: Path, identity: Identity, layered: bool) -> float:
    """One spawn through a fresh stage, timed with what the harness prepares for it."""
    started = time.perf_counter()
    stage = Stage(stage_root(), workspace, tree_fd=idmapped_tree(workspace, identity))
    layer = None
    if layered:
        st = workspace.stat()
        stage.layer = LayerSpec(
            64 * 1024**2, 0o755, (st.st_atime_ns, st.st_mtime_ns), (identity.uid, identity.gid), user_xattrs=False
        )
        layer = stage.layer_fd = make_layer(stage.layer)

    steps = Steps()
    stage.steps(steps)
    try:
        subprocess.run(steps.command(launcher, ["/bin/true"]), pass_fds=steps.fds, check=True)
    finally:
        stage.close()
        if layer is not None:
            os.close(layer)
    return (time.perf_counter() - started) * 1000


def _spawn(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("benchmarks.sandbox_stage: run as root (the stage is what the sandbox does as root)")
    identity = Identity(DEFAULT_SANDBOX_ID, DEFAULT_SANDBOX_ID, drops_root=True)
    launcher, why_not = built_launcher()
    samples: dict[str, list[float]] = {"spawn": [], "launcher": [], "private": [], "layered": []}
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp).resolve()
        for _ in range(args.calls):
            samples["spawn"].append(_spawn(["/bin/true"]))
            samples["launcher"].append(_spawn([*launcher, "--", "/bin/true"]))
            samples["private"].append(_staged(launcher, workspace, identity, layered=False))
            samples["layered"].append(_staged(launcher, workspace, identity, layered=True))
    build = "C" if why_not is None else f"Python ({why_not})"
    print(
        f"{args.calls} spawns of /bin/true each, interleaved, through the {build} launcher "
        f"(load {os.getloadavg()[0]:.1f})\n"
    )
    print(f"{'variant':<10} {'median ms':>10} {'p90 ms':>8}")
    for name, values in samples.items():
        p90 = statistics.quantiles(values, n=10)[8]
        print(f"{name:<10} {statistics.median(values):>10.2f} {p90:>8.2f}")
    added = statistics.median(samples["private"]) - statistics.median(samples["launcher"])
    layer = statistics.median(samples["layered"]) - statistics.median(samples["private"])
    print(f"\na private mount namespace per call adds {added:.2f} ms median over a kept staging mount")
    print(f"the workspace layer (capped tmpfs + overlayfs) adds {layer:.2f} ms median")


if __name__ == "__main__":
    main()
