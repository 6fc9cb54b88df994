"""The programs that run other commands: each one's options, and where its command is.

Every entry lists the options of the program's manual (util-linux, coreutils, procps,
findutils, OpenSSH, …), the way the manual writes them (see runner_spec for the
notation), and how the program finds what it runs: `command(after=N)` for a command
after N operands, or a finder of its own. An option the entry does not list makes the
line unknowable, so an entry that lists no options (`firejail`, `systemd-run`) still
unwraps its plain form (`firejail rm x`) and fails closed on any other. Programs whose
commands are code of their own or come from somewhere the line does not show (gdb's
command language and ~/.gdbinit, expect's Tcl, the shell newgrp starts) are unknowable
outright.

Where the manuals of two versions differ (chrt's priority became optional in util-linux
2.42; the BSD `script file command`), or a program's manual does not say whether options
may follow its operands, every reading is taken.
"""

from __future__ import annotations

import re

from agents.permissions.runner_spec import (
    Argv,
    Parsed,
    Run,
    Runner,
    Text,
    Unknown,
    Word,
    command,
    options,
    read_options,
)
from agents.permissions.shell_variables import variable_runs

__all__ = ["RUNNERS", "joined"]

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_%]*=")
_SHELL_READS_STDIN = "runs a shell that reads its commands from standard input"


def joined(words: tuple[Word, ...], what: str) -> Run:
    """Words a program joins with spaces and hands to a shell (`watch`, `ssh`, `env -S`)."""
    if any(w is None for w in words):
        return Unknown(f"{what} runs text that is not a literal")
    return Text(" ".join(w for w in words if w is not None))


def _assignments(words: tuple[Word, ...]) -> tuple[list[Run], tuple[Word, ...]]:
    """NAME=value words before a command (env, sudo): what setting them runs, and the rest."""
    runs: list[Run] = []
    i = 0
    while i < len(words) and words[i] is not None and _ASSIGNMENT.match(words[i] or ""):
        name, _, value = (words[i] or "").partition("=")
        run = variable_runs(name, value)
        if run is not None:
            runs.append(run)
        i += 1
    return runs, words[i:]


def _env(parsed: Parsed) -> list[Run]:
    operands = parsed.operands[1:] if parsed.operands[:1] == ("-",) else parsed.operands
    runs, rest = _assignments(operands)
    split = parsed.values.get("-S")
    if split:
        runs.append(joined((*split, *rest), "env -S"))
    elif rest:
        runs.append(Argv(rest))
    return runs


def _sudo(parsed: Parsed) -> list[Run]:
    runs, rest = _assignments(parsed.operands)
    if rest:
        return [*runs, Argv(rest)]
    return [*runs, Unknown(f"sudo {_SHELL_READS_STDIN}")] if parsed.has("-s", "-i") else runs


def _xargs(parsed: Parsed) -> list[Run]:
    """xargs fills in words from its input: where the replace string stands (-I, -i), or
    after the command; those words are known only at run time."""
    rest = parsed.operands
    replaces = [*parsed.values.get("-I", ()), *(v or "{}" for v in parsed.values.get("-i", ()))]
    if not rest:
        return []  # it runs echo
    if not replaces:
        return [Argv((*rest, None))]
    return [Argv(tuple(None if w is None or any(r in w for r in replaces) else w for w in rest))]


def _watch(parsed: Parsed) -> list[Run]:
    if not parsed.operands:
        return []
    return [Argv(parsed.operands)] if parsed.has("-x") else [joined(parsed.operands, "watch")]


def _flock(parsed: Parsed) -> list[Run]:
    """`flock FILE CMD…`, `flock FILE -c STRING`; `flock FD` runs nothing."""
    lock, rest = parsed.operands[:1], parsed.operands[1:]
    if not rest:
        return []
    if lock == (None,):
        return [Unknown("flock's lock file is not a literal")]
    if rest[0] in ("-c", "--command"):
        return [Text(rest[1] if len(rest) > 1 else "")]
    return [Argv(rest)]


def _chrt(parsed: Parsed) -> list[Run]:
    """`chrt [opts] PRIO CMD…`; since util-linux 2.42 the priority may be left out."""
    first = parsed.operands[:1]
    if first == (None,):
        return [Unknown("chrt's priority is not a literal")]
    if first and (first[0] or "").isdigit():
        return [Argv(parsed.operands[1:])] if parsed.operands[1:] else []
    return [Argv(parsed.operands)] if parsed.operands else []


