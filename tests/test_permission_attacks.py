"""Attacks on the permission rules, one test per class; each asserts that the attack fails.

Where a trick is meant to run a denied `rm`, the test also runs the line with the real
bash on a scratch file to show that the trick is real (bash does remove the file), so a
deny that catches it is not catching a harmless string.
"""

import os
import subprocess

import pytest

from agents.errors import ConfigError
from agents.messages import TextBlock, ToolUseBlock
from agents.permissions import PermissionRuntime
from tests.fakes import RecordingModel, local_session
from tools import (
    BashTool,
    EditTool,
    ReadTool,
    WriteTool,
)

BASH, EDIT, WRITE, READ = BashTool(), EditTool(), WriteTool(), ReadTool()

ALLOW_GIT_STATUS = {"allow": ["Bash(git status:*)"]}
DENY_RM = {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}


def _bash(command: str, tmp_path, **rules) -> str:
    runtime = PermissionRuntime.from_texts(**rules)
    return runtime.decide(BASH, BASH.input_model.model_validate({"command": command}), tmp_path).effect


def _file_call(tool, path: str, tmp_path, **rules) -> str:
    args = {WRITE: {"path": path, "content": "x"}, EDIT: {"path": path, "old_string": "a", "new_string": "b"}}.get(tool, {"path": path})
    runtime = PermissionRuntime.from_texts(**rules)
    return runtime.decide(tool, tool.input_model.model_validate(args), tmp_path).effect


def _really_removes(command: str, tmp_path) -> bool:
    """Run `command` with bash in a scratch directory holding `victim`; did it go?"""
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    (scratch / "victim").write_text("keep me\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(scratch)}
    subprocess.run(["bash", "-c", command], cwd=scratch, env=env, capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
    return not (scratch / "victim").exists()


# -- an allow rule covers one simple command of literal words --------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "git status; rm -rf x",
        "git status && rm -rf x",
        "git status || rm -rf x",
        "git status | sh",
        "git status\nrm -rf x",
        "git status & rm -rf x",
        "git status --short;rm -rf x",
        "git status |& tee x",
    ],
)
async def test_chaining_after_an_allowed_prefix_is_not_allowed(tmp_path, command):
    assert _bash(command, tmp_path, **ALLOW_GIT_STATUS) == "ask"
    assert _bash(command, tmp_path, **ALLOW_GIT_STATUS, headless="deny-asks") == "deny"
    # And end to end: headless, the chained command never runs.
    marker = command.replace("rm -rf x", "touch chained")
    use = ToolUseBlock(id="b1", name="Bash", input={"command": marker})
    permissions = PermissionRuntime.from_texts(**ALLOW_GIT_STATUS, headless="deny-asks")
    session, _ = local_session(tmp_path, RecordingModel([[use], [TextBlock(text="done")]]), permissions=permissions)
    await session.run_turn("go")
    assert not (tmp_path / "chained").exists()


@pytest.mark.parametrize(
    "command",
    [
        "git status $(rm -rf x)",
        "git status `rm -rf x`",
        'git status "$(rm -rf x)"',
        "git status <(rm -rf x)",
        "git status >(rm -rf x)",
        "git status --short=$(rm x)",
    ],
)
def test_substitution_inside_an_allowed_command_is_not_allowed(tmp_path, command):
    assert _bash(command, tmp_path, **ALLOW_GIT_STATUS) == "ask"


@pytest.mark.parametrize(
    "command",
    ["git status > .bashrc", "git status >> .bashrc", "git status 2> x", "git status &> x", "git status < /etc/passwd", ">x git status"],
)
def test_redirection_after_an_allowed_command_is_not_allowed(tmp_path, command):
    assert _bash(command, tmp_path, **ALLOW_GIT_STATUS) == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "git status $X",
        "git status ${X}",
        "git status *",
        "git status ?",
        "git status [ab]",
        "git status ~",
        "git status {a,b}",
        "git status $((1+1))",
        "git status $'\\x41'",
        'git status "$HOME"',
        "GIT_DIR=/tmp git status",
    ],
)
def test_variable_and_glob_expansion_in_an_allowed_command_is_not_allowed(tmp_path, command):
    assert _bash(command, tmp_path, **ALLOW_GIT_STATUS) == "ask"


