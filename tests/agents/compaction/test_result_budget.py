"""Per-result budget: head + marker + tail, nothing cut silently, everything recallable."""

import re

import pytest

from agents.compaction.result_budget import clip_tool_result
from agents.tokens import CharRatioEstimator

COUNTER = CharRatioEstimator()
MARKER = re.compile(r'\n\[truncated (\d+) chars; Recall\(id="([^"]+)", offset=(\d+)\) returns them\]\n')


def _pytest_output(lines: int = 4_000) -> str:
    body = "".join(f"tests/test_mod.py::test_case_{i} PASSED\n" for i in range(lines))
    return body + "==== 1 failed, 3999 passed in 12.34s ===="


def _parts(clipped: str) -> tuple[str, re.Match, str]:
    match = MARKER.search(clipped)
    assert match is not None, clipped[:300]
    return clipped[: match.start()], match, clipped[match.end() :]


def test_over_budget_result_keeps_head_marker_and_tail():
    body = _pytest_output()
    clipped = clip_tool_result(body, max_tokens=500, recall_id="toolu_1", counter=COUNTER)
    assert clipped is not None
    head, _, tail = _parts(clipped.content)
    assert head and tail
    assert body.startswith(head)
    assert body.endswith(tail)
    assert len(clipped.content) < len(body)


def test_the_tail_survives_clipping():
    body = _pytest_output()
    clipped = clip_tool_result(body, max_tokens=200, recall_id="toolu_1", counter=COUNTER)
    assert clipped is not None
    assert clipped.content.endswith("==== 1 failed, 3999 passed in 12.34s ====")


def test_marker_names_removed_count_recall_id_and_offset_of_the_cut():
    body = _pytest_output()
    clipped = clip_tool_result(body, max_tokens=300, recall_id="toolu_abc", counter=COUNTER)
    assert clipped is not None
    head, match, tail = _parts(clipped.content)
    removed, recall_id, offset = int(match.group(1)), match.group(2), int(match.group(3))
    assert recall_id == "toolu_abc"
    assert offset == len(head) == clipped.head_chars
    assert removed == clipped.removed_chars == len(body) - len(head) - len(tail)
    assert head + body[offset : offset + removed] + tail == body


def test_clipped_result_is_near_the_budget():
    body = _pytest_output()
    clipped = clip_tool_result(body, max_tokens=500, recall_id="toolu_1", counter=COUNTER)
    assert clipped is not None
    assert COUNTER.count_text(clipped.content) <= 500


def test_under_budget_result_returns_none():
    assert clip_tool_result("short output\n", max_tokens=100, recall_id="t", counter=COUNTER) is None


def test_result_exactly_at_budget_returns_none():
    body = "x" * 4 * 10_000
    assert clip_tool_result(body, max_tokens=10_000, recall_id="t", counter=COUNTER) is None


@pytest.mark.parametrize("max_tokens", [0, 1, 16])
def test_tiny_budget_never_yields_an_empty_side_or_negative_slice(max_tokens):
    body = "".join(chr(ord("a") + i % 26) for i in range(100_000))
    clipped = clip_tool_result(body, max_tokens=max_tokens, recall_id="toolu_t", counter=COUNTER)
    assert clipped is not None
    head, match, tail = _parts(clipped.content)
    assert len(head) >= 1 and len(tail) >= 1
    assert clipped.removed_chars > 0
    offset, removed = int(match.group(3)), int(match.group(1))
    assert head + body[offset : offset + removed] + tail == body


def test_unicode_body_is_clipped_on_characters_and_stays_encodable():
    body = ("héllo wörld ✓ 日本語テキスト 🐍🚀 " * 3_000) + "\nEND ✅"
    clipped = clip_tool_result(body, max_tokens=400, recall_id="toolu_u", counter=COUNTER)
    assert clipped is not None
    clipped.content.encode("utf-8")  # no lone surrogates or split code points
    head, match, tail = _parts(clipped.content)
    offset, removed = int(match.group(3)), int(match.group(1))
    assert head + body[offset : offset + removed] + tail == body
    assert clipped.content.endswith("END ✅")
