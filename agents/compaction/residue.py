"""The extractive residue of a tool output: what later actions tend to need from it.

When a result body is cleared or folded, a few short facts stay in view, in this order
until `max_chars` is spent:

  exit status      `exit N` from `<returncode>N</returncode>` or `exit code N`
  test summary     the last pytest / unittest tally (`3 failed, 10 passed`, `Ran 5 tests`)
  failing tests    `FAILED path::test` / `ERROR path::test` names
  errors           error, exception and assertion lines (the last few, clipped)
  locations        `path:line` references and paths the output names (grep, tracebacks,
                   listings), first seen first
  definitions      names defined (`def name`, `class Name`, `fn`, `func`, `function`),
                   with the line number where the output shows one

Deterministic and pure: same text, same residue. Nothing is invented; every fact is a
span of the output, so a residue never says more than the output did.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["residue"]

_EXIT = re.compile(r"<returncode>(-?\d+)</returncode>|\bexit(?:ed with)? (?:code|status):?\s*(-?\d+)", re.IGNORECASE)
_TALLY = re.compile(
    r"^=*\s*((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected)[, ]*)+(?:in [\d.]+s)?)\s*=*\s*$"
    r"|^(Ran \d+ tests? in [\d.]+s)$|^((?:OK|FAILED)(?: \([^)]*\))?)$",
    re.MULTILINE,
)
_FAILED_TEST = re.compile(r"^(?:FAILED|ERROR) (\S+::\S+)|^(\S+::\S+) (?:FAILED|ERROR)", re.MULTILINE)
_ERROR = re.compile(
    r"^\s*(?:E\s{2,}\S.*|(?:[\w.]+\.)?\w*(?:Error|Exception|Failure)\b(?::.*)?|AssertionError.*|.*\berror(?:\[\w+\])?: .*|fatal: .*)$",
    re.MULTILINE,
)
_TRACE_FRAME = re.compile(r'File "([^"]+)", line (\d+)(?:, in (\w+))?')
_LOCATION = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]*\w\.\w{1,5}):(\d+)\b")
_PATH = re.compile(r"(?<![\w/.-])(\.?/?(?:[\w.-]+/)+[\w.-]*\w)(?![\w/])")
_DEFINITION = re.compile(
    r"^(?:\s*(\d+)[:\t-]|\s*)\s*(?:async\s+)?(?:def|class|fn|func|function)\s+([A-Za-z_]\w*)", re.MULTILINE
)
_LINE_CHARS = 160
_ERRORS_KEPT = 3
_SEPARATOR = "; "


def _clip(text: str, limit: int = _LINE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _exit(text: str) -> list[str]:
    m = _EXIT.search(text)
    return [f"exit {m.group(1) or m.group(2)}"] if m else []


def _tests(text: str) -> list[str]:
    tallies = [next(g for g in m.groups() if g) for m in _TALLY.finditer(text)]
    failed = dict.fromkeys(m.group(1) or m.group(2) for m in _FAILED_TEST.finditer(text))
    return [_clip(t) for t in tallies[-1:]] + [f"FAILED {name}" for name in failed]


def _errors(text: str) -> list[str]:
    lines = dict.fromkeys(_clip(m.group(0)) for m in _ERROR.finditer(text))
    return list(lines)[-_ERRORS_KEPT:]


def _locations(text: str) -> list[str]:
    found: dict[str, None] = {}
    for m in _TRACE_FRAME.finditer(text):
        found[f"{m.group(1)}:{m.group(2)}" + (f" in {m.group(3)}" if m.group(3) else "")] = None
    for m in _LOCATION.finditer(text):
        found[f"{m.group(1)}:{m.group(2)}"] = None
    named = {key.split(":")[0] for key in found}
    for m in _PATH.finditer(text):
        if m.group(1) not in named:
            found[m.group(1)] = None
            named.add(m.group(1))
    return list(found)


def _definitions(text: str) -> list[str]:
    out: dict[str, None] = {}
    for m in _DEFINITION.finditer(text):
        out[f"{m.group(2)} (line {m.group(1)})" if m.group(1) else m.group(2)] = None
    return list(out)


def _joined(facts: Iterable[str], max_chars: int) -> str:
    kept: list[str] = []
    used = 0
    for fact in dict.fromkeys(facts):
        cost = len(fact) + (len(_SEPARATOR) if kept else 0)
        if used + cost > max_chars or any(fact in earlier for earlier in kept):
            continue  # a shorter later fact may still fit; one already said is not repeated
        kept.append(fact)
        used += cost
    return _SEPARATOR.join(kept)


def residue(text: str, max_chars: int) -> str:
    """The facts of `text` worth keeping once its body is out of view, at most
    `max_chars` long ("" when `max_chars` is 0 or nothing qualifies)."""
    if max_chars <= 0 or not text:
        return ""
    facts = [*_exit(text), *_tests(text), *_errors(text), *_locations(text), *_definitions(text)]
    return _joined(facts, max_chars)