async def test_always_answer_on_a_command_with_expansions_grants_nothing_for_later_calls(tmp_path):
    runtime = PermissionRuntime.from_texts()
    args = BASH.input_model.model_validate({"command": "git log $(cat ref)"})
    assert runtime.answer(BASH, args, tmp_path, allow=True, always=True).effect == "allow"
    # The same text runs whatever `ref` holds next time: it must be asked again.
    assert runtime.grants == [] and runtime.decide(BASH, args, tmp_path).effect == "ask"


# -- a deny rule catches the command wherever and however it is written -----------------------


@pytest.mark.parametrize("command", ["'r''m' victim", "r\\m victim", '"rm" victim', 'r"m" victim', "\\rm victim", "''rm victim"])
def test_quoting_tricks_do_not_dodge_a_deny_rule(tmp_path, command):
    assert _really_removes(command, tmp_path)
    assert _bash(command, tmp_path, **DENY_RM) == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "env rm victim",
        "env -i FOO=1 rm victim",
        "env -u HOME -- rm victim",
        "/bin/rm victim",
        "command rm victim",
        "command -p rm victim",
        "FOO=1 rm victim",
        "echo victim | xargs rm",
        "printf victim | xargs -0 -n 1 rm",
        "nice -n 5 rm victim",
        "nice -5 rm victim",
        "nohup rm victim",
        "timeout 5 rm victim",
        "timeout -s KILL 5 rm victim",
        "time rm victim",
        "exec rm victim",
        "builtin exec rm victim",
        "stdbuf -oL rm victim",
        "setsid -w rm victim",
        "find . -name victim -exec rm {} \\;",
        "env nice nohup /usr/bin/rm victim",
        "coproc rm victim",
    ],
)
def test_wrappers_do_not_dodge_a_deny_rule(tmp_path, command):
    assert _really_removes(command, tmp_path)
    assert _bash(command, tmp_path, **DENY_RM) == "deny"
    # Wrappers bash cannot run here (sudo) or options the table does not know fail closed.
    for other in ("sudo rm victim", "sudo -u root -- rm victim", "doas rm victim", "env --no-such-option rm victim"):
        assert _bash(other, tmp_path, **DENY_RM) == "deny"


@pytest.mark.parametrize(
    "command",
    [
        'bash -c "rm -rf victim"',
        "sh -c 'rm victim'",
        "bash -ec 'rm victim'",
        "bash -o pipefail -c 'rm victim'",
        "bash -c \"sh -c 'rm victim'\"",
        "echo rm victim | bash",
        "bash -c 'echo hi; rm victim'",
    ],
)
def test_shell_c_strings_are_read_for_denied_commands(tmp_path, command):
    assert _really_removes(command, tmp_path)
    assert _bash(command, tmp_path, **DENY_RM) == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "eval rm victim",
        "eval 'r''m victim'",
        "CMD=rm; eval $CMD victim",
        "trap 'rm victim' EXIT",
        "source /dev/stdin <<< 'rm victim'",
        ". <(echo rm victim)",
        "let 'x=1'",
    ],
)
def test_eval_and_code_running_builtins_fail_closed_for_a_deny_rule(tmp_path, command):
    assert _bash(command, tmp_path, **DENY_RM) == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "(rm victim)",
        "( cd . && rm victim )",
        "{ rm victim; }",
        "if true; then rm victim; fi",
        "for i in 1; do rm victim; done",
        "while true; do rm victim; break; done",
        "case x in x) rm victim;; esac",
        "! rm victim",
        "true && (false || rm victim)",
    ],
)
def test_subshells_and_compound_commands_do_not_hide_a_denied_command(tmp_path, command):
    assert _really_removes(command, tmp_path)
    assert _bash(command, tmp_path, **DENY_RM) == "deny"


@pytest.mark.parametrize("command", ["f() { rm victim; }; f", "function f { rm victim; }; f", "f() ( rm victim ); f"])
def test_a_function_calling_a_denied_command_is_caught(tmp_path, command):
    assert _really_removes(command, tmp_path)
    assert _bash(command, tmp_path, **DENY_RM) == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "bash <<EOF\nrm victim\nEOF",
        "sh <<'EOF'\nrm victim\nEOF",
        "cat <<EOF\n$(rm victim)\nEOF",
        "bash <<< 'rm victim'",
    ],
)
def test_heredocs_do_not_hide_a_denied_command(tmp_path, command):
    assert _really_removes(command, tmp_path)
    assert _bash(command, tmp_path, **DENY_RM) == "deny"
    assert _bash("git status <<EOF\nhi\nEOF", tmp_path, **ALLOW_GIT_STATUS) == "ask"


