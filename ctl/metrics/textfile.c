/* node_exporter's textfile collector reads *.prom files in a directory: the
 * file is replaced by rename(2) so a scrape never sees half of it, and it is
 * removed when the daemon does not answer or we stop (no stale figures). */
#include "metrics/metrics.h"

#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

static int write_atomic(const char *path, const char *text, size_t len, mode_t mode)
{
    char *copy = rt_xstrdup(path);
    char *base = rt_xstrdup(basename(copy));
    /* A dot file without the .prom suffix: the collector skips it. */
    char *tmp = rt_xasprintf("%s/.%s.XXXXXX", dirname(copy), base);
    int rc = -1;
    int fd = mkstemp(tmp);
    if (fd < 0) {
        CTL_ERR("cannot create a file next to %s: %s", path, strerror(errno));
        goto out;
    }
    for (size_t off = 0; off < len;) {
        ssize_t n = write(fd, text + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            CTL_ERR("cannot write %s: %s", tmp, strerror(errno));
            close(fd);
            unlink(tmp);
            goto out;
        }
        off += (size_t)n;
    }
    if (fchmod(fd, mode) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
        CTL_ERR("cannot replace %s: %s", path, strerror(errno));
        unlink(tmp);
        goto out;
    }
    rc = 0;
out:
    free(tmp);
    free(base);
    free(copy);
    return rc;
}

static int refresh(const struct ctl_metrics *m, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    int rc = ctl_metrics_collect(m, &text, &len);
    /* Jobs are for the writer's user and group (node_exporter's, docs/metrics.md),
     * not every local user: the host alone is (as /proc is). */
    mode_t mode = m->publish == CTL_PUBLISH_NONE ? 0644 : 0640;
    if (rc == 0 && write_atomic(path, text, len, mode) < 0)
        rc = RT_EXIT_FAILURE;
    if (rc && unlink(path) < 0 && errno != ENOENT)
        CTL_ERR("cannot remove %s: %s", path, strerror(errno));
    free(text);
    return rc;
}

int ctl_metrics_textfile(const struct ctl_metrics *m, const char *path, double interval_secs)
{
    if (interval_secs <= 0)
        return refresh(m, path);
    struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: the sleep ends */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    uint64_t step = (uint64_t)(interval_secs * 1e9), next = rt_mono_ns();
    while (!stop_signal) {
        refresh(m, path); /* a failure was reported; the next round tries again */
        next += step;
        uint64_t now = rt_mono_ns();
        if (next <= now) /* a slow round: no catch-up burst */
            next = now + step;
        struct timespec ts = {.tv_sec = (time_t)(next / 1000000000u), .tv_nsec = (long)(next % 1000000000u)};
        while (!stop_signal && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
    }
    if (unlink(path) < 0 && errno != ENOENT)
        CTL_ERR("cannot remove %s: %s", path, strerror(errno));
    return RT_EXIT_OK;
}