def _su(parsed: Parsed) -> list[Run]:
    """su and runuser run the user's shell (or -s SHELL): with each -c string, or with the
    words after the user as its arguments; `runuser -u USER CMD…` runs CMD itself."""
    shell = (parsed.values.get("-s") or ["sh"])[-1]
    strings = [*parsed.values.get("-c", ()), *parsed.values.get("--session-command", ())]
    runs: list[Run] = [Argv((shell, "-c", s)) for s in strings]
    operands = parsed.operands[1:] if parsed.operands[:1] == ("-",) else parsed.operands
    if parsed.has("-u"):
        return [*runs, Argv(operands)] if operands else runs or [Unknown(f"runuser {_SHELL_READS_STDIN}")]
    if operands[:1] == (None,):
        return [Unknown("su's user is not a literal")]
    return runs or [Argv((shell, *operands[1:]))]


def _script(parsed: Parsed) -> list[Run]:
    """`script [opts] [FILE]` runs `-c STRING` (a line of its own, see `lines`) or an
    interactive shell; the BSD form `script FILE CMD…` runs CMD."""
    if parsed.operands[1:]:
        return [Argv(parsed.operands[1:])]
    return [] if parsed.has("-c") else [Unknown(f"script without -c {_SHELL_READS_STDIN}")]


def _sg(args: tuple[Word, ...]) -> list[Run]:
    """`sg [-] GROUP [-c] COMMAND`: COMMAND is handed to `sh -c`; without one, a shell starts."""
    words = args[1:] if args[:1] == ("-",) else args
    if words[:1] == (None,):
        return [Unknown("sg's group is not a literal")]
    rest = words[1:]
    rest = rest[1:] if rest[:1] == ("-c",) else rest
    return [Argv(("sh", "-c", *rest))] if rest else [Unknown(f"sg {_SHELL_READS_STDIN}")]


def _strace(parsed: Parsed) -> list[Run]:
    """strace runs its command; `-o |CMD` (or `!CMD`) pipes the trace into CMD."""
    runs: list[Run] = [Text(v[1:]) for v in parsed.values.get("-o", ()) if v[:1] in ("|", "!")]
    runs.extend(_assignments(tuple(parsed.values.get("-E", ())))[0])
    return [*runs, Argv(parsed.operands)] if parsed.operands else runs


def _bwrap(parsed: Parsed) -> list[Run]:
    if parsed.has("--args"):
        return [Unknown("bwrap --args reads more arguments from a file descriptor")]
    pairs = parsed.values.get("--setenv", [])
    runs: list[Run] = [
        r for name, value in zip(pairs[::2], pairs[1::2], strict=False) if (r := variable_runs(name, value)) is not None
    ]
    return [*runs, Argv(parsed.operands)] if parsed.operands else runs


def _parallel(args: tuple[Word, ...]) -> list[Run]:
    """GNU parallel joins its command words, fills in each input (quoted, or where a
    replacement string stands) and hands the text to a shell. Its options are not listed
    here; without a command, its input lines are the commands."""
    template: list[Word] = []
    for word in args:
        if word in (":::", "::::", ":::+", "::::+"):
            break
        template.append(word)
    if not template or template[0] is None or (template[0] or "").startswith("-"):
        return [Unknown("parallel runs commands from its input, or has options not read here")]
    if any(w is not None and "{=" in w for w in template):
        return [Unknown("parallel {= … =} runs Perl code")]
    run = joined(tuple(template), "parallel")
    return [Text(run.text + ' "$@"')] if isinstance(run, Text) and run.text is not None else [run]


_SSH = options(
    "-4 -6 -A -a -C -f -G -g -K -k -M -N -n -q -s -T -t -V -v -X -x -Y -y -B= -b= -c= -D= -E= -e= -F= "
    "-I= -i= -J= -L= -l= -m= -O= -o= -P= -p= -Q= -R= -S= -W= -w=",
    abbreviate=False,
)
_SSH_COMMAND_SETTINGS = frozenset({"proxycommand", "localcommand", "knownhostscommand", "remotecommand"})
_SSH_SETTING = re.compile(r"\s*(?P<key>[A-Za-z]+)\s*(?:=\s*|\s+)(?P<value>.*)", re.S)


