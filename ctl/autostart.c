/* Starting a private user daemon when none answers.
 *
 * One client at a time starts it (a lock file next to the socket); the
 * others find it running once they get the lock. The daemon's stderr is a
 * pipe to us until it serves: then it switches to its log file (--log-file),
 * and we see end-of-file. If it fails first, what it wrote there is the
 * reason, and we print it at once instead of waiting for a socket. */
#include "ctl.h"

#include "rt/paths.h"
#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define START_TIMEOUT_MS 10000
/* A reconnecting client retries and reports once: it asks for quiet. */
#define START_ERR(ctl, ...) ((ctl)->quiet ? (void)0 : (void)CTL_ERR(__VA_ARGS__))
#define LOCK_TIMEOUT_MS 30000

extern char **environ;

static bool executable(const char *p)
{
    return access(p, X_OK) == 0;
}

/* The daemon binary: $RESOURCE_TRACKERD, next to us (installed or in the
 * build tree), the configured sbin dir, then PATH. */
static bool find_daemon(char *out, size_t size)
{
    const char *env = getenv("RESOURCE_TRACKERD");
    if (env && executable(env)) {
        rt_strlcpy(out, env, size);
        return true;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        const char *dir = dirname(self);
        const char *rel[] = {"resource-trackerd", "../sbin/resource-trackerd", "../daemon/resource-trackerd"};
        for (size_t i = 0; i < RT_ARRAY_SIZE(rel); i++) {
            snprintf(out, size, "%s/%s", dir, rel[i]);
            if (executable(out))
                return true;
        }
    }
    snprintf(out, size, "%s/resource-trackerd", RT_SBINDIR);
    if (executable(out))
        return true;
    const char *path = getenv("PATH");
    if (!path)
        return false;
    char *copy = rt_xstrdup(path), *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, size, "%s/resource-trackerd", d);
        if (executable(out)) {
            free(copy);
            return true;
        }
    }
    free(copy);
    return false;
}

/* Our environment without the upload settings and job metadata: those go
 * per job over the socket; a daemon must not pick up a token from whoever
 * happened to start it. Nor the service manager's variables of a unit we
 * run in: the private daemon is not that unit's main process. */
static char **daemon_environment(void)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = rt_xcalloc(n + 1, sizeof(*env));
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "SENTINEL_", 9) != 0 && strncmp(environ[i], "TRACKER_", 8) != 0 &&
            strncmp(environ[i], "NOTIFY_SOCKET=", 14) != 0 && strncmp(environ[i], "WATCHDOG_", 9) != 0 &&
            strncmp(environ[i], "LISTEN_", 7) != 0 && strncmp(environ[i], "CREDENTIALS_DIRECTORY=", 22) != 0)
            env[k++] = environ[i];
    return env;
}

/* Start `resource-trackerd --user` detached from us, its stderr on a pipe;
 * returns the pipe's read end, or -1 after printing why. */
