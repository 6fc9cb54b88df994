"""The live progress display: what Ray logs while it is up is printed above the bar
through the same console, not across it on stderr, and Ray's logging is left as it was."""

import io
import logging

from rich.console import Console

from cluster.eval.progress import ProgressReporter


def test_rays_log_records_print_above_the_progress_bar_not_across_it(capsys):
    ray_log = logging.getLogger("ray")
    before = (list(ray_log.handlers), ray_log.propagate)
    console = Console(file=io.StringIO(), force_terminal=False, width=120)
    reporter = ProgressReporter(console)
    reporter.event("eval_started", to_run=1, skipped=0, tasks=1, out="/tmp/out")
    logging.getLogger("ray._private.worker").warning("Task sleepy failed. There are 3 retries remaining\nmore")
    reporter.close()

    assert "ray: Task sleepy failed. There are 3 retries remaining" in console.file.getvalue()
    assert "retries remaining" not in capsys.readouterr().err
    assert (ray_log.handlers, ray_log.propagate) == before
