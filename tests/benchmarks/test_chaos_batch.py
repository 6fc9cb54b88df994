"""A small chaos batch on Ray (the session-scoped `ray_cluster`, plus a raylet the test adds
and removes mid-run): session actors, tool workers and summarizer workers are killed by pid
while the batch runs, and every task still ends with exactly one row, the unperturbed grade
and the unperturbed patch. The figure over 50 tasks and three kill timings is
benchmarks/chaos_batch.py; this is its machinery on 6 tasks and one timing, with at most
three bursts (the raylet goes with the first): on a busy machine the bursts would otherwise
go on every 15 s until the batch ends (eight of them at load 50), each one's restarts
making the batch longer still."""

from benchmarks.chaos_batch import Chaos, compare, make_batch, run_batch


async def test_a_batch_whose_workers_and_a_raylet_are_killed_ends_each_task_once_with_the_unperturbed_patch(
    ray_cluster, tmp_path
):
    tasks = make_batch(tmp_path / "batch", 6)
    base = await run_batch(tasks, tmp_path / "unperturbed", concurrency=6)
    assert base["summary"]["statuses"]["passed"] == 6
    assert all(r["compaction_kinds"].get("summary") == 1 for r in base["rows"])  # the compactor pool was used

    doomed = ray_cluster.add_node(num_cpus=1, resources={"workingset_sandbox": 1}, object_store_memory=80 * 1024**2)
    ray_cluster.cluster.wait_for_nodes()
    chaos = Chaos(
        "bursts",
        remove_raylet=lambda: ray_cluster.cluster.remove_node(doomed),
        burst_every_s=15.0,
        raylet_at_burst=1,
        max_bursts=3,
    )
    perturbed = await run_batch(tasks, tmp_path / "chaos", concurrency=6, chaos=chaos)

    figures = compare(tasks, tmp_path / "unperturbed", base, tmp_path / "chaos", perturbed)
    assert (figures["right"], figures["rows_lost"], figures["rows_duplicated"]) == (6, 0, 0), figures
    assert chaos.landed["session"] >= 1 and chaos.landed["summarizer"] >= 1, chaos.landed
    assert chaos.landed["raylet"] == 1
