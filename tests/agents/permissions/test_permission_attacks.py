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
from tests.support.fakes import RecordingModel, local_session
from tools import (
    BashTool,
    EditTool,
    ReadTool,
    WriteTool,
)

BASH, EDIT, WRITE, READ = BashTool(), EditTool(), WriteTool(), ReadTool()

ALLOW_GIT_STATUS = {"allow": ["Bash(git status:*)"]}
DENY_RM = {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}


def _bash_under_rules(command: str, tmp_path, **rules) -> str:
    runtime = PermissionRuntime.from_texts(**rules)
    return runtime.decide(BASH, BASH.input_model.model_validate({"command": command}), tmp_path).effect


def _file_call(tool, path: str, tmp_path, **rules) -> str:
    args = {WRITE: {"path": path, "content": "x"}, EDIT: {"path": path, "old_string": "a", "new_string": "b"}}.get(
        tool, {"path": path}
    )
    runtime = PermissionRuntime.from_texts(**rules)
    return runtime.decide(tool, tool.input_model.model_validate(args), tmp_path).effect


def _assert_real_yet_denied(command: str, tmp_path) -> None:
    """The trick does run `rm` with bash here, and the deny rule on rm catches it."""
    assert _really_removes(command, tmp_path)
    assert _bash_under_rules(command, tmp_path, **DENY_RM) == "deny"


def _really_removes(command: str, tmp_path) -> bool:
    """Run `command` with bash in a scratch directory holding `victim`; did it go?"""
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    (scratch / "victim").write_text("keep me\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(scratch)}
    subprocess.run(
        ["bash", "-c", command], cwd=scratch, env=env, capture_output=True, timeout=20, stdin=subprocess.DEVNULL
    )
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
    assert _bash_under_rules(command, tmp_path, **ALLOW_GIT_STATUS) == "ask"
    assert _bash_under_rules(command, tmp_path, **ALLOW_GIT_STATUS, headless="deny-asks") == "deny"
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
    assert _bash_under_rules(command, tmp_path, **ALLOW_GIT_STATUS) == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "git status > .bashrc",
        "git status >> .bashrc",
        "git status 2> x",
        "git status &> x",
        "git status < /etc/passwd",
        ">x git status",
    ],
)
def test_redirection_after_an_allowed_command_is_not_allowed(tmp_path, command):
    assert _bash_under_rules(command, tmp_path, **ALLOW_GIT_STATUS) == "ask"


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
    assert _bash_under_rules(command, tmp_path, **ALLOW_GIT_STATUS) == "ask"


async def test_always_answer_on_a_command_with_expansions_grants_nothing_for_later_calls(tmp_path):
    runtime = PermissionRuntime.from_texts()
    args = BASH.input_model.model_validate({"command": "git log $(cat ref)"})
    assert runtime.answer(BASH, args, tmp_path, allow=True, always=True).effect == "allow"
    # The same text runs whatever `ref` holds next time: it must be asked again.
    assert runtime.grants == [] and runtime.decide(BASH, args, tmp_path).effect == "ask"


# -- a deny rule catches the command wherever and however it is written -----------------------


