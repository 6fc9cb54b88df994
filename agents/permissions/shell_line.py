"""Reading a Bash command line the way bash will run it, for permission rules.

The parser is tree-sitter with the tree-sitter-bash grammar (the pair the Codex CLI
uses to read commands for its approval rules). Compared with the alternatives:

- bashlex (a Python port of bash's own yacc grammar) was last released in 2023 and
  raises NotImplementedError on ordinary input (`case`, `$((…))`, `[[ … ]]`, `time`,
  `coproc`); an exception is fail-closed, but a parser that fails on common commands
  would make every deny rule deny them.
- a grammar of our own would have to cover all of bash to find every command in a line.
- tree-sitter-bash is maintained, has CPython abi3 wheels, parses everything above, and
  never raises on hostile input: it marks what it cannot parse with ERROR nodes, which
  we turn into "unknowable" (fail closed).

Its known differences from bash are closed here: a backslash-newline that joins two
words (`r\\<newline>m`) is read by tree-sitter as a word break, so a line that has one
is unknowable; so is a line with control, invisible or unusual whitespace characters
(tree-sitter treats `\\r` and friends as blanks, bash does not); and only node types
listed here are understood, anything new in a later grammar is unknowable too.

What a line yields (`ShellLine`):
- `simple`: its words, when the whole line is one simple command of literal words
  (checked twice: by the strict grammar in shell_words and by this parse, which must
  agree) — the only kind of line an allow rule may cover;
- `commands`: every command found anywhere (pipelines, lists, subshells, functions,
  substitutions, `bash -c` strings, after runners such as `env`, `sudo`, `flock`, `ssh`,
  git aliases), each as its words with `None` for a word not known before it runs;
- `delegated`: those of them that a runner runs (`rm x` in `timeout 5 rm x`, every
  command of a `bash -c` string): an allow prefix rule must not reach them;
- `unknowable`: why some command cannot be known statically (a command name that is
  an expansion, `eval`, arithmetic over variables, which bash may evaluate as code,
  a parse error); a deny or ask rule then treats the line as matching.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agents.permissions.runner_spec import Text, Unknown, Word
from agents.permissions.shell_variables import variable_runs
from agents.permissions.shell_words import (
    has_brace_expansion,
    simple_words,
    unescape_double_quoted,
    unescape_word,
)
from agents.permissions.shell_wrappers import expand_command
from agents.visible import hidden_characters

if TYPE_CHECKING:  # the parser itself loads with the first line read (_parse), not with the settings
    import tree_sitter

__all__ = ["CommandWord", "ShellLine", "SimpleCommand", "read_line", "simple_command"]

_MAX_CHARS = 256 * 1024  # longer lines are not read (and so are unknowable)
_MAX_NESTING = 8  # bash -c "bash -c '…'" levels read before the line counts as unknowable
_JOINED_BY_CONTINUATION = re.compile(rb"(?:\\\r?\n)+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ARITHMETIC_TEST_OPS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
# Builtins whose arguments name variables; a name with a subscript is evaluated as
# arithmetic, which can run a command substitution hidden in a variable's value.
_NAMING_BUILTINS = frozenset({"declare", "typeset", "local", "export", "readonly", "unset", "read", "printf", "wait"})
_ARITHMETIC_NODES = frozenset(
    {
        "number",
        "binary_expression",
        "unary_expression",
        "postfix_expression",
        "ternary_expression",
        "parenthesized_expression",
    }
)
_KNOWN_NODES = frozenset(
    {
        "program",
        "list",
        "pipeline",
        "subshell",
        "compound_statement",
        "redirected_statement",
        "negated_command",
        "if_statement",
        "elif_clause",
        "else_clause",
        "while_statement",
        "for_statement",
        "c_style_for_statement",
        "case_statement",
        "case_item",
        "do_group",
        "function_definition",
        "command",
        "command_name",
        "declaration_command",
        "unset_command",
        "test_command",
        "test_operator",
        "variable_assignment",
        "variable_assignments",
        "file_redirect",
        "heredoc_redirect",
        "herestring_redirect",
        "heredoc_body",
        "heredoc_content",
        "heredoc_start",
        "heredoc_end",
        "file_descriptor",
        "string",
        "raw_string",
        "string_content",
        "ansi_c_string",
        "translated_string",
        "word",
        "number",
        "concatenation",
        "command_substitution",
        "process_substitution",
        "simple_expansion",
        "expansion",
        "special_variable_name",
        "variable_name",
        "comment",
        "array",
        "brace_expression",
        "subscript",
        "arithmetic_expansion",
        "binary_expression",
        "unary_expression",
        "postfix_expression",
        "ternary_expression",
        "parenthesized_expression",
        "regex",
        "extglob_pattern",
    }
)


@dataclass(frozen=True)
class ShellLine:
    simple: tuple[str, ...] | None
    commands: tuple[tuple[Word, ...], ...]
    unknowable: str | None
    delegated: tuple[tuple[Word, ...], ...] = ()


@functools.lru_cache(maxsize=64)  # a decision reads its line a few times; lines can be long
def read_line(command: str) -> ShellLine:
    """What `command` runs, as far as can be known without running it."""
    reader = _Reader()
    reader.nested(command)
    simple = simple_words(command)
    if simple is not None and reader.sole_simple != simple:
        simple = None  # the two readings disagree: not simple enough to allow
    return ShellLine(
        simple=simple, commands=tuple(reader.commands), unknowable=reader.why, delegated=tuple(reader.delegated)
    )


@dataclass(frozen=True)
class CommandWord:
    text: str  # as written: quotes and expansions intact
    value: Word  # after quote removal; None when bash decides it at run time


@dataclass(frozen=True)
class SimpleCommand:
    """One simple command, each part as written, to be rewritten and run again."""

    assignments: tuple[tuple[str, str], ...]  # (NAME, value as written) before the command
    words: tuple[CommandWord, ...]


_SIMPLE_PARTS = frozenset(
    {"command_name", "word", "raw_string", "string", "concatenation", "number", "simple_expansion", "expansion"}
)
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution", "arithmetic_expansion"})


def simple_command(command: str) -> SimpleCommand | None:
    """`command` as one simple command — leading assignments, then words, and nothing
    else: no redirection, pipe, list, substitution or control character — else None."""
    if hidden_characters(command, allow="\t") or len(command) > _MAX_CHARS:
        return None
    src = command.encode("utf-8", errors="surrogatepass")
    root = _parse(src)
    if root.has_error or len(root.named_children) != 1 or root.named_children[0].type != "command":
        return None
    node = root.named_children[0]
    if any(d.type in _SUBSTITUTIONS or d.type not in _KNOWN_NODES for d in _descendants(node) if d.is_named):
        return None
    assignments: list[tuple[str, str]] = []
    for child in node.named_children:
        if child.type == "variable_assignment":
            name, value = child.child_by_field_name("name"), child.child_by_field_name("value")
            if name is None:
                return None
            assignments.append((_text(name, src), _text(value, src) if value is not None else ""))
        elif child.type not in _SIMPLE_PARTS:
            return None
    name = node.child_by_field_name("name")
    if name is None or len(name.named_children) != 1:
        return None
    parts = [name.named_children[0], *node.children_by_field_name("argument")]
    return SimpleCommand(tuple(assignments), tuple(CommandWord(_text(p, src), _value(p, src)) for p in parts))


@functools.cache
def _language() -> tree_sitter.Language:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Language(tree_sitter_bash.language())


def _parse(src: bytes) -> tree_sitter.Node:
    import tree_sitter

    return tree_sitter.Parser(_language()).parse(src).root_node


@dataclass
class _Reader:
    """Walks a parse tree, collecting commands (it is the Sink the wrapper table feeds)."""

    commands: list[tuple[Word, ...]] = field(default_factory=list)
    delegated: list[tuple[Word, ...]] = field(default_factory=list)
    why: str | None = None
    sole_simple: tuple[str, ...] | None = None
    depth: int = -1
    in_runner: int = 0  # reading text a runner hands to a shell

    def add(self, words: tuple[Word, ...], depth: int = 0) -> None:
        self.commands.append(words)
        if depth or self.in_runner:
            self.delegated.append(words)

    def line(self, text: str) -> None:
        self.in_runner += 1
        try:
            self.nested(text)
        finally:
            self.in_runner -= 1

    def unknowable(self, why: str) -> None:
        if self.why is None:
            self.why = why

    def nested(self, text: str) -> None:
        if self.depth + 1 >= _MAX_NESTING:
            self.unknowable(f"shell text nested more than {_MAX_NESTING} levels deep")
            return
        if len(text) > _MAX_CHARS:
            self.unknowable(f"the command is longer than {_MAX_CHARS} characters")
            return
        if hidden_characters(text):
            self.unknowable("the command contains control or invisible characters")
        src = text.encode("utf-8", errors="surrogatepass")
        root = _parse(src)
        if root.has_error:
            self.unknowable("the command does not parse as bash")
        self.depth += 1
        try:
            if self.depth == 0:
                self.sole_simple = _sole_simple(root, src)
            self._walk(root, src)
        finally:
            self.depth -= 1

    def _walk(self, root: tree_sitter.Node, src: bytes) -> None:
        stack = [root]
        last_leaf_end: int | None = None
        while stack and self.why is None:  # once unknowable, nothing more can change the answer
            node = stack.pop()
            if node.child_count == 0:
                if last_leaf_end is not None and _JOINED_BY_CONTINUATION.fullmatch(
                    src[last_leaf_end : node.start_byte]
                ):
                    self.unknowable("a backslash-newline joins two words")
                last_leaf_end = node.end_byte
            if node.is_named:
                self._visit(node, src)
            stack.extend(reversed(node.children))

    def _visit(self, node: tree_sitter.Node, src: bytes) -> None:
        kind = node.type
        if kind == "ERROR" or node.is_missing:
            self.unknowable("the command does not parse as bash")
        elif kind not in _KNOWN_NODES:
            self.unknowable(f"the command uses shell syntax this reader does not know ({kind})")
        elif kind in _VISITORS:
            _VISITORS[kind](self, node, src)

    def _command(self, node: tree_sitter.Node, src: bytes) -> None:
        words = _command_words(node, src)
        expand_command(words, self)
        if words and words[0] in _NAMING_BUILTINS:
            self._names(words[0], words[1:])
        elif words and words[0] in ("test", "[") and not _plain_test_names(words[1:]):
            self.unknowable("test -v evaluates a subscript, which can run commands")

    def _declaration(self, node: tree_sitter.Node, src: bytes) -> None:
        keyword = _text(node.children[0], src)
        args = [_value(c, src) for c in node.named_children if c.type != "variable_assignment"]
        self.add((keyword, *args))
        self._names(keyword, args)

    def _compound(self, node: tree_sitter.Node, src: bytes) -> None:
        if _text(node, src).startswith("(("):
            self._arithmetic(node, src)

    def _subscript(self, node: tree_sitter.Node, src: bytes) -> None:
        index = node.child_by_field_name("index")
        if index is not None and not _constant(index, src):
            self.unknowable("an array subscript is evaluated as arithmetic, which can run commands")

    def _expansion(self, node: tree_sitter.Node, src: bytes) -> None:
        text = _text(node, src)
        if text.startswith("${!") or "@P}" in text:
            self.unknowable("an indirect or prompt expansion can run commands")

    def _literal(self, node: tree_sitter.Node, src: bytes) -> None:
        """A literal word holding a substitution may still be evaluated by bash later
        (prompt strings, subscripts, traps): the substitutions in it are read as commands
        too. The word's value counts, so quoting cannot split `$(` from its command."""
        value = _value(node, src)
        if value is not None and ("$(" in value or "`" in value):
            self.nested(": " + value)

    def _assignment(self, node: tree_sitter.Node, src: bytes) -> None:
        name = node.child_by_field_name("name")
        if name is not None:
            value = node.child_by_field_name("value")
            self._sets(_text(name, src), _value(value, src) if value is not None else "")

    def _sets(self, name: str, value: Word) -> None:
        """A variable set to `value` (None: not known before it runs): bash code, a command
        line a program runs (read as one), or nothing to read."""
        run = variable_runs(name, value)
        if isinstance(run, Unknown):
            self.unknowable(run.why)
        elif isinstance(run, Text):
            if run.text is None:
                self.unknowable(f"it sets {name}, whose value a program runs, to text that is not a literal")
            else:
                self.line(run.text)

    def _names(self, name: str, args: list[Word]) -> None:
        """Builtins that take variable names: a name with a subscript, or one not known
        until run time, is evaluated as arithmetic (and so can run commands)."""
        if name == "printf":
            targets = args[1:2] if args[:1] == ["-v"] else []
        elif name == "wait":
            targets = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-p"]
        else:
            targets = [a for a in args if a is None or not a.startswith("-")]
            if name in ("declare", "typeset", "local") and any(a and a.startswith("-") and "i" in a for a in args):
                self.unknowable(f"{name} -i evaluates what is assigned as arithmetic, which can run commands")
        if any(t is None or "[" in t for t in targets):
            self.unknowable(f"{name} names a variable that is not a plain literal")
            return
        for target in targets:
            variable, eq, value = (target or "").partition("=")
            if eq:
                self._sets(variable, value)
            elif name in ("read", "printf", "wait"):  # the value comes from input or output
                self._sets(variable, None)

    def _test(self, node: tree_sitter.Node, src: bytes) -> None:
        double = _text(node, src).startswith("[[")
        for child in _descendants(node):
            if child.type != "test_operator":
                continue
            op = _text(child, src)
            operands = [c for c in (child.prev_named_sibling, child.next_named_sibling) if c is not None]
            if op in ("-v", "-R") and not all(_IDENTIFIER.fullmatch(_text(c, src)) for c in operands[-1:]):
                self.unknowable(f"test {op} evaluates a subscript, which can run commands")
            if double and op in _ARITHMETIC_TEST_OPS and not all(_constant(c, src) for c in operands):
                self.unknowable("[[ … ]] evaluates arithmetic over variables, which can run commands")

    def _arithmetic(self, node: tree_sitter.Node, src: bytes) -> None:
        inner = [c for c in node.named_children if c.type not in ("do_group", "compound_statement")]
        if not all(_constant(c, src) for c in inner):
            self.unknowable("arithmetic over variables is evaluated as code by bash")