def _ssh(args: tuple[Word, ...]) -> list[Run]:
    """`ssh [opts] HOST [opts] [CMD…]`: the remote shell reads CMD's words joined by spaces;
    -o ProxyCommand, LocalCommand and KnownHostsCommand run here. Without a command (and
    without -N, -W, -O, -Q, -G, -V) a remote shell reads standard input."""
    first = read_options(_SSH, args, permute=False)
    if isinstance(first, str):
        return [Unknown(f"ssh {first}")]
    if not first.operands:
        return []
    if first.operands[0] is None:
        return [Unknown("ssh's destination is not a literal")]
    terminated = "--" in args[: len(args) - len(first.operands)]
    second = Parsed({}, first.operands[1:]) if terminated else read_options(_SSH, first.operands[1:], permute=False)
    if isinstance(second, str):
        return [Unknown(f"ssh {second}")]
    settings = [*first.values.get("-o", ()), *second.values.get("-o", ())]
    runs: list[Run] = []
    for setting in settings:  # `Key=Value`, `Key Value` or `Key = Value`
        match = _SSH_SETTING.match(setting)
        if match and match["key"].lower() in _SSH_COMMAND_SETTINGS and match["value"].strip().lower() != "none":
            runs.append(Text(match["value"].strip()))
    if second.operands:
        runs.append(joined(second.operands, "ssh"))
    elif not (first.has("-N", "-W", "-O", "-Q", "-G", "-V") or second.has("-N", "-W", "-O", "-Q", "-G", "-V")):
        runs.append(Unknown(f"ssh without a command {_SHELL_READS_STDIN} on the remote host"))
    return runs


def _unknowable(why: str):
    return lambda args: [Unknown(why)]


_UTIL_LINUX_NS = (
    "-m,--mount[=] -u,--uts[=] -i,--ipc[=] -n,--net[=] -p,--pid[=] -C,--cgroup[=] -U,--user[=] -T,--time[=]"
)
_SU = (
    "-m,-p,--preserve-environment -w,--whitelist-environment= -g,--group= -G,--supp-group= -l,--login "
    "-c,--command= --session-command= -f,--fast -s,--shell= -P,--pty -h,--help -V,--version"
)

