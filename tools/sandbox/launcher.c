/* The sandbox launcher: the steps between the harness and bubblewrap, then bubblewrap.
 *
 *     launcher STEP ARGS... -- PROGRAM ARGS...
 *
 * The harness starts it with vfork+exec (no Python runs in the child, and nothing of
 * the harness's memory is copied); it carries out the steps in order and executes
 * PROGRAM (bwrap) with its own environment. launcher.py is the same program in Python,
 * used where this one was not built; launcher.py's docstring lists the steps. A step that
 * fails writes "<step name>: [Errno N] <what>: <strerror>" to the error fd and exits 127.
 * Every fd a step is given is closed by it (the error fd is close-on-exec), so PROGRAM
 * inherits only what the harness passed for it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

/* The mount API's numbers are the same on every architecture (the common table). */
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig 431
#endif
#ifndef SYS_fsmount
#define SYS_fsmount 432
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#define L_MOVE_MOUNT_F_EMPTY_PATH 0x4
#define L_FSOPEN_CLOEXEC 0x1
#define L_FSCONFIG_SET_STRING 1
#define L_FSCONFIG_CMD_CREATE 6
#define L_FSMOUNT_CLOEXEC 0x1
#define L_MOUNT_ATTR_NOSUID 0x2
#define L_MOUNT_ATTR_NODEV 0x4

extern char **environ;

static int error_fd = -1;
static const char *step = "starting the sandbox";

static void fail_with(int code, const char *what) {
    char text[4096];
    int n = snprintf(text, sizeof text, "%s: [Errno %d] %s: %s", step, code, what, strerror(code));
    if (error_fd >= 0 && n > 0) {
        size_t length = (size_t)n < sizeof text ? (size_t)n : sizeof text - 1;
        ssize_t ignored = write(error_fd, text, length);
        (void)ignored;
    }
    _exit(127);
}

static void fail(const char *what) { fail_with(errno, what); }

static void check(long result, const char *what) {
    if (result < 0) fail(what);
}

static long long number(const char *text) {
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno || *end || end == text) fail_with(EINVAL, text);
    return value;
}

static int fd_of(const char *text) { return (int)number(text); }

static void write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    check(fd, path);
    if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) fail(path);
    close(fd);
}

static void private_root(void) { check(mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL), "mount /"); }

/* join FD: FD is a cgroup v1 `tasks` (or a v2 cgroup.procs); "0" moves this thread, the
 * only one. Through `tasks` that takes no global lock: cgroup.procs would first wait for
 * an RCU grace period (some 10-20 ms), to stop every thread group of the host. */
static void join(int fd, const char *what) {
    if (write(fd, "0", 1) != 1) fail(what);
    close(fd);
}

static void do_join(char **a) { join(fd_of(a[0]), "cgroup tasks"); }

/* The parent side of spawn-into: wait for the child (which becomes bwrap) and end as it
 * ended, so the harness sees bwrap's status as this process's. */
static void relay(pid_t child, pid_t harness) {
    int status;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != harness) {  /* the harness died before the line above */
        kill(child, SIGKILL);
        _exit(127);
    }
    if (syscall(SYS_close_range, 0, ~0U, 0) < 0) {  /* the pipes stay the child's alone */
        for (int fd = 0; fd < 65536; fd++) close(fd);
    }
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) _exit(127);
    }
    if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
    int sig = WTERMSIG(status);
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, sig);
    sigprocmask(SIG_UNBLOCK, &only, NULL);
    raise(sig);
    _exit(128 + sig);
}

/* spawn-into DIR_FD: go on as a child created inside the cgroup DIR_FD (cgroup v2, clone3
 * with CLONE_INTO_CGROUP: no migration, no grace period), this process relaying its end.
 * A kernel without it (before 5.7): move in through the cgroup's cgroup.procs instead. */
static void do_spawn_into(char **a) {
    int directory = fd_of(a[0]);
    pid_t harness = getppid();
    struct clone_args args;
    memset(&args, 0, sizeof args);
    args.flags = CLONE_INTO_CGROUP;
    args.exit_signal = SIGCHLD;
    args.cgroup = (uint64_t)directory;
    long pid = syscall(SYS_clone3, &args, sizeof args);
    if (pid < 0 && (errno == ENOSYS || errno == E2BIG)) {
        int procs = openat(directory, "cgroup.procs", O_WRONLY | O_CLOEXEC);
        check(procs, "cgroup.procs");
        join(procs, "cgroup.procs");
        close(directory);
        return;
    }
    check(pid, "clone3 into the call's cgroup");
    if (pid > 0) relay((pid_t)pid, harness);
    close(directory);
}

static void do_mount_ns(char **a) {
    (void)a;
    check(unshare(CLONE_NEWNS), "unshare");
    private_root();
}