@pytest.mark.parametrize(
    ("command", "runs_rm_here"),
    [
        ("$X victim", False),
        ("${X} victim", False),
        ('"$X" victim', False),
        ("$(echo rm) victim", True),
        ("`echo rm` victim", True),
        ("/bin/r? victim", False),
        ("$'\\x72m' victim", True),
        ("echo $((X))", False),
        ("echo ${!X}", False),
        ('unset "a[$X]"', False),
        ("[[ $X -eq 1 ]]", False),
        # Text bash evaluates later: arithmetic over a variable, prompt strings, startup
        # files and exported functions, even with the substitution split across quotes.
        ("x='a[$'\"(rm victim)]\"; echo $((x))", True),
        ("read -r x <<< 'a[$(rm victim)]'; echo $((x))", True),
        ("y='rm victim'; PS4='$('\"$y\"')'; set -x; :", True),
        ("env 'BASH_FUNC_ls%%=() { rm victim; }' bash -c ls", True),
        ("echo 'rm victim' | BASH_ENV=/dev/stdin bash -c :", True),
    ],
)
def test_a_command_not_known_until_it_runs_fails_closed_for_a_deny_rule(tmp_path, command, runs_rm_here):
    if runs_rm_here:
        assert _really_removes(command, tmp_path)
    decision = PermissionRuntime.from_texts(**DENY_RM).decide(BASH, BASH.input_model.model_validate({"command": command}), tmp_path)
    assert decision.effect == "deny"
    assert "treated as matching" in decision.reason or "rm victim" in command


@pytest.mark.parametrize(
    "command",
    [
        "git status\u200b",
        "git\u00a0status",
        "git\u2009status",
        "\uff47it status",  # fullwidth g
        "g\u0456t status",  # Cyrillic i
        "git status \u202e",
        "git status\r",
        "\ufeffgit status",
        "git sta\u200dtus",
    ],
)
def test_lookalike_and_invisible_characters_never_match_an_allow_rule(tmp_path, command):
    assert _bash(command, tmp_path, **ALLOW_GIT_STATUS) == "ask"
    # Hidden characters also make a deny rule fail closed rather than miss.
    for hidden in ("rm\u200b victim", "\u202erm victim", "rm\u00a0-rf victim", "rm victim\u2066"):
        assert _bash(hidden, tmp_path, **DENY_RM) == "deny"


@pytest.mark.parametrize(
    "command",
    ["rm victim'", "git status (", "{rm,victim}", "echo $((", "exec 3<>/dev/tcp/127.0.0.1/9", "r\\\nm victim", "echo ${"],
)
def test_an_unparseable_command_fails_closed_for_deny_and_never_matches_allow(tmp_path, command):
    assert _bash(command, tmp_path, **DENY_RM) == "deny"
    assert _bash(command.replace("rm", "git status"), tmp_path, **ALLOW_GIT_STATUS) == "ask"


# -- changing .git/ and .workingset/ needs its own permission ---------------------------------


@pytest.mark.parametrize(
    "rules",
    [
        {"mode": "accept-edits"},
        {"mode": "bypass"},
        {"allow": ["Edit", "Write"]},
        {"allow": ["Edit(**)", "Write(**)"]},
        {"allow": ["Edit(*)", "Write(*)"]},
        {"allow": ["Edit(**/config)", "Write(**/config)", "Edit(.g*/**)", "Write(.*/**)"], "mode": "bypass"},
        {"allow": ["Edit(src/../.git/**)", "Write(src/**)"]},
    ],
)
@pytest.mark.parametrize("path", [".git/config", ".git/hooks/pre-commit", ".workingset/config.toml", "vendor/dep/.git/config", "./.git/config"])
def test_protected_paths_are_not_writable_through_modes_or_broad_rules(tmp_path, rules, path):
    for tool in (EDIT, WRITE):
        assert _file_call(tool, path, tmp_path, **rules) == "ask"
        assert _file_call(tool, path, tmp_path, **rules, headless="deny-asks") == "deny"
        assert _file_call(tool, path, tmp_path, **rules, headless="allow-list") == "deny"
    # A symlink or an absolute path that lands in .git/ is judged by where it lands.
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "innocent").symlink_to(tmp_path / ".git", target_is_directory=True)
    assert _file_call(WRITE, "innocent/config", tmp_path, **rules) == "ask"
    assert _file_call(WRITE, str(tmp_path / ".git" / "config"), tmp_path, **rules) == "ask"


