/* The command of `run`: forked held, released once the job is registered,
 * its signals forwarded, its orphans adopted and reaped. */
#include "run/run.h"

#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

int run_child_spawn(struct run_child *ch, char **cmd)
{
    *ch = (struct run_child){.pid = -1, .sfd = -1, .go_w = -1, .execerr_r = -1};
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    for (size_t i = 0; i < RT_ARRAY_SIZE(forwarded); i++)
        sigaddset(&mask, forwarded[i]);
    sigprocmask(SIG_BLOCK, &mask, &ch->old_mask);
    int go[2], execerr[2];
    ch->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (ch->sfd < 0 || pipe2(go, O_CLOEXEC) < 0)
        return -errno;
    if (pipe2(execerr, O_CLOEXEC | O_NONBLOCK) < 0) { /* read once the command ended */
        int e = errno;
        close(go[0]);
        close(go[1]);
        return -e;
    }
    /* Orphans of the command's processes come to us, not to init: they stay
     * in the job. Not inherited by the command itself. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    ch->pid = fork();
    if (ch->pid < 0) {
        int e = errno;
        close(go[0]);
        close(go[1]);
        close(execerr[0]);
        close(execerr[1]);
        return -e;
    }
    if (ch->pid == 0) {
        /* Wait for the go: the job is registered before the command runs. */
        sigprocmask(SIG_SETMASK, &ch->old_mask, NULL);
        signal(SIGPIPE, SIG_DFL);
        close(go[1]);
        close(execerr[0]);
        /* "x", then the variables to set ("NAME=VALUE\0" each), to the end. */
        char go_buf[4096];
        size_t got = 0;
        for (ssize_t n; got < sizeof(go_buf) - 1 && (n = read(go[0], go_buf + got, sizeof(go_buf) - 1 - got)) > 0;)
            got += (size_t)n;
        if (got < 1 || go_buf[0] != 'x')
            _exit(127);
        go_buf[got] = '\0';
        for (char *v = go_buf + 1; v < go_buf + got; v += strlen(v) + 1) {
            char *eq = strchr(v, '=');
            if (eq) {
                *eq = '\0';
                setenv(v, eq + 1, 1);
            }
        }
        execvp(cmd[0], cmd);
        int e = errno;
        if (write(execerr[1], &e, sizeof(e)) < 0)
            _exit(127);
        _exit(e == ENOENT ? 127 : 126);
    }
    close(go[0]);
    close(execerr[1]);
    ch->go_w = go[1];
    ch->execerr_r = execerr[0];
    return 0;
}

void run_child_release(struct run_child *ch, const char *env, size_t env_len)
{
    char buf[4096];
    if (env_len > sizeof(buf) - 1)
        env_len = 0; /* cannot happen: a few GPU ids */
    buf[0] = 'x';
    if (env_len)
        memcpy(buf + 1, env, env_len);
    /* One write under PIPE_BUF: the child reads it whole. */
    if (write(ch->go_w, buf, 1 + env_len) != (ssize_t)(1 + env_len))
        CTL_ERR("cannot release the command: %s", strerror(errno));
    close(ch->go_w);
    ch->go_w = -1;
}

void run_child_exec_result(struct run_child *ch, const char *name)
{
    ssize_t n = read(ch->execerr_r, &ch->exec_errno, sizeof(ch->exec_errno));
    if (n == sizeof(ch->exec_errno))
        CTL_ERR("cannot run %s: %s", name, strerror(ch->exec_errno));
    else
        ch->exec_errno = 0;
}

/* The command's peak between samples, while it is a zombie: the kernel's
 * waitid with WNOWAIT reports its rusage (its own and what it waited for)
 * without reaping it; the orphans we reaped are in ours. */
static void note_max_rss(struct run_child *ch)
{
    siginfo_t w;
    struct rusage zombie = {0}, reaped = {0};
    if (syscall(SYS_waitid, P_PID, ch->pid, &w, WEXITED | WNOWAIT, &zombie) < 0)
        zombie.ru_maxrss = 0;
    getrusage(RUSAGE_CHILDREN, &reaped);
    long kib = zombie.ru_maxrss > reaped.ru_maxrss ? zombie.ru_maxrss : reaped.ru_maxrss;
    ch->max_rss_bytes = kib > 0 ? (uint64_t)kib * 1024 : 0;
}

/* Reap the ended children other than the command (adopted orphans); true
 * when the command itself has ended (si filled, left a zombie). */
static bool reap_orphans(struct run_child *ch, siginfo_t *si)
{
    for (;;) {
        siginfo_t w = {0};
        if (waitid(P_ALL, 0, &w, WEXITED | WNOHANG | WNOWAIT) < 0 || w.si_pid == 0)
            return false;
        if (w.si_pid == ch->pid) {
            *si = w;
            note_max_rss(ch);
            return true; /* the daemon's final sample still needs the zombie */
        }
        waitpid(w.si_pid, NULL, 0);
    }
}

bool run_child_signals(struct run_child *ch, siginfo_t *si)
{
    struct signalfd_siginfo fi;
    while (read(ch->sfd, &fi, sizeof(fi)) == sizeof(fi)) {
        /* Terminal signals (SI_KERNEL) reached the command through the
         * process group already; forward only those sent to us. */
        if (fi.ssi_signo != SIGCHLD && (int)fi.ssi_code <= 0)
            kill(ch->pid, (int)fi.ssi_signo);
    }
    return reap_orphans(ch, si);
}

void run_child_abort(struct run_child *ch)
{
    kill(ch->pid, SIGKILL);
    waitpid(ch->pid, NULL, 0);
    ch->pid = -1;
}

int run_child_reap(struct run_child *ch)
{
    int status = 0;
    waitpid(ch->pid, &status, 0);
    siginfo_t si;
    reap_orphans(ch, &si); /* zombies that waited behind ours */
    if (ch->exec_errno)
        return ch->exec_errno == ENOENT ? 127 : 126;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

void run_child_note_orphans(void)
{
    char path[64], buf[4096], pids[128] = "";
    snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
    if (rt_read_file_at(AT_FDCWD, path, buf, sizeof(buf)) <= 0)
        return;
    size_t count = 0, len = 0;
    for (char *save = NULL, *t = strtok_r(buf, " \n", &save); t; t = strtok_r(NULL, " \n", &save), count++)
        if (count <= 8) /* pids are at most 7 digits: 8 fit */
            len += (size_t)snprintf(pids + len, sizeof(pids) - len, "%s%s", count ? " " : "", count < 8 ? t : "...");
    if (count)
        CTL_ERR("note: %zu process%s left behind by the command still run%s (pid %s); %s no longer tracked",
                count, count == 1 ? "" : "es", count == 1 ? "s" : "", pids, count == 1 ? "it is" : "they are");
}

void run_child_close(struct run_child *ch)
{
    if (ch->sfd >= 0)
        close(ch->sfd);
    if (ch->go_w >= 0)
        close(ch->go_w);
    if (ch->execerr_r >= 0)
        close(ch->execerr_r);
    ch->sfd = ch->go_w = ch->execerr_r = -1;
}