RUNNERS: dict[str, Runner] = {
    "env": Runner(
        options(
            "-i,--ignore-environment -0,--null -u,--unset= -C,--chdir= -S,--split-string= -v,--debug "
            "--list-signal-handling --block-signal[=] --default-signal[=] --ignore-signal[=] --help --version"
        ),
        _env,
    ),
    "command": Runner(options("-p -v -V")),
    "builtin": Runner(),
    "exec": Runner(options("-a= -c -l")),
    "coproc": Runner(),
    "busybox": Runner(),
    "nohup": Runner(options("--help --version")),
    "nice": Runner(options("-n,--adjustment= --help --version", numeric=True)),
    "time": Runner(
        options("-a,--append -f,--format= -o,--output= -p,--portability -q,--quiet -v,--verbose -h,--help -V,--version")
    ),
    "timeout": Runner(
        options("-k,--kill-after= -s,--signal= -v,--verbose -f,--foreground -p,--preserve-status --help --version"),
        command(after=1),
    ),
    "xargs": Runner(
        options(
            "-0,--null -a,--arg-file= -d,--delimiter= -E= -e,--eof[=] -I= -i,--replace[=] -L= -l,--max-lines[=] "
            "-n,--max-args= -o,--open-tty -P,--max-procs= -p,--interactive --process-slot-var= -r,--no-run-if-empty "
            "-s,--max-chars= --show-limits -t,--verbose -x,--exit --help --version"
        ),
        _xargs,
    ),
    "sudo": Runner(
        options(
            "-u,--user= -g,--group= -C,--close-from= -D,--chdir= -h,--host= -p,--prompt= -r,--role= -t,--type= "
            "-T,--command-timeout= -U,--other-user= -R,--chroot= -A,--askpass -b,--background -E,--preserve-env[=] "
            "-H,--set-home -i,--login -K,--remove-timestamp -k,--reset-timestamp -n,--non-interactive "
            "-P,--preserve-groups -S,--stdin -s,--shell -N,--no-update -B,--bell -l,--list -v,--validate -e,--edit "
            "-V,--version --help"
        ),
        _sudo,
        idle=("-l", "-v", "-K", "-e", "-V"),
    ),
    "doas": Runner(options("-u= -C= -n -s -L"), command(bare=f"doas -s {_SHELL_READS_STDIN}"), idle=("-C", "-L")),
    "stdbuf": Runner(options("-i,--input= -o,--output= -e,--error= --help --version")),
    "setsid": Runner(options("-c,--ctty -f,--fork -w,--wait -h,--help -V,--version")),
    "ionice": Runner(
        options("-c,--class= -n,--classdata= -p,--pid= -P,--pgid= -t,--ignore -u,--uid= -h,--help -V,--version"),
        idle=("-p", "-P", "-u"),
    ),
    "chroot": Runner(
        options("--groups= --userspec= --skip-chdir --help --version"),
        command(after=1, bare=f"chroot {_SHELL_READS_STDIN}"),
    ),
    "watch": Runner(
        options(
            "-b,--beep -c,--color -C,--no-color -d,--differences[=] -e,--errexit -g,--chgexit -q,--equexit= "
            "-n,--interval= -p,--precise -r,--no-rerun -s,--shotsfile= -t,--no-title -w,--no-wrap -x,--exec "
            "-h,--help -v,--version"
        ),
        _watch,
    ),
    "flock": Runner(
        options(
            "-s,--shared -x,-e,--exclusive -u,--unlock -n,--nb,--nonblock -w,--wait,--timeout= "
            "-E,--conflict-exit-code= -o,--close -F,--no-fork --verbose --fcntl --start= --length= -h,--help "
            "-V,--version"
        ),
        _flock,
    ),
    "taskset": Runner(
        options("-a,--all-tasks -p,--pid -c,--cpu-list -h,--help -V,--version"), command(after=1), idle=("-p",)
    ),
    "chrt": Runner(
        options(
            "-a,--all-tasks -b,--batch -d,--deadline -e,--ext -f,--fifo -i,--idle -o,--other -r,--rr "
            "-R,--reset-on-fork -T,--sched-runtime= -P,--sched-period= -D,--sched-deadline= -m,--max -p,--pid "
            "-v,--verbose -h,--help -V,--version"
        ),
        _chrt,
        idle=("-p", "-m"),
    ),
    "prlimit": Runner(
        options(
            "-c,--core[=] -d,--data[=] -e,--nice[=] -f,--fsize[=] -i,--sigpending[=] -l,--memlock[=] -m,--rss[=] "
            "-n,--nofile[=] -q,--msgqueue[=] -r,--rtprio[=] -s,--stack[=] -t,--cpu[=] -u,--nproc[=] -v,--as[=] "
            "-x,--locks[=] -y,--rttime[=] -p,--pid= -o,--output= --noheadings --raw --verbose -h,--help "
            "-V,--version"
        ),
        idle=("-p",),
    ),
    "unshare": Runner(
        options(
            f"{_UTIL_LINUX_NS} -f,--fork --map-user= --map-group= -r,--map-root-user -c,--map-current-user "
            "--map-auto --map-users= --map-groups= --kill-child[=] --mount-proc[=] --mount-binfmt[=] --propagation= "
            "--setgroups= --keep-caps -R,--root= -w,--wd= -S,--setuid= -G,--setgid= --monotonic= --boottime= "
            "-l,--load-interp= -h,--help -V,--version"
        ),
        command(bare=f"unshare {_SHELL_READS_STDIN}"),
    ),
    "nsenter": Runner(
        options(
            f"{_UTIL_LINUX_NS} -a,--all -t,--target= -S,--setuid= -G,--setgid= --preserve-credentials -r,--root[=] "
            "-w,--wd[=] -W,--wdns= -e,--env -F,--no-fork -Z,--follow-context -c,--join-cgroup --keep-caps "
            "-h,--help -V,--version"
        ),
        command(bare=f"nsenter {_SHELL_READS_STDIN}"),
    ),
    "su": Runner(options(_SU, permute=True), _su),
    "runuser": Runner(options(f"{_SU} -u,--user=", permute=True), _su),
    "setpriv": Runner(
        options(
            "-d,--dump --nnp,--no-new-privs --ambient-caps= --inh-caps= --bounding-set= --ruid= --euid= --rgid= "
            "--egid= --reuid= --regid= --clear-groups --keep-groups --init-groups --groups= --securebits= "
            "--pdeathsig= --selinux-label= --apparmor-profile= --landlock-access= --landlock-rule= "
            "--seccomp-filter= --reset-env -h,--help -V,--version"
        ),
        idle=("-d",),
    ),
    "script": Runner(
        options(
            "-I,--log-in= -O,--log-out= -B,--log-io= -T,--log-timing= -t,--timing[=] -m,--logging-format= "
            "-a,--append -c,--command= -e,--return -f,--flush --force -E,--echo= -o,--output-limit= -q,--quiet "
            "-h,--help -V,--version",
            permute=True,
        ),
        _script,
        lines=("-c",),
    ),
    "sg": Runner(custom=_sg),
    "newgrp": Runner(custom=_unknowable(f"newgrp {_SHELL_READS_STDIN}")),
    "strace": Runner(
        options(
            "-A -b= -c -C -d -D -e= -E= -f -F -h -i -I= -k -n -o= -O= -p= -P= -q -r -s= -S= -t -T -u= -U= -v -V "
            "-w -x -X= -y -Y -z -Z -a= --env= --attach= --user= --detach-on= --follow-forks --output-separately "
            "--interruptible= --trace= --signal= --status= --trace-path= --successful-only --failed-only "
            "--columns= --abbrev= --verbose= --raw= --read= --write= --kvm= --instruction-pointer --stack-traces "
            "--syscall-number --output= --output-append-mode --relative-timestamps[=] --string-limit= "
            "--syscall-times[=] --no-abbrev --const-print-style= --decode-pids= --summary-only --summary "
            "--summary-syscall-overhead= --summary-sort-by= --summary-columns= --summary-wall-clock --inject= "
            "--fault= --debug --help --seccomp-bpf --version"
        ),
        _strace,
    ),
    "ltrace": Runner(
        options(
            "-a,--align= -A= -b,--no-signals -c -C,--demangle -D,--debug= -e= -f -F,--config= -h,--help -i "
            "-l,--library= -L -n,--indent= -o,--output= -p= -r -s= -S -t -T -u= -V,--version -w,--where= -x=",
            permute=None,
        )
    ),
    "valgrind": Runner(options(single_words=True)),  # every valgrind option is one word
    "catchsegv": Runner(),
    "unbuffer": Runner(options("-p")),
    "sshpass": Runner(options("-f= -d= -p= -e[=] -P= -v -h -V")),
    "chpst": Runner(options("-v -V -P -0 -1 -2 -u= -U= -b= -e= -/= -C= -n= -l= -L= -m= -d= -o= -p= -f= -c= -r= -t=")),
    "cpulimit": Runner(
        options(
            "-p,--pid= -e,--exe= -P,--path= -b,--background -f,--foreground -l,--limit= -q,--quiet -k,--kill "
            "-m,--monitor-forks -r,--restore -v,--verbose -z,--lazy -i,--include-children -h,--help",
            permute=None,
        ),
        idle=("-p", "-e", "-P"),
    ),
    "numactl": Runner(
        options(
            "-a,--all -b,--balancing -i,--interleave= -p,--preferred= -P,--preferred-many= -m,--membind= "
            "-N,--cpunodebind= -C,--physcpubind= -l,--localalloc -s,--show -H,--hardware -S,--shm= -f,--file=",
            permute=None,
        ),
        idle=("-s", "-H", "-S", "-f"),
    ),
    "bwrap": Runner(
        options(
            "--help --version --args= --argv0= --unshare-all --share-net --unshare-user --unshare-user-try "
            "--unshare-ipc --unshare-pid --unshare-net --unshare-uts --unshare-cgroup --unshare-cgroup-try --userns= "
            "--userns2= --disable-userns --assert-userns-disabled --pidns= --uid= --gid= --hostname= --chdir= "
            "--clearenv --setenv=2 --unsetenv= --lock-file= --sync-fd= --bind=2 --bind-try=2 --dev-bind=2 "
            "--dev-bind-try=2 --ro-bind=2 --ro-bind-try=2 --bind-fd=2 --ro-bind-fd=2 --remount-ro= --exec-label= "
            "--file-label= --proc= --dev= --tmpfs= --mqueue= --dir= --file=2 --bind-data=2 --ro-bind-data=2 "
            "--symlink=2 --seccomp= --add-seccomp-fd= --block-fd= --userns-block-fd= --info-fd= --json-status-fd= "
            "--new-session --die-with-parent --as-pid-1 --cap-add= --cap-drop= --perms= --size= --chmod=2 "
            "--overlay-src= --overlay=3 --tmp-overlay= --ro-overlay= --level-prefix",
            abbreviate=False,
        ),
        _bwrap,
    ),
    "systemd-run": Runner(),  # options not listed: any option makes the line unknowable
    "firejail": Runner(),  # likewise
    "parallel": Runner(custom=_parallel),
    "ssh": Runner(custom=_ssh),
    "gdb": Runner(
        custom=_unknowable("gdb runs commands from -ex, -x and ~/.gdbinit, and its commands can run a shell")
    ),
    "expect": Runner(custom=_unknowable("expect runs Tcl code, which can run any command")),
}