_VISITORS = {
    "command": _Reader._command,
    "declaration_command": _Reader._declaration,
    "unset_command": _Reader._declaration,
    "test_command": _Reader._test,
    "arithmetic_expansion": _Reader._arithmetic,
    "c_style_for_statement": _Reader._arithmetic,
    "compound_statement": _Reader._compound,
    "subscript": _Reader._subscript,
    "expansion": _Reader._expansion,
    "word": _Reader._literal,
    "raw_string": _Reader._literal,
    "string": _Reader._literal,
    "concatenation": _Reader._literal,
    "variable_assignment": _Reader._assignment,
}


def _sole_simple(root: tree_sitter.Node, src: bytes) -> tuple[str, ...] | None:
    """The words of a line that is exactly one command of literal words (else None)."""
    if root.has_error or len(root.named_children) != 1 or root.named_children[0].type != "command":
        return None
    command = root.named_children[0]
    if any(
        c.type not in ("command_name", "word", "raw_string", "string", "concatenation", "number")
        for c in command.named_children
    ):
        return None
    words = _command_words(command, src)
    literal = [w for w in words if w is not None]
    if len(literal) != len(words) or len(words) != len(command.named_children):
        return None
    return tuple(literal)


def _command_words(node: tree_sitter.Node, src: bytes) -> list[Word]:
    name = node.child_by_field_name("name")
    if name is None:
        return []
    value = _value(name.named_children[0], src) if len(name.named_children) == 1 else None
    return [value, *(_value(a, src) for a in node.children_by_field_name("argument"))]


