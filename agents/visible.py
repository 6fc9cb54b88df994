"""Text that is shown as what it is: the one rule for every display of untrusted text.

Tool output, model text, file names and error strings reach terminals, reports and
logs. A character a terminal does not show as itself can act on the terminal instead
of being read: ESC starts a sequence that writes the clipboard (OSC 52), sets the
window title (OSC 0/2), makes a link (OSC 8), moves the cursor, erases or scrolls
(CSI), talks to the terminal (DCS); C1 controls (U+0080-U+009F) do the same in one
character; BEL rings, backspace and a carriage return overwrite what came before on
the line. Others make text read differently from what it is: a right-to-left override
makes `evil\\u202etxt.sh` look like `evilhs.txt`; zero-width and other format
characters hide. The shell reader treats a line holding one as unknowable
(agents.permissions.shell_line); every display shows each as an escape, through
`reveal`.

Hidden means what Python's `str.isprintable` says is not printable: the categories
Cc, Cf, Cs, Co, Cn, Zl, Zp, and Zs other than the plain space. `reveal` writes one as
`\\u001b` (a surrogate pair past U+FFFF), a carriage return as `\\r`; multi-line text
keeps its line breaks, tabs and CRLF endings (layout, nothing overwritten), one-line
text writes them as `\\n`, `\\t`, `\\r`. Every escape is also a JSON escape, so
revealing a JSON document gives JSON with the same values and no raw control bytes:
the `--json` stream is made safe by the same function.

Text shown through rich must also not be read as markup (`[bold]`, `:emoji:`): it
goes in as `rich.text.Text`, never as a markup string.
"""

from __future__ import annotations

import re

__all__ = ["hidden_characters", "is_hidden", "markdown_cell", "reveal"]

# A run that may hold a hidden character: anything but printable ASCII (and, in
# multi-line text, but line breaks and tabs, which are layout).
_SUSPECT_LINES = re.compile(r"[^ -~\n\t]+")
_SUSPECT_ONE_LINE = re.compile(r"[^ -~]+")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
_PIPE = re.compile(r"(\\*)\|")


def is_hidden(ch: str) -> bool:
    return not ch.isprintable()


def hidden_characters(text: str, *, allow: str = "\t\n") -> list[str]:
    """The characters of `text` (other than those in `allow`) that do not show as themselves."""
    return [ch for ch in text if ch not in allow and not ch.isprintable()]


def _escape(ch: str) -> str:
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _reveal_run(match: re.Match[str]) -> str:
    run = match.group()
    if run.isprintable():  # letters, CJK, emoji: the common case, checked in one call
        return run
    out = [ch if ch.isprintable() else _escape(ch) for ch in run]
    # A CR ending a line (CRLF) overwrites nothing: multi-line text keeps it. (Line breaks
    # are outside every run of multi-line text; in one-line text both are escaped.)
    if run[-1] == "\r" and match.re is _SUSPECT_LINES and match.string[match.end() : match.end() + 1] == "\n":
        out[-1] = "\r"
    return "".join(out)


def reveal(text: str, *, one_line: bool = False) -> str:
    """`text` with every hidden character written as an escape. Multi-line (default):
    line breaks, tabs and CRLF endings stay; `one_line`: they are escaped too."""
    if text.isprintable() or (not one_line and text.replace("\n", " ").replace("\t", " ").isprintable()):
        return text  # nothing hidden: two scans at C speed instead of a regex (a tool result is often MBs)
    return (_SUSPECT_ONE_LINE if one_line else _SUSPECT_LINES).sub(_reveal_run, text)


def markdown_cell(text: str) -> str:
    """`text` for one cell of a Markdown table: revealed on one line, and its pipes
    escaped (with a backslash before one doubled, so it cannot unescape the pipe)."""
    return _PIPE.sub(lambda m: m.group(1) * 2 + "\\|", reveal(text, one_line=True))
