"""The terminal tables (rich): the summary, and the live runs when there are any.

Trace labels, paths and errors come from the traces: every cell and line is revealed
(agents.visible) and given to rich as `Text`, so it is never read as markup.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from agents.visible import reveal

from .live_report import ARM_COLUMNS, PAIR_COLUMNS, arm_rows, live_caption, pair_rows
from .report import SYNTHETIC_NOTE, summary_cells

__all__ = ["print_live", "print_table", "print_verdict"]

TERMINAL_COLUMNS = (
    "strategy",
    "traces",
    "infeasible calls",
    "cost ÷ raw",
    "pooled",
    "cost ÷ base",
    "p (Holm)",
    "tool-evidence recall",
    "Δ vs base",
    "grounding (legacy)",
    "cost ÷ raw (lcp)",
    "summ. calls (share)",
)
# positions in report.summary_cells
_PICK = (0, 1, 2, 3, 4, 5, 6, 9, 10, 13, 14, 15)


def _text(text: str) -> Text:
    return Text(reveal(text))


def _terminal_row(s: dict) -> list[Text]:
    """Like the markdown row, fewer columns, each interval under its value."""
    cells = summary_cells(s)
    return [_text(reveal(cells[i], one_line=True).replace(" [", "\n[")) for i in _PICK]


def print_verdict(doc: dict[str, Any], console: Console) -> None:
    verdict = doc.get("verdict")
    if not verdict:
        return
    for a in verdict["aims"]:
        state = "NOT DECIDED" if a["met"] is None else ("MET" if a["met"] else "MISSED")
        console.print(_text(f"{a['pricing']} · {a['window']:,} · aim {a['aim']}: {state} — {a['text']}"))


def print_table(doc: dict[str, Any], console: Console) -> None:
    if "summary" not in doc:  # several windows: each has its own report; the verdict is here
        console.print(
            _text(
                f"Compaction strategies — {len(doc['traces'])} traces, windows "
                f"{', '.join(f'{w:,}' for w in doc['windows'])}; wall time {doc['wall_time_s']:.1f} s"
            )
        )
        print_verdict(doc, console)
        return
    title = f"Compaction strategies — {len(doc['traces'])} traces, context window {doc['settings']['context_window']:,}"
    if doc["synthetic"]:
        title += f" — {SYNTHETIC_NOTE}"
    table = Table(title=_text(title), title_justify="left")
    for name in TERMINAL_COLUMNS:
        table.add_column(name, overflow="fold")
    for s in doc["summary"]:
        table.add_row(*_terminal_row(s))
    console.print(table)
    exceed = [s["strategy"] for s in doc["summary"] if s["exceeds_window"]]
    if exceed:
        console.print(_text(f"⚠ exceed the window on some call (infeasible): {', '.join(exceed)}"))
    console.print(
        _text(
            f"ratios: median over traces [95% bootstrap of {doc['settings']['cluster']} clusters]; recalls: "
            f"mean; p: Wilcoxon signed-rank vs base, Holm-adjusted; base = {doc['settings']['baseline']}; "
            f"wall time {doc['wall_time_s']:.1f} s ({doc['runtime']})"
        )
    )
    for item in doc["skipped"]:
        console.print(_text(f"skipped {item['path']}: {item['reason']}"))
    for r in doc["runs"]:
        if r["error"]:
            console.print(_text(f"failed {r['trace']} under {r['strategy']}: {r['error']}"))
    print_verdict(doc, console)


def _live_table(title: str, columns: tuple[str, ...], rows: list[list[str]]) -> Table:
    table = Table(title=_text(title), title_justify="left")
    for name in columns:
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(*(_text(reveal(cell, one_line=True)) for cell in row))
    return table


def print_live(doc: dict[str, Any], console: Console) -> None:
    live = doc.get("live")
    if not live:
        return
    console.print(
        _live_table(f"Live: {live['tasks']} tasks × {live['repeats']} repeat(s) per arm", ARM_COLUMNS, arm_rows(live))
    )
    console.print(_live_table(f"Live: {live['default']} (A) against each other arm (B)", PAIR_COLUMNS, pair_rows(live)))
    for line in live_caption(live):
        console.print(_text(line.replace("`", "")))
