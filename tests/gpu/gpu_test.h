/* Helpers shared by the GPU unit tests: stderr capture (the log), journal
 * records, sleeping
 * child processes with real PIDs, and polling with generous deadlines. */
#ifndef RT_GPU_TEST_H
#define RT_GPU_TEST_H

#include "system/events.h"
#include "rt/util.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Log lines go to a file while captured; they are echoed on release so
 * that nothing (a sanitizer report, a failed assertion) is hidden. One
 * capture at a time; capture_cleanup() ends it in a test's teardown when an
 * assertion jumped past capture_end(). */
struct log_capture {
    bool active;
    int saved_fd;
    char path[64];
};
static struct log_capture log_cap;

static inline void capture_start(void)
{
    fflush(stderr);
    snprintf(log_cap.path, sizeof(log_cap.path), "/tmp/rt-gpu-log-XXXXXX");
    int fd = mkstemp(log_cap.path);
    if (fd < 0)
        abort();
    log_cap.saved_fd = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
    log_cap.active = true;
}

/* The captured text (heap). */
static inline char *capture_end(void)
{
    fflush(stderr);
    dup2(log_cap.saved_fd, STDERR_FILENO);
    close(log_cap.saved_fd);
    log_cap.active = false;
    FILE *f = fopen(log_cap.path, "r");
    char *buf = rt_xcalloc(1, 1 << 16);
    size_t n = f ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    unlink(log_cap.path);
    fputs(buf, stderr);
    return buf;
}

static inline void capture_cleanup(void)
{
    if (log_cap.active)
        free(capture_end());
}

/* Journal records (GPU appeared/lost come from poller threads) collected
 * as "MESSAGE_ID=… MESSAGE=…" lines instead of going to the log. */
struct event_capture {
    pthread_mutex_t mu;
    bool active;
    char buf[1 << 14];
    size_t len;
};
static struct event_capture ev_cap = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void event_sink(const struct iovec *iov, int n, void *userdata)
{
    (void)userdata;
    const char *id = "", *msg = "";
    for (int i = 0; i < n; i++) {
        const char *f = iov[i].iov_base;
        if (strncmp(f, "MESSAGE_ID=", 11) == 0)
            id = f + 11;
        else if (strncmp(f, "MESSAGE=", 8) == 0)
            msg = f + 8;
    }
    pthread_mutex_lock(&ev_cap.mu);
    int w = snprintf(ev_cap.buf + ev_cap.len, sizeof(ev_cap.buf) - ev_cap.len, "MESSAGE_ID=%s MESSAGE=%s\n", id, msg);
    if (w > 0)
        ev_cap.len += (size_t)w < sizeof(ev_cap.buf) - ev_cap.len ? (size_t)w : sizeof(ev_cap.buf) - ev_cap.len - 1;
    pthread_mutex_unlock(&ev_cap.mu);
}

static inline void events_start(void)
{
    ev_cap.len = 0;
    ev_cap.buf[0] = '\0';
    ev_cap.active = true;
    rt_events_set_sink(event_sink, NULL);
}

/* The records so far (heap); the sink stays until events_cleanup(). */
static inline char *events_text(void)
{
    pthread_mutex_lock(&ev_cap.mu);
    char *t = rt_xstrdup(ev_cap.buf);
    pthread_mutex_unlock(&ev_cap.mu);
    return t;
}

static inline void events_cleanup(void)
{
    if (ev_cap.active)
        rt_events_set_sink(NULL, NULL);
    ev_cap.active = false;
}

static inline int count_str(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* A child that sleeps until killed, or until the test dies (a timeout). */
static inline pid_t spawn_sleeper(void)
{
    pid_t parent = getpid();
    pid_t p = fork();
    if (p == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(0);
        for (;;)
            pause();
    }
    return p;
}

static inline void reap(pid_t p)
{
    if (p > 0) {
        kill(p, SIGKILL);
        waitpid(p, NULL, 0);
    }
}

static inline void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static inline double mono_secs(void) { return (double)rt_mono_ns() / 1e9; }

#define DEADLINE_SECS 30.0

/* Until the records hold needle n times: they come from poller threads,
 * after the device they tell of is in samples again. False at the deadline. */
static inline bool events_until(const char *needle, int n)
{
    double end = mono_secs() + DEADLINE_SECS;
    for (;;) {
        char *t = events_text();
        int k = count_str(t, needle);
        free(t);
        if (k >= n)
            return true;
        if (mono_secs() > end)
            return false;
        sleep_ms(10);
    }
}

/* cmocka 1.1's assert_float_equal works in float precision. */
#define assert_double_equal(a, b, eps)                                                                          \
    do {                                                                                                       \
        double a_ = (a), b_ = (b);                                                                             \
        if (!(fabs(a_ - b_) <= (eps)))                                                                         \
            fail_msg("%s = %.12g, expected %.12g", #a, a_, b_);                                                \
    } while (0)

#endif
