"""Workingset's own records: session exports and trace dirs.

Session export (`workingset sessions export ID --format json`): one SessionState JSON —
`schema_version`, `session_id`, `model`, `conversation` (typed messages). The trace is the
conversation as stored. The system prompt is not kept in a snapshot (a resumed session
rebuilds it), so `system` is empty. A conversation that paused on a permission ends with
unanswered tool uses; they get NO_OBSERVATION so the trace is protocol complete.

Trace dir (`workingset run --trace-dir DIR`): one JSON record per model call,
`<session_id>-call-NNNN.json` with `session_id`, `call`, `system`, `messages`, ... (see
agents/trace.py). A dir gives one trace per session: the messages of its LAST call (what
the model saw then — already compacted if compaction ran), plus the final assistant reply
when a record carries it (`response`: content blocks); the records written today do not,
so the final call's reply is unknown and the trace ends before it. A single call record
loads the same way, as the conversation of that call.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agents.messages import MESSAGES_ADAPTER, Message, ToolResultBlock
from agents.session import SessionState

from .model import NO_OBSERVATION, Trace, UnknownTraceFormat, read_json_documents, single_object

__all__ = [
    "CALL_FILE",
    "SESSION_SOURCE",
    "TRACE_SOURCE",
    "detect_session",
    "detect_trace_call",
    "is_trace_dir",
    "load_trace_dir",
    "parse_session",
    "parse_trace_call",
]

SESSION_SOURCE = "workingset-session"
TRACE_SOURCE = "workingset-trace"
CALL_FILE = re.compile(r"^(?P<session>.+)-call-(?P<call>\d+)\.json$")
_CALL_KEYS = {"session_id", "call", "system", "messages"}


def detect_session(docs: list[Any]) -> bool:
    doc = single_object(docs)
    return isinstance(doc.get("conversation"), list) and "session_id" in doc and "schema_version" in doc


def detect_trace_call(docs: list[Any]) -> bool:
    doc = single_object(docs)
    return doc.keys() >= _CALL_KEYS and isinstance(doc["messages"], list)


def _complete(messages: list[Message]) -> list[Message]:
    """Answer tool uses left open at the end (a permission pause, a call cut short)."""
    if messages and messages[-1].role == "assistant" and messages[-1].tool_uses:
        results = (ToolResultBlock(tool_use_id=u.id, content=NO_OBSERVATION) for u in messages[-1].tool_uses)
        messages = [*messages, Message.tool_results(results)]
    return messages


def _trace(
    path: str | Path,
    source: str,
    task_id: str,
    model: str | None,
    status: str | None,
    system: str,
    messages: list[Message],
) -> Trace:
    messages = _complete([m for m in messages if m.content])
    if not messages or messages[0].role != "user":
        raise UnknownTraceFormat(f"{path}: the conversation must open with a user message")
    try:
        return Trace(
            source=source,
            task_id=task_id,
            model=model,
            final_status=status,
            system=system,
            messages=messages,
            path=str(path),
        )
    except ValidationError as exc:
        raise UnknownTraceFormat(f"{path}: {exc.errors()[0]['msg']}") from exc


def parse_session(docs: list[Any], path: str | Path) -> list[Trace]:
    try:
        state = SessionState.model_validate(docs[0])
    except ValidationError as exc:
        raise UnknownTraceFormat(f"{path}: not a valid Workingset session export: {exc.errors()[0]['msg']}") from exc
    return [_trace(path, SESSION_SOURCE, state.session_id, state.model, state.reason, "", list(state.conversation))]


def _call_messages(record: dict[str, Any], path: str | Path) -> list[Message]:
    try:
        messages = MESSAGES_ADAPTER.validate_python(record["messages"])
        reply = record.get("response")
        if isinstance(reply, list) and reply:
            messages.append(Message.model_validate({"role": "assistant", "content": reply}))
    except ValidationError as exc:
        raise UnknownTraceFormat(f"{path}: messages are not Workingset messages: {exc.errors()[0]['msg']}") from exc
    return messages


def parse_trace_call(docs: list[Any], path: str | Path) -> list[Trace]:
    record = docs[0]
    task_id = f"{record['session_id']}-call-{record['call']}"
    return [
        _trace(path, TRACE_SOURCE, task_id, None, None, str(record.get("system") or ""), _call_messages(record, path))
    ]


def _call_files(directory: Path) -> dict[str, list[tuple[int, Path]]]:
    by_session: dict[str, list[tuple[int, Path]]] = defaultdict(list)
    for p in directory.iterdir():
        m = CALL_FILE.match(p.name)
        if m and p.is_file():
            by_session[m["session"]].append((int(m["call"]), p))
    return by_session


def is_trace_dir(path: Path) -> bool:
    return path.is_dir() and bool(_call_files(path))


def load_trace_dir(directory: str | Path) -> list[Trace]:
    """One trace per session in the dir, from its last call record."""
    d = Path(directory)
    sessions = _call_files(d)
    if not sessions:
        raise UnknownTraceFormat(f"{d}: no Workingset trace records (<session>-call-NNNN.json) in this directory")
    traces = []
    for session_id in sorted(sessions):
        _, last = max(sessions[session_id])
        docs = read_json_documents(last)
        if not detect_trace_call(docs):
            raise UnknownTraceFormat(f"{last}: not a Workingset trace record")
        record = docs[0]
        traces.append(
            _trace(
                d, TRACE_SOURCE, session_id, None, None, str(record.get("system") or ""), _call_messages(record, last)
            )
        )
    return traces