@pytest.mark.parametrize(
    "command", ["'r''m' victim", "r\\m victim", '"rm" victim', 'r"m" victim', "\\rm victim", "''rm victim"]
)
def test_quoting_tricks_do_not_dodge_a_deny_rule(tmp_path, command):
    _assert_real_yet_denied(command, tmp_path)


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
    assert _bash_under_rules(command, tmp_path, **DENY_RM) == "deny"
    # Wrappers bash cannot run here (sudo) or options the table does not know fail closed.
    for other in ("sudo rm victim", "sudo -u root -- rm victim", "doas rm victim", "env --no-such-option rm victim"):
        assert _bash_under_rules(other, tmp_path, **DENY_RM) == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "flock lockfile rm victim",
        "flock -xn lockfile rm victim",
        "flock --timeout=5 lockfile rm victim",
        "flock -- lockfile rm victim",
        "flock lockfile -c 'rm victim'",
        "taskset 1 rm victim",
        "taskset -c 0 rm victim",
        "taskset --cpu-list 0 rm victim",
        "taskset -a 1 rm victim",
        "script -qc 'rm victim' /dev/null",
        "script /dev/null -qc 'rm victim'",
        "script --command='rm victim' -q /dev/null",
        "nice --adjustment=5 rm victim",
        "nice -n5 rm victim",
        "ionice -c 3 rm victim",
        "ionice -c3 -t rm victim",
        "chrt -o 0 rm victim",
        "chrt --other 0 rm victim",
        "chrt -b 0 rm victim",
        "setsid --wait rm victim",
        "stdbuf --output=L -e0 rm victim",
        "timeout --sig=KILL 5 rm victim",
        "timeout -k 5 -s KILL 5 rm victim",
        "prlimit --nofile=1024 rm victim",
        "prlimit -n1024 rm victim",
        "strace -f -o /dev/null rm victim",
        "strace -o '|rm victim' true",
        "valgrind -q rm victim",
        "/usr/bin/time -f %e rm victim",
        "echo victim | xargs -I{} rm {}",
        "echo victim | xargs --max-lines=1 rm",
        "env --chdir=. rm victim",
        "env -S 'rm victim'",
        "ssh -o ProxyCommand='rm victim' nowhere",
        "ssh -oProxyCommand='rm victim' nowhere",
    ],
)
def test_runners_do_not_dodge_a_deny_rule(tmp_path, command):
    _assert_real_yet_denied(command, tmp_path)


@pytest.mark.parametrize(
    "command",
    [
        # Runners that need privileges, a terminal, a network or a program not installed here.
        "su root -c 'rm victim'",
        "su -c'rm victim'",
        "su -c 'echo x' root -c 'rm victim'",
        "su -s /bin/rm root victim",
        "runuser -u root -- rm victim",
        "runuser root -c 'rm victim'",
        "sg root 'rm victim'",
        "sg root -c 'rm victim'",
        "chroot --skip-chdir / rm victim",
        "unshare --fork rm victim",
        "nsenter --preserve-credentials rm victim",
        "setpriv --reuid=0 rm victim",
        "bwrap --dev-bind / / rm victim",
        "watch -n 1 rm victim",
        "watch -x rm victim",
        "ssh host rm victim",
        "ssh -p 2222 host -t rm victim",
        "ssh host 'cd /; rm victim'",
        "sshpass -p secret rm victim",
        "parallel rm ::: victim",
        "parallel 'echo {}; rm victim' ::: a",
        "ltrace -o /dev/null rm victim",
        "catchsegv rm victim",
        "unbuffer -p rm victim",
        "chpst -u nobody rm victim",
        "cpulimit -l 50 -- rm victim",
        "numactl --cpunodebind=0 rm victim",
        "firejail rm victim",
        "systemd-run rm victim",
        "doas -u root rm victim",
        "sudo -E rm victim",
    ],
)
def test_runners_that_cannot_run_here_do_not_dodge_a_deny_rule(tmp_path, command):
    assert _bash_under_rules(command, tmp_path, **DENY_RM) == "deny"


@pytest.mark.parametrize(
    ("command", "runs_rm_here"),
    [
        ("gdb -batch -ex 'shell rm victim'", True),
        ("gdb -batch -ex run --args rm victim", True),
        ("echo 'rm victim' | newgrp root", False),
        ("script -q /dev/null", False),
        ("su root", False),
        ("ssh host", False),
        ("expect -c 'spawn rm victim'", False),
        ("parallel ::: 'rm victim'", False),
        ('flock "$LOCK" rm victim', False),
        ("taskset --no-such-option 1 rm victim", False),
        ("firejail --quiet rm victim", False),
        ("SHELL=/usr/bin/python3 flock lockfile -c 'import os'", False),
        ("bwrap --args 3 rm victim", False),
    ],
)
def test_runners_whose_command_cannot_be_known_fail_closed_for_a_deny_rule(tmp_path, command, runs_rm_here):
    if runs_rm_here:
        assert _really_removes(command, tmp_path)
    decision = PermissionRuntime.from_texts(**DENY_RM).decide(
        BASH, BASH.input_model.model_validate({"command": command}), tmp_path
    )
    assert decision.effect == "deny" and "treated as matching" in decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "git -c alias.x='!rm victim' x",
        "git -c alias.x=!sh x <<< 'rm victim'",
        "git -c alias.x='!f() { rm \"$1\"; }; f' x victim",
        "git -c alias.x='-c alias.y=!rm\\ victim y' x",
        "git init -q . && git -c core.fsmonitor='rm victim' status",
        "printf '[alias]\\n\\tfrob = !rm victim\\n' > .gitconfig && git frob",
    ],
)
def test_git_aliases_and_settings_do_not_dodge_a_deny_rule(tmp_path, command):
    _assert_real_yet_denied(command, tmp_path)


