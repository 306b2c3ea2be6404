/* sd_notify messages against a fake NOTIFY_SOCKET (an AF_UNIX datagram
 * socket like PID 1's), the sampler-driven watchdog, and socket activation
 * with fds passed the way systemd passes them (LISTEN_FDS at fd 3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "system/log.h"
#include "system/notify.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[] = "/tmp/rt-notify-test.XXXXXX";
static char notify_path[100];
static int notify_fd = -1;

/* The next datagram; "" when none is queued. sendto() on a local datagram
 * socket has queued it by the time it returns, so no waiting is needed. */
static const char *next_message(void)
{
    static char buf[4096];
    ssize_t n = recv(notify_fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

static void test_ready_reload_stop(void **state)
{
    (void)state;
    assert_true(rt_notify_ready() > 0);
    assert_string_equal(next_message(), "READY=1");

    assert_true(rt_notify_reloading() > 0);
    const char *m = next_message();
    unsigned long long usec = 0;
    assert_int_equal(sscanf(m, "RELOADING=1\nMONOTONIC_USEC=%llu", &usec), 1);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    unsigned long long now = (unsigned long long)ts.tv_sec * 1000000 + (unsigned long long)ts.tv_nsec / 1000;
    assert_true(usec > 0 && usec <= now);

    assert_true(rt_notify_stopping("Flushing uploads") > 0);
    assert_string_equal(next_message(), "STOPPING=1\nSTATUS=Flushing uploads");
    assert_true(rt_notify_stopping(NULL) > 0);
    assert_string_equal(next_message(), "STOPPING=1");

    assert_true(rt_notify_extend_timeout(20000000) > 0);
    assert_string_equal(next_message(), "EXTEND_TIMEOUT_USEC=20000000");
    assert_string_equal(next_message(), "");
}

static void test_status(void **state)
{
    (void)state;
    char buf[256];
    struct rt_notify_status s = {.jobs_running = 1};
    rt_notify_format_status(&s, buf, sizeof(buf));
    assert_string_equal(buf, "Tracking 1 job; upload queue 0; GPUs: none");
    s = (struct rt_notify_status){.jobs_running = 3, .upload_queue = 2, .upload_failing = true,
                                  .gpus_nvidia = 2, .gpus_amd = 1};
    rt_notify_format_status(&s, buf, sizeof(buf));
    assert_string_equal(buf, "Tracking 3 jobs; upload queue 2 (failing); GPUs: 2 NVIDIA, 1 AMD");
    s.gpus_nvidia = 0;
    rt_notify_format_status(&s, buf, sizeof(buf));
    assert_string_equal(buf, "Tracking 3 jobs; upload queue 2 (failing); GPUs: 1 AMD");
    char small[12];
    rt_notify_format_status(&s, small, sizeof(small));
    assert_string_equal(small, "Tracking 3 ");

    /* Sent when it changes, not every tick. */
    s = (struct rt_notify_status){.jobs_running = 4, .gpus_nvidia = 8};
    assert_true(rt_notify_status(&s) > 0);
    assert_int_equal(rt_notify_status(&s), 0);
    assert_string_equal(next_message(), "STATUS=Tracking 4 jobs; upload queue 0; GPUs: 8 NVIDIA");
    assert_string_equal(next_message(), "");
    s.jobs_running = 5;
    assert_true(rt_notify_status(&s) > 0);
    assert_string_equal(next_message(), "STATUS=Tracking 5 jobs; upload queue 0; GPUs: 8 NVIDIA");
}

#define SEC 1000000000ULL

static void test_watchdog(void **state)
{
    (void)state;
    char pid[32];
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    setenv("WATCHDOG_USEC", "30000000", 1);
    setenv("WATCHDOG_PID", pid, 1);
    struct rt_watchdog w;
    rt_watchdog_init(&w);
    assert_int_equal(w.timeout_ns, 30 * SEC);
    assert_int_equal(rt_watchdog_period_ns(&w), 15 * SEC);

    /* interval 1 s: alive while the last tick is at most 2 + 15 s old. */
    uint64_t now = 1000 * SEC;
    assert_true(rt_watchdog_check(&w, now, now - 1 * SEC, SEC));
    assert_string_equal(next_message(), "WATCHDOG=1");
    assert_true(rt_watchdog_check(&w, now, now - 17 * SEC, SEC));
    assert_string_equal(next_message(), "WATCHDOG=1");
    assert_false(rt_watchdog_check(&w, now, now - 17 * SEC - 1, SEC));
    assert_true(w.stalled);
    assert_false(rt_watchdog_check(&w, now + SEC, now - 17 * SEC, SEC));
    assert_string_equal(next_message(), "");
    /* It ticks again (a slow NVML call that returned): feeding resumes. */
    assert_true(rt_watchdog_check(&w, now + 2 * SEC, now + 2 * SEC, SEC));
    assert_false(w.stalled);
    assert_string_equal(next_message(), "WATCHDOG=1");
    /* A long interval is not mistaken for a stall. */
    assert_true(rt_watchdog_check(&w, now, now - 130 * SEC, 60 * SEC));
    assert_string_equal(next_message(), "WATCHDOG=1");

    /* No watchdog for another pid, or none configured. */
    setenv("WATCHDOG_PID", "1", 1);
    rt_watchdog_init(&w);
    assert_int_equal(w.timeout_ns, 0);
    assert_int_equal(rt_watchdog_period_ns(&w), 0);
    assert_false(rt_watchdog_check(&w, now, now, SEC));
    unsetenv("WATCHDOG_PID");
    unsetenv("WATCHDOG_USEC");
    rt_watchdog_init(&w);
    assert_int_equal(w.timeout_ns, 0);
    assert_string_equal(next_message(), "");
}

static void test_no_notify_socket(void **state)
{
    (void)state;
    char *saved = strdup(getenv("NOTIFY_SOCKET"));
    unsetenv("NOTIFY_SOCKET");
    assert_int_equal(rt_notify_ready(), 0);
    struct rt_notify_status s = {.jobs_running = 99};
    assert_int_equal(rt_notify_status(&s), 0);
    setenv("NOTIFY_SOCKET", saved, 1);
    free(saved);
    assert_string_equal(next_message(), "");
}

/* ---- socket activation, in a child so fds 3 and 4 are ours ---- */

static int listening_socket(const char *path, int type)
{
    int fd = socket(AF_UNIX, type, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    unlink(path);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return -1;
    if (type == SOCK_STREAM && listen(fd, 4) < 0)
        return -1;
    return fd;
}

enum { EXPECT_NONE = 100 };

/* Child: put the sockets at 3, 4, … like systemd, then report which fd
 * rt_listen_fd_from_systemd chose (exit status; EXPECT_NONE for -1), after
 * checking FD_CLOEXEC, the environment and that the others were closed. */
static int activation_child(const char *expected, const char *const *paths, const int *types, int n,
                            bool other_pid)
{
    int fds[4];
    for (int i = 0; i < n; i++)
        if ((fds[i] = listening_socket(paths[i], types[i])) < 0)
            _exit(90);
    int tmp[4];
    for (int i = 0; i < n; i++)
        if ((tmp[i] = fcntl(fds[i], F_DUPFD, 10)) < 0)
            _exit(91);
    for (int i = 0; i < n; i++) {
        close(fds[i]);
        if (dup2(tmp[i], 3 + i) != 3 + i)
            _exit(92);
        close(tmp[i]);
    }
    char buf[32];
    snprintf(buf, sizeof(buf), "%d", other_pid ? 1 : (int)getpid());
    setenv("LISTEN_PID", buf, 1);
    snprintf(buf, sizeof(buf), "%d", n);
    setenv("LISTEN_FDS", buf, 1);
    rt_log_init(RT_LOG_STDERR, LOG_ERR);
    int fd = rt_listen_fd_from_systemd(expected);
    if (getenv("LISTEN_FDS") || getenv("LISTEN_PID"))
        _exit(93);
    if (fd >= 0 && (!(fcntl(fd, F_GETFD) & FD_CLOEXEC) || !(fcntl(fd, F_GETFL) & O_NONBLOCK)))
        _exit(94);
    for (int i = 0; i < n; i++)
        if (3 + i != fd && !other_pid && fcntl(3 + i, F_GETFD) != -1)
            _exit(95);
    _exit(fd >= 0 ? fd : EXPECT_NONE);
}

static int run_activation(const char *expected, const char *const *paths, const int *types, int n, bool other_pid)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        activation_child(expected, paths, types, n, other_pid);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void test_socket_activation(void **state)
{
    (void)state;
    char a[256], b[256];
    snprintf(a, sizeof(a), "%s/com.sparecores.ResourceTracker", dir);
    snprintf(b, sizeof(b), "%s/other", dir);
    const char *one[] = {a};
    const int stream[] = {SOCK_STREAM, SOCK_STREAM};
    assert_int_equal(run_activation(a, one, stream, 1, false), 3);
    assert_int_equal(run_activation(NULL, one, stream, 1, false), 3);
    /* Wrong path: refused, closed, the daemon binds its own. */
    assert_int_equal(run_activation(b, one, stream, 1, false), EXPECT_NONE);
    /* Two passed: the right one is picked, the other closed. */
    const char *two[] = {b, a};
    assert_int_equal(run_activation(a, two, stream, 2, false), 4);
    /* A datagram socket is not a control socket. */
    const int dgram[] = {SOCK_DGRAM};
    assert_int_equal(run_activation(a, one, dgram, 1, false), EXPECT_NONE);
    /* LISTEN_PID of another process: not for us, nothing touched. */
    assert_int_equal(run_activation(a, one, stream, 1, true), EXPECT_NONE);
    unlink(a);
    unlink(b);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(notify_path, sizeof(notify_path), "%s/notify", dir);
    notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", notify_path);
    if (notify_fd < 0 || bind(notify_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return -1;
    setenv("NOTIFY_SOCKET", notify_path, 1);
    rt_log_init(RT_LOG_STDERR, LOG_CRIT);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    close(notify_fd);
    unlink(notify_path);
    rmdir(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ready_reload_stop),
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_watchdog),
        cmocka_unit_test(test_no_notify_socket),
        cmocka_unit_test(test_socket_activation),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