def _value(node: tree_sitter.Node, src: bytes) -> Word:
    """A word's value after quote removal, or None when bash decides it at run time."""
    text = _text(node, src)
    kind = node.type
    if kind == "word":
        return unescape_word(text)
    if kind == "number":  # in a command's words a number is literal text like any other
        return unescape_word(text)
    if kind == "raw_string":
        return text[1:-1]
    if kind == "string":
        if any(c.type != "string_content" for c in node.named_children):
            return None
        return unescape_double_quoted(text[1:-1])
    if kind == "concatenation":
        return _concatenation(node, src)
    return None


def _concatenation(node: tree_sitter.Node, src: bytes) -> Word:
    """Adjacent parts of one word (`a'b'"c"`); None if any part is dynamic, something lies
    between the parts, or the unquoted parts together make a brace expansion (`a{b,c}`)."""
    parts: list[str] = []
    shape: list[str] = []  # unquoted text as bash scans it for braces; quoted parts blanked
    end = node.start_byte
    for child in node.children:
        if child.start_byte != end:
            return None  # a line continuation between the parts
        value = _value(child, src)
        if value is None:
            return None
        parts.append(value)
        text = _text(child, src)
        shape.append(re.sub(r"\\.", "__", text) if child.type == "word" else "_" * len(text))
        end = child.end_byte
    if has_brace_expansion("".join(shape)):
        return None
    return "".join(parts)


def _plain_test_names(args: list[Word]) -> bool:
    """True unless a `test -v` / `-R` operand is something other than a plain name."""
    return all(
        nxt is not None and _IDENTIFIER.fullmatch(nxt)
        for op, nxt in zip(args, [*args[1:], None], strict=True)
        if op in ("-v", "-R")
    )


def _constant(node: tree_sitter.Node, src: bytes) -> bool:
    """An arithmetic operand that is numbers and operators only (no variable to evaluate)."""
    for part in (node, *_descendants(node)):
        if not part.is_named:
            continue
        if part.type == "word":
            if not (_text(part, src) in ("@", "*") or _text(part, src).isdigit()):
                return False
        elif part.type not in _ARITHMETIC_NODES:
            return False
    return True


def _descendants(node: tree_sitter.Node):
    stack = list(node.children)
    while stack:
        child = stack.pop()
        yield child
        stack.extend(child.children)


def _text(node: tree_sitter.Node, src: bytes) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8", errors="surrogatepass")