@pytest.mark.parametrize(
    "command",
    [
        "git frob",  # not a git command: it may be an alias from ~/.gitconfig or .git/config
        "git -c core.pager='rm victim' -p log",
        "git -c core.sshCommand='rm victim' fetch",
        "git -c include.path=/tmp/evil status",
        "git --config-env=alias.x=CMD x",
        "git -c alias.x='-c core.fsmonitor=rm\\ victim status' x",
        "git bisect run rm victim",
        "git submodule foreach 'rm victim'",
        "git rebase -x 'rm victim' main",
        "git rebase --exec='rm victim' main",
        "git difftool --extcmd='rm victim'",
        "git grep -O'rm victim' TODO",
        "git clone -u 'rm victim' host:repo",
        "git fetch --upload-pack='rm victim' origin",
        "git push --receive-pack='rm victim' origin",
        "git clone -c core.fsmonitor='rm victim' host:repo",
        'git fetch "$OPTS" origin',
        "git for-each-repo --config=k -c alias.x='!rm victim' x",
        "git filter-branch --tree-filter 'rm victim' HEAD",
        "GIT_PAGER='rm victim' git -p log",
        "PAGER='rm victim' man ls",
        "GIT_SSH_COMMAND='rm victim' git fetch",
        "export GIT_EDITOR='rm victim'; git commit",
        "env GIT_EDITOR='rm victim' git commit",
        "GIT_CONFIG_COUNT=1 git status",
    ],
)
def test_git_commands_that_run_other_commands_are_caught_by_a_deny_rule(tmp_path, command):
    assert _bash_under_rules(command, tmp_path, **DENY_RM) == "deny"


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
    _assert_real_yet_denied(command, tmp_path)


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
    assert _bash_under_rules(command, tmp_path, **DENY_RM) == "deny"


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
    _assert_real_yet_denied(command, tmp_path)