# -- rule forms that cannot be made safe ------------------------------------------------------


@pytest.mark.parametrize(
    ("effect", "text", "advice"),
    [
        ("allow", "Bash(git *)", "such as Bash(git:*)"),
        ("allow", "Bash(*)", "Bash(git status:*)"),
        ("deny", "Bash(rm -rf *)", "such as Bash(rm -rf:*)"),
        ("allow", "Bash(git:*:*)", "such as Bash(git:*)"),
        ("allow", "Bash(:*)", "write Bash"),
        ("allow", "Bash(git status && rm:*)", "without quotes, shell operators"),
        ("allow", "Bash(\"git status\":*)", "without quotes, shell operators"),
        ("allow", "Bash(git $(x):*)", "without quotes, shell operators"),
        ("deny", "Bash(r\\m:*)", "without quotes, shell operators"),
        ("allow", "Bash(FOO=1 make:*)", "name the command itself"),
        ("allow", "Bash(env:*)", "allow the commands themselves"),
        ("allow", "Bash(sudo:*)", "allow the commands themselves"),
        ("allow", "Bash(bash:*)", "allow the commands themselves"),
        ("allow", "Bash(xargs:*)", "allow the commands themselves"),
        ("allow", "Bash(eval:*)", "allow the commands themselves"),
        ("deny", "B*(rm:*)", "name the tool"),
        ("allow", "*(src/**)", "name the tool"),
    ],
)
def test_rule_forms_that_cannot_be_made_safe_are_refused_at_load(effect, text, advice):
    with pytest.raises(ConfigError) as info:
        PermissionRuntime.from_texts(**{effect: [text]})
    assert repr(text) in str(info.value) and advice in str(info.value)


# -- legitimate use still works ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("Bash(git status:*)", "git status"),
        ("Bash(git status:*)", "git status --short"),
        ("Bash(git status:*)", "git 'status' -sb"),
        ("Bash(git status:*)", "  git   status  "),
        ("Bash(npm test)", "npm test"),
        ("Bash(pytest:*)", "pytest -q tests/test_x.py::test_y"),
        ("Bash(git commit:*)", "git commit -m 'fix: handle $(x) in names'"),
        ("Bash(make:*)", "make -j2 build"),
    ],
)
def test_legitimate_commands_still_match_their_allow_rules(tmp_path, rule, command):
    assert _bash(command, tmp_path, allow=[rule]) == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "git status | wc -l",
        "ls && make test",
        "for f in a b; do echo $f; done",
        "export PATH=$PATH:/opt/x && pytest -q",
        "find . -name '*.py' -exec grep -n TODO {} +",
        "cat <<'EOF' > notes.txt\nrm is mentioned here\nEOF",
        "echo rm",
        "git rm --cached x",
        "npm run format",
    ],
)
def test_legitimate_commands_are_not_caught_by_an_unrelated_deny_rule(tmp_path, command):
    assert _bash(command, tmp_path, **DENY_RM) == "allow"


def test_an_explicit_rule_or_the_users_answer_allows_a_protected_write(tmp_path):
    assert _file_call(EDIT, ".git/info/exclude", tmp_path, allow=["Edit(.git/info/exclude)"]) == "allow"
    assert _file_call(WRITE, ".workingset/skills/x/SKILL.md", tmp_path, allow=["Write(.workingset/skills/**)"]) == "allow"
    assert _file_call(WRITE, ".workingset/config.toml", tmp_path, allow=["Write(.workingset/skills/**)"], mode="bypass") == "ask"
    assert _file_call(WRITE, ".git/config", tmp_path, allow=["Write(.git/**)"], deny=["Write(.git/config)"]) == "deny"
    assert _file_call(READ, ".git/config", tmp_path) == "allow"  # reading is not changing
    runtime = PermissionRuntime.from_texts(mode="bypass")
    args = WRITE.input_model.model_validate({"path": ".git/config", "content": "x"})
    runtime.answer(WRITE, args, tmp_path, allow=True, always=True)
    assert runtime.decide(WRITE, args, tmp_path).effect == "allow"
