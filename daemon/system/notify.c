/* sd_notify wrappers, the sampler-driven watchdog and socket activation
 * (notify.h). */
#include "system/notify.h"

#include "system/log.h"
#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

static bool notify_failed_logged;

/* sd_notify that reports the first failure (a full or gone socket) once. */
static int notify(const char *state)
{
    int r = sd_notify(0, state);
    if (r < 0)
        rt_log_once(&notify_failed_logged, LOG_WARNING, "sd_notify(%.40s): %s", state, strerror(-r));
    return r;
}

int rt_notify_ready(void)
{
    return notify("READY=1");
}

int rt_notify_reloading(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    char buf[96];
    snprintf(buf, sizeof(buf), "RELOADING=1\nMONOTONIC_USEC=%" PRIu64,
             (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000);
    return notify(buf);
}

int rt_notify_stopping(const char *status)
{
    char buf[320];
    if (status && *status)
        snprintf(buf, sizeof(buf), "STOPPING=1\nSTATUS=%s", status);
    else
        snprintf(buf, sizeof(buf), "STOPPING=1");
    return notify(buf);
}

int rt_notify_extend_timeout(uint64_t usec)
{
    char buf[64];
    snprintf(buf, sizeof(buf), "EXTEND_TIMEOUT_USEC=%" PRIu64, usec);
    return notify(buf);
}

void rt_notify_format_status(const struct rt_notify_status *s, char *buf, size_t size)
{
    int n = snprintf(buf, size, "Tracking %u job%s; upload queue %u%s; GPUs: ", s->jobs_running,
                     s->jobs_running == 1 ? "" : "s", s->upload_queue, s->upload_failing ? " (failing)" : "");
    if (n < 0 || (size_t)n >= size)
        return;
    size_t len = (size_t)n;
    if (s->gpus_nvidia)
        len += (size_t)snprintf(buf + len, size - len, "%u NVIDIA", s->gpus_nvidia);
    if (s->gpus_amd && len < size)
        len += (size_t)snprintf(buf + len, size - len, "%s%u AMD", s->gpus_nvidia ? ", " : "", s->gpus_amd);
    if (!s->gpus_nvidia && !s->gpus_amd)
        snprintf(buf + len, size - len, "none");
}

int rt_notify_status(const struct rt_notify_status *s)
{
    static char last[256];
    char text[256], msg[sizeof(text) + 8];
    rt_notify_format_status(s, text, sizeof(text));
    if (strcmp(text, last) == 0)
        return 0;
    snprintf(msg, sizeof(msg), "STATUS=%s", text);
    int r = notify(msg);
    if (r > 0)
        rt_strlcpy(last, text, sizeof(last));
    return r;
}

void rt_watchdog_init(struct rt_watchdog *w)
{
    uint64_t usec = 0;
    w->timeout_ns = sd_watchdog_enabled(0, &usec) > 0 ? usec * 1000 : 0;
    w->stalled = false;
}

uint64_t rt_watchdog_period_ns(const struct rt_watchdog *w)
{
    return w->timeout_ns / 2;
}

bool rt_watchdog_check(struct rt_watchdog *w, uint64_t now_ns, uint64_t heartbeat_ns, uint64_t interval_ns)
{
    if (!w->timeout_ns)
        return false;
    uint64_t age = now_ns > heartbeat_ns ? now_ns - heartbeat_ns : 0;
    if (age > 2 * interval_ns + w->timeout_ns / 2) {
        if (!w->stalled)
            rt_err("sampler stalled: no tick for %.1fs; the watchdog will restart the service", (double)age / 1e9);
        w->stalled = true;
        return false;
    }
    if (w->stalled)
        rt_notice("sampler ticking again");
    w->stalled = false;
    return notify("WATCHDOG=1") > 0;
}

int rt_listen_fd_from_systemd(const char *expected_path)
{
    int n = sd_listen_fds(1);
    if (n < 0)
        rt_warn("socket activation: %s", strerror(-n));
    if (n <= 0)
        return n < 0 ? n : -ENOENT;
    int found = -1;
    for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + n; fd++) {
        if (found < 0 && sd_is_socket_unix(fd, SOCK_STREAM, 1, expected_path, 0) > 0) {
            found = fd;
            continue;
        }
        rt_warn("socket activation: closing passed fd %d, not a listening stream socket on %s", fd,
                expected_path ? expected_path : "a Unix path");
        close(fd);
    }
    if (found < 0) {
        rt_warn("socket activation: no socket for %s among %d passed; binding it myself",
                expected_path ? expected_path : "the control socket", n);
        return -ENOENT;
    }
    /* Like the daemon's own socket: not inherited, never blocking the event loop. */
    int fdflags = fcntl(found, F_GETFD), flflags = fcntl(found, F_GETFL);
    if (fdflags < 0 || flflags < 0 || fcntl(found, F_SETFD, fdflags | FD_CLOEXEC) < 0 ||
        fcntl(found, F_SETFL, flflags | O_NONBLOCK) < 0) {
        int e = errno;
        rt_err("socket activation: cannot make the passed socket non-blocking: %s", strerror(e));
        return -e;
    }
    return found;
}
