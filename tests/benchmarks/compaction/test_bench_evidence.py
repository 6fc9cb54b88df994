"""Tool-evidence recall: only what tool results alone provided is needed, overlapping items
count once, and a working set without tool results keeps almost none of it."""

from __future__ import annotations

from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.ports import ModelRequest
from agents.tokens import CharRatioEstimator
from benchmarks.compaction.evidence import trace_evidence
from benchmarks.compaction.items import maximal_items
from benchmarks.compaction.metrics import measure_replay
from benchmarks.replay import ReplayResult
from benchmarks.traces import Trace

COUNTER = CharRatioEstimator()


def _trace() -> Trace:
    """grep shows a path, a function and a parameter; the agent then types the path itself
    (an echo), and finally uses the path, the function and the parameter."""
    grep = ToolUseBlock(id="toolu_1", name="bash", input={"command": "grep -rn 'def resolve' src/"})
    cat = ToolUseBlock(id="toolu_2", name="bash", input={"command": "cat src/pkg/resolver.py"})
    return Trace(
        source="hand",
        task_id="t1",
        system="You fix bugs.",
        path="<hand>",
        messages=[
            Message.user("Fix the resolver bug."),
            Message.assistant(TextBlock(text="Search first."), grep),
            Message.tool_results(
                [
                    ToolResultBlock(
                        tool_use_id="toolu_1", content="src/pkg/resolver.py:212: def resolve_path(self, strict_mode):"
                    )
                ]
            ),
            Message.assistant(TextBlock(text="Open it."), cat),
            Message.tool_results([ToolResultBlock(tool_use_id="toolu_2", content="x = 1\n" * 50)]),
            Message.assistant(TextBlock(text="In src/pkg/resolver.py, resolve_path ignores strict_mode.")),
        ],
    )


def _replay(trace: Trace, histories: list[list[Message]]) -> ReplayResult:
    requests = [ModelRequest(system=trace.system, messages=tuple(h)) for h in histories]
    answered = [i for i, m in enumerate(trace.messages) if m.role == "assistant"]
    return ReplayResult(trace=trace, strategy="hand", requests=requests, answered=answered)


def test_an_item_the_agent_typed_itself_is_not_tool_evidence():
    needs = trace_evidence(_trace(), COUNTER).calls
    # At call 3 the path is only in the grep result: tool evidence.
    assert "src/pkg/resolver.py" in needs[3].tool_items
    # At call 5 the agent had typed the path in its own `cat` command: obtainable from its
    # own text, so not tool evidence, though the legacy measure still counts it.
    assert needs[5].tool_items == ("resolve_path", "strict_mode")
    assert "src/pkg/resolver.py" in needs[5].items


def test_items_inside_longer_items_count_once():
    assert maximal_items({"src/pkg/resolver.py", "resolver.py", "self.assertEqual", "assertEqual", "212"}) == [
        "212",
        "self.assertEqual",
        "src/pkg/resolver.py",
    ]
    needs = trace_evidence(_trace(), COUNTER).calls[3]
    assert "resolver.py" in needs.items and "resolver.py" not in needs.tool_items  # legacy counts it twice


def test_an_item_in_the_system_prompt_or_the_task_is_not_tool_evidence():
    trace = _trace().model_copy(update={"system": "Style: strict_mode is always keyword-only."})
    assert trace_evidence(trace, COUNTER).calls[5].tool_items == ("resolve_path",)


def test_hiding_every_tool_result_loses_all_tool_evidence_and_lists_it_per_call():
    trace = _trace()
    hidden = [Message.tool_results([ToolResultBlock(tool_use_id=f"toolu_{n}", content="[elided]")]) for n in (1, 2)]
    histories = [
        trace.messages[:1],
        [*trace.messages[:2], hidden[0]],
        [*trace.messages[:2], hidden[0], trace.messages[3], hidden[1]],
    ]
    m = measure_replay(
        _replay(trace, histories),
        trace_evidence(trace, COUNTER),
        trace_label="t",
        pricing_model="claude-sonnet-4-5",
        counter=COUNTER,
    )
    assert m.tool_evidence_recall == 0.0 and m.tool_evidence_items == 3
    assert [(x.call, x.message_index, x.items) for x in m.missed] == [
        (2, 3, ["src/pkg/resolver.py"]),
        (3, 5, ["resolve_path", "strict_mode"]),
    ]
    assert m.grounding_recall > 0  # the legacy measure still finds the echoed path


def test_nothing_compacted_shows_all_tool_evidence():
    trace = _trace()
    m = measure_replay(
        _replay(trace, [trace.messages[:1], trace.messages[:3], trace.messages[:5]]),
        trace_evidence(trace, COUNTER),
        trace_label="t",
        pricing_model="claude-sonnet-4-5",
        counter=COUNTER,
    )
    assert m.tool_evidence_recall == 1.0 and m.missed == []