static int spawn_daemon(struct ctl *ctl, const char *socket_path)
{
    char bin[PATH_MAX];
    if (!find_daemon(bin, sizeof(bin))) {
        START_ERR(ctl, "no daemon is running and resource-trackerd was not found to start one");
        return -1;
    }
    int errp[2];
    if (pipe2(errp, O_CLOEXEC) < 0) {
        START_ERR(ctl, "cannot start a private daemon: %s", strerror(errno));
        return -1;
    }
    char **env = daemon_environment();
    /* Not adopted by a `run` client that is a child subreaper: the daemon
     * must not become a process of the job it tracks. */
    int subreaper = 0;
    prctl(PR_GET_CHILD_SUBREAPER, &subreaper);
    if (subreaper)
        prctl(PR_SET_CHILD_SUBREAPER, 0);
    pid_t pid = fork();
    if (pid == 0) {
        /* Double fork: the daemon is re-parented and never our zombie. */
        setsid();
        if (fork() != 0)
            _exit(0);
        int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
        dup2(nul, 0);
        dup2(nul, 1);
        dup2(errp[1], 2);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        char *argv[] = {"resource-trackerd", "--user", "--socket", (char *)socket_path, "--exit-on-idle", "30",
                        "--log-target", "stderr", "--log-file", "daemon.log", NULL};
        execve(bin, argv, env);
        dprintf(2, "resource-trackerd: cannot execute %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    int e = errno;
    free(env);
    close(errp[1]);
    if (pid < 0) {
        if (subreaper)
            prctl(PR_SET_CHILD_SUBREAPER, 1);
        START_ERR(ctl, "cannot start a private daemon: %s", strerror(e));
        close(errp[0]);
        return -1;
    }
    waitpid(pid, NULL, 0); /* the daemon has been re-parented by now */
    if (subreaper)
        prctl(PR_SET_CHILD_SUBREAPER, 1);
    return errp[0];
}

/* Read the daemon's stderr until it closes (it serves, or it died) or the
 * deadline; keeps the last part in out. True on end-of-file. */
static bool read_until_closed(int fd, char *out, size_t size, int timeout_ms)
{
    size_t len = 0;
    uint64_t deadline = rt_mono_ns() + (uint64_t)timeout_ms * 1000000;
    out[0] = '\0';
    for (;;) {
        uint64_t now = rt_mono_ns();
        if (now >= deadline)
            return false;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int r = poll(&pfd, 1, (int)((deadline - now) / 1000000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        if (len + 1 >= size) { /* keep the end: the reason comes last */
            memmove(out, out + size / 2, len - size / 2);
            len -= size / 2;
        }
        ssize_t n = read(fd, out + len, size - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            out[len] = '\0';
            return true;
        }
        len += (size_t)n;
        out[len] = '\0';
    }
}

static bool connect_to(struct ctl *ctl, struct rt_vl_client *c, int dir, const char *path)
{
    if (rt_vl_client_connect_at(c, dir, rt_path_base(path)) == 0) {
        rt_strlcpy(ctl->used_socket, path, sizeof(ctl->used_socket));
        ctl->used_private = true;
        return true;
    }
    rt_vl_client_close(c);
    return false;
}

/* The start lock, in the socket's directory (*dir: that directory, ours);
 * -1 after printing why. */
static int take_lock(struct ctl *ctl, const char *socket_path, int *dir)
{
    *dir = rt_user_socket_dir_open(socket_path, true);
    if (*dir < 0) {
        /* Taken by another user, or no home: the caller has a fallback
         * (and says so when that fails too). */
        ctl->blocked = true;
        if (*dir != -EPERM)
            START_ERR(ctl, "cannot prepare the directory of %s: %s", socket_path, strerror(-*dir));
        return -1;
    }
    int fd = openat(*dir, "start.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        START_ERR(ctl, "cannot open the start lock next to %s: %s", socket_path, strerror(errno));
        return -1;
    }
    uint64_t deadline = rt_mono_ns() + (uint64_t)LOCK_TIMEOUT_MS * 1000000;
    while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if ((errno != EWOULDBLOCK && errno != EINTR) || rt_mono_ns() >= deadline) {
            START_ERR(ctl, "cannot lock the start lock next to %s: %s", socket_path,
                      errno == EWOULDBLOCK ? "another client is still starting the daemon" : strerror(errno));
            close(fd);
            return -1;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return fd;
}

int ctl_autostart(struct ctl *ctl, struct rt_vl_client *c, const char *socket_path)
{
    int dir = -1, lock = take_lock(ctl, socket_path, &dir);
    int rc = RT_EXIT_UNREACHABLE;
    if (lock < 0)
        goto out;
    /* Another client may have started it while we waited for the lock. */
    if (connect_to(ctl, c, dir, socket_path)) {
        rc = 0;
        goto out;
    }
    int fd = spawn_daemon(ctl, socket_path);
    if (fd < 0)
        goto out;
    char text[4096];
    bool closed = read_until_closed(fd, text, sizeof(text), START_TIMEOUT_MS);
    close(fd);
    if (closed && connect_to(ctl, c, dir, socket_path)) {
        rc = 0;
        goto out;
    }
    /* Its own words, without its program-name prefix (we add ours). */
    size_t len = strlen(text);
    while (len && text[len - 1] == '\n')
        text[--len] = '\0';
    const char *last = strrchr(text, '\n');
    last = last ? last + 1 : text;
    if (strncmp(last, "resource-trackerd: ", 19) == 0)
        last += 19;
    if (strncmp(last, "error: ", 7) == 0)
        last += 7;
    if (!closed)
        START_ERR(ctl, "started a private daemon, but it does not answer at %s after %d s", socket_path,
                  START_TIMEOUT_MS / 1000);
    else if (ctl_err_holding()) /* one line: its last words are the reason */
        START_ERR(ctl, "the private daemon did not start: %s", len ? last : "it wrote nothing");
    else
        START_ERR(ctl, "the private daemon did not start%s", len ? ":" : " (it wrote nothing)");
    for (char *line = text, *next; len && !ctl->quiet && !ctl_err_holding() && line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        const char *p = strncmp(line, "resource-trackerd: ", 19) == 0 ? line + 19 : line;
        fprintf(stderr, "  %s\n", p);
    }
out:
    if (lock >= 0)
        close(lock);
    if (dir >= 0)
        close(dir);
    return rc;
}