static void do_user_ns(char **a) {
    char map[64];
    check(unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare");
    write_file("/proc/self/setgroups", "deny");
    snprintf(map, sizeof map, "%lld %lld 1\n", number(a[0]), number(a[0]));
    write_file("/proc/self/uid_map", map);
    snprintf(map, sizeof map, "%lld %lld 1\n", number(a[1]), number(a[1]));
    write_file("/proc/self/gid_map", map);
    private_root();
}

static void do_tmpfs(char **a) { check(mount("tmpfs", a[0], "tmpfs", 0, a[1]), a[0]); }

static void do_mkdir(char **a) { check(mkdir(a[0], 0777), a[0]); }

static void do_bind(char **a) {
    struct stat st;
    check(stat(a[0], &st), a[0]);
    if (S_ISDIR(st.st_mode)) {
        check(mkdir(a[1], 0777), a[1]);
    } else {
        int fd = open(a[1], O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        check(fd, a[1]);
        close(fd);
    }
    check(mount(a[0], a[1], NULL, MS_BIND | MS_REC, NULL), a[1]);
}

static void attach(int fd, const char *target) {
    check(syscall(SYS_move_mount, fd, "", AT_FDCWD, target, L_MOVE_MOUNT_F_EMPTY_PATH), target);
}

static void do_attach(char **a) {
    int fd = fd_of(a[0]);
    attach(fd, a[1]);
    close(fd);
}

static void tmpfs_option(int context, const char *key, const char *value) {
    check(syscall(SYS_fsconfig, context, L_FSCONFIG_SET_STRING, key, value, 0), key);
}

static void send_fd(int socket_fd, int fd) {
    char byte = 'L';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = {.msg_iov = &iov, .msg_iovlen = 1,
                             .msg_control = control.space, .msg_controllen = sizeof control.space};
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &fd, sizeof(int));
    check(sendmsg(socket_fd, &message, 0), "sending the layer");
}

/* layer SIZE INODES MODE ATIME_NS MTIME_NS PROBE_XATTR SOCKET DIR: launcher.py's make_layer. */
static void do_layer(char **a) {
    int context = (int)syscall(SYS_fsopen, "tmpfs", L_FSOPEN_CLOEXEC);
    check(context, "fsopen tmpfs");
    tmpfs_option(context, "size", a[0]);
    tmpfs_option(context, "nr_inodes", a[1]);
    tmpfs_option(context, "mode", "0700");
    check(syscall(SYS_fsconfig, context, L_FSCONFIG_CMD_CREATE, NULL, NULL, 0), "tmpfs create");
    int layer = (int)syscall(SYS_fsmount, context, L_FSMOUNT_CLOEXEC, L_MOUNT_ATTR_NOSUID | L_MOUNT_ATTR_NODEV);
    check(layer, "fsmount tmpfs");
    close(context);
    check(mkdirat(layer, "upper", 0700), "upper");
    check(mkdirat(layer, "work", 0700), "work");
    int work = openat(layer, "work", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    check(work, "work");
    if (fsetxattr(work, a[5], "1", 1, 0) < 0) {
        char what[128];
        int code = errno;
        snprintf(what, sizeof what, "tmpfs cannot hold %.*s.* xattrs", (int)strcspn(a[5], "."), a[5]);
        fail_with(code, what);
    }
    close(work);
    check(fchmodat(layer, "upper", (mode_t)number(a[2]), 0), "upper");
    long long atime = number(a[3]), mtime = number(a[4]);
    struct timespec times[2] = {{atime / 1000000000, atime % 1000000000}, {mtime / 1000000000, mtime % 1000000000}};
    check(utimensat(layer, "upper", times, 0), "upper");
    int socket_fd = fd_of(a[6]);
    send_fd(socket_fd, layer);
    close(socket_fd);
    attach(layer, a[7]);
    close(layer);
}

static void do_overlay(char **a) { check(mount("overlay", a[0], "overlay", MS_NOSUID | MS_NODEV, a[1]), a[0]); }

static void do_rlimit(char **a) {
    struct rlimit limit;
    limit.rlim_cur = limit.rlim_max = (rlim_t)number(a[1]);
    check(setrlimit((int)number(a[0]), &limit), "setrlimit");
}

static void do_ids(char **a) {
    uid_t uid = (uid_t)number(a[0]);
    gid_t gid = (gid_t)number(a[1]);
    check(setgroups(0, NULL), "setgroups");
    check(setresgid(gid, gid, gid), "setresgid");
    check(setresuid(uid, uid, uid), "setresuid");
}

static void do_error_fd(char **a) {
    error_fd = fd_of(a[0]);
    check(fcntl(error_fd, F_SETFD, FD_CLOEXEC), "error fd");
}

static void do_step(char **a) { step = a[0]; }

static const struct {
    const char *name;
    int arguments;
    void (*run)(char **);
} steps[] = {
    {"error-fd", 1, do_error_fd}, {"step", 1, do_step},       {"join", 1, do_join},
    {"spawn-into", 1, do_spawn_into},
    {"mount-ns", 0, do_mount_ns}, {"user-ns", 2, do_user_ns}, {"tmpfs", 2, do_tmpfs},
    {"mkdir", 1, do_mkdir},       {"bind", 2, do_bind},       {"attach", 2, do_attach},
    {"layer", 8, do_layer},       {"overlay", 2, do_overlay}, {"rlimit", 2, do_rlimit},
    {"ids", 2, do_ids},
};

int main(int argc, char **argv) {
    int i = 1;
    while (i < argc && strcmp(argv[i], "--") != 0) {
        size_t k = 0;
        while (k < sizeof steps / sizeof steps[0] && strcmp(steps[k].name, argv[i]) != 0) k++;
        if (k == sizeof steps / sizeof steps[0]) {  /* a harness newer than this build */
            char what[256];
            snprintf(what, sizeof what, "unknown step %.64s (a launcher built from an older launcher.c: "
                     "run pip install -e . again)", argv[i]);
            fail_with(EINVAL, what);
        }
        if (i + steps[k].arguments >= argc) fail_with(EINVAL, argv[i]);
        steps[k].run(argv + i + 1);
        i += 1 + steps[k].arguments;
    }
    if (i + 1 >= argc) fail_with(EINVAL, "no program after --");
    step = "starting bubblewrap";
    execve(argv[i + 1], argv + i + 1, environ);
    fail(argv[i + 1]);
    return 127;
}