@pytest.mark.parametrize("command", ["f() { rm victim; }; f", "function f { rm victim; }; f", "f() ( rm victim ); f"])
def test_a_function_calling_a_denied_command_is_caught(tmp_path, command):
    _assert_real_yet_denied(command, tmp_path)


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
    assert _bash_under_rules(command, tmp_path, **DENY_RM) == "deny"
    assert _bash_under_rules("git status <<EOF\nhi\nEOF", tmp_path, **ALLOW_GIT_STATUS) == "ask"


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
    decision = PermissionRuntime.from_texts(**DENY_RM).decide(
        BASH, BASH.input_model.model_validate({"command": command}), tmp_path
    )
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
    assert _bash_under_rules(command, tmp_path, **ALLOW_GIT_STATUS) == "ask"
    # Hidden characters also make a deny rule fail closed rather than miss.
    for hidden in ("rm\u200b victim", "\u202erm victim", "rm\u00a0-rf victim", "rm victim\u2066"):
        assert _bash_under_rules(hidden, tmp_path, **DENY_RM) == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "rm victim'",
        "git status (",
        "{rm,victim}",
        "echo $((",
        "exec 3<>/dev/tcp/127.0.0.1/9",
        "r\\\nm victim",
        "echo ${",
    ],
)
def test_an_unparseable_command_fails_closed_for_deny_and_never_matches_allow(tmp_path, command):
    assert _bash_under_rules(command, tmp_path, **DENY_RM) == "deny"
    assert _bash_under_rules(command.replace("rm", "git status"), tmp_path, **ALLOW_GIT_STATUS) == "ask"


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
        {"allow": ["Edit(src/.git/**)", "Write(src/**)"]},
    ],
)
@pytest.mark.parametrize(
    "path",
    [".git/config", ".git/hooks/pre-commit", ".workingset/config.toml", "vendor/dep/.git/config", "./.git/config"],
)
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
        ("allow", 'Bash("git status":*)', "without quotes, shell operators"),
        ("allow", "Bash(git $(x):*)", "without quotes, shell operators"),
        ("deny", "Bash(r\\m:*)", "without quotes, shell operators"),
        ("allow", "Bash(FOO=1 make:*)", "name the command itself"),
        ("allow", "Bash(env:*)", "allow the commands themselves"),
        ("allow", "Bash(sudo:*)", "allow the commands themselves"),
        ("allow", "Bash(bash:*)", "allow the commands themselves"),
        ("allow", "Bash(xargs:*)", "allow the commands themselves"),
        ("allow", "Bash(eval:*)", "allow the commands themselves"),
        ("allow", "Bash(flock:*)", "allow the commands themselves"),
        ("allow", "Bash(taskset:*)", "allow the commands themselves"),
        ("allow", "Bash(script:*)", "allow the commands themselves"),
        ("allow", "Bash(ssh:*)", "allow the commands themselves"),
        ("deny", "B*(rm:*)", "name the tool"),
        ("allow", "*(src/**)", "name the tool"),
        ("allow", "Edit(src/../.git/**)", "has a `..` segment"),
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
    assert _bash_under_rules(command, tmp_path, allow=[rule]) == "allow"


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
    assert _bash_under_rules(command, tmp_path, **DENY_RM) == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "flock /tmp/build.lock make test",
        "taskset -c 0 pytest -q",
        "taskset -p 1",
        "chrt -p 1",
        "ionice -p 1",
        "timeout 60 pytest",
        "nice -n 10 make",
        "script -qc 'make test' /dev/null",
        "strace -f -o trace.txt make",
        "prlimit --nofile=1024 make",
        "ssh host ls -la",
        "xargs -I{} cat {}",
        "git log --oneline",
        "git -c color.ui=never diff",
        "git -c user.name=a -c user.email=b commit -m fix",
        "git -c alias.st=status st",
        "GIT_EDITOR=true git rebase --continue",
        "git rebase main",
        "git bisect run make test",
        "git submodule update --init",
        "git fetch origin",
    ],
)
def test_runners_running_other_commands_are_not_caught_by_an_unrelated_deny_rule(tmp_path, command):
    assert _bash_under_rules(command, tmp_path, **DENY_RM) == "allow"


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("Bash(git:*)", "git -c alias.x='!rm victim' x"),
        ("Bash(git:*)", "git frob"),
        ("Bash(git:*)", "git -c core.pager=less log"),
        ("Bash(git rebase:*)", "git rebase -x 'rm victim' main"),
        ("Bash(git bisect:*)", "git bisect run rm victim"),
    ],
)
def test_an_allow_prefix_does_not_allow_what_a_command_it_covers_runs(tmp_path, rule, command):
    assert _bash_under_rules(command, tmp_path, allow=[rule]) == "ask"


def test_an_allow_prefix_that_names_the_command_a_runner_runs_still_allows_it(tmp_path):
    assert _bash_under_rules("git bisect run make test", tmp_path, allow=["Bash(git bisect run make:*)"]) == "allow"
    assert _bash_under_rules("git status --short", tmp_path, allow=["Bash(git:*)"]) == "allow"


def test_an_explicit_rule_or_the_users_answer_allows_a_protected_write(tmp_path):
    assert _file_call(EDIT, ".git/info/exclude", tmp_path, allow=["Edit(.git/info/exclude)"]) == "allow"
    assert (
        _file_call(WRITE, ".workingset/skills/x/SKILL.md", tmp_path, allow=["Write(.workingset/skills/**)"]) == "allow"
    )
    assert (
        _file_call(WRITE, ".workingset/config.toml", tmp_path, allow=["Write(.workingset/skills/**)"], mode="bypass")
        == "ask"
    )
    assert _file_call(WRITE, ".git/config", tmp_path, allow=["Write(.git/**)"], deny=["Write(.git/config)"]) == "deny"
    assert _file_call(READ, ".git/config", tmp_path) == "allow"  # reading is not changing
    runtime = PermissionRuntime.from_texts(mode="bypass")
    args = WRITE.input_model.model_validate({"path": ".git/config", "content": "x"})
    runtime.answer(WRITE, args, tmp_path, allow=True, always=True)
    assert runtime.decide(WRITE, args, tmp_path).effect == "allow"
