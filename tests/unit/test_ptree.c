/* Process-tree accounting against real processes, checked with the
 * kernel's own wait4() rusage of the tree's root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "proc/proccache.h"
#include "proc/procfs.h"
#include "proc/ptree.h"
#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int proc_fd;

static void burn_ms(long ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    volatile unsigned long x = 0;
    for (;;) {
        for (int i = 0; i < 10000; i++)
            x = x + (unsigned long)i;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
        long el = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
        if (el >= ms)
            break;
    }
    (void)x;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

struct totals {
    uint64_t u, s, rb, wb;
    uint32_t max_procs;
};

/* Fork a child that waits on a pipe, then runs body(). */
static pid_t spawn_held(void (*body)(void), int *release_fd)
{
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[1]);
        char c;
        if (read(p[0], &c, 1) != 1)
            _exit(99);
        close(p[0]);
        body();
        _exit(0);
    }
    close(p[0]);
    *release_fd = p[1];
    return pid;
}

static void account(struct rt_ptree *t, struct rt_proc_cache *c, struct totals *tot)
{
    struct rt_ptree_result r;
    rt_proc_cache_begin_tick(c);
    rt_ptree_scan(t, c, &r);
    tot->u += r.d_utime;
    tot->s += r.d_stime;
    tot->rb += r.d_read_bytes;
    tot->wb += r.d_write_bytes;
    if (r.nprocs > tot->max_procs)
        tot->max_procs = r.nprocs;
}

/* Track pid until it exits, scanning every period_ms; the last scan sees the
 * root as a zombie (WNOWAIT), like resource-trackerctl run does. Returns the
 * rusage CPU seconds of the root as reported by wait4(). */
static double track_until_exit(pid_t pid, int release_fd, long period_ms, struct totals *tot)
{
    struct rt_proc_cache c;
    rt_proc_cache_init(&c, proc_fd);
    struct rt_pstat st;
    assert_int_equal(rt_pstat_read(proc_fd, pid, &st), 0);
    struct rt_ptree t;
    assert_int_equal(rt_ptree_init(&t, &c, pid, st.starttime, true, NULL), 0);
    assert_int_equal(write(release_fd, "x", 1), 1);
    close(release_fd);
    memset(tot, 0, sizeof(*tot));
    for (;;) {
        siginfo_t si = {0};
        assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT), 0);
        account(&t, &c, tot); /* on exit this is the final scan of the zombie root */
        if (si.si_pid == pid)
            break;
        sleep_ms(period_ms);
    }
    struct rusage ru;
    int status;
    assert_int_equal(wait4(pid, &status, 0, &ru), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    rt_ptree_free(&t);
    rt_proc_cache_free(&c);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static double secs(const struct totals *t)
{
    return (double)(t->u + t->s) / (double)rt_clk_tck();
}

static void check_close(double tracked, double truth)
{
    double tol = truth * 0.03 + 0.03; /* 3 % plus three clock ticks */
    if (tracked < truth - tol || tracked > truth + tol)
        fail_msg("tracked %.3f s, wait4 %.3f s (tolerance %.3f)", tracked, truth, tol);
}

/* 200 children of ~5 ms each, forked and reaped one after another, plus
 * the parent's own work: most children live and die between two scans. */
static void many_short_children(void)
{
    for (int i = 0; i < 200; i++) {
        pid_t k = fork();
        if (k == 0) {
            burn_ms(5);
            _exit(0);
        }
        waitpid(k, NULL, 0);
    }
    burn_ms(100);
}

static void test_short_children_counted(void **state)
{
    (void)state;
    int rel;
    pid_t pid = spawn_held(many_short_children, &rel);
    struct totals tot;
    double truth = track_until_exit(pid, rel, 100, &tot);
    assert_true(truth > 0.9);
    check_close(secs(&tot), truth);
}

/* Long-lived children seen by several scans, then reaped by the root: their
 * CPU reaches the root's cutime, and must not be counted twice. */
static void reaped_long_children(void)
{
    pid_t k[2];
    for (int i = 0; i < 2; i++) {
        k[i] = fork();
        if (k[i] == 0) {
            burn_ms(400);
            _exit(0);
        }
    }
    for (int i = 0; i < 2; i++)
        waitpid(k[i], NULL, 0);
    sleep_ms(150);
}

/* A child first seen by a scan after it already burned 150 ms: all of it
 * lies inside the job, so its first interval counts (the references drop it). */
static void late_seen_child(void)
{
    sleep_ms(50); /* born after the first scan */
    pid_t k = fork();
    if (k == 0) {
        burn_ms(150);
        sleep_ms(400);
        _exit(0);
    }
    waitpid(k, NULL, 0);
}

static void test_first_interval_counted(void **state)
{
    (void)state;
    int rel;
    pid_t pid = spawn_held(late_seen_child, &rel);
    struct totals tot;
    double truth = track_until_exit(pid, rel, 250, &tot);
    assert_true(truth > 0.14);
    check_close(secs(&tot), truth);
}

static void test_reaped_children_once(void **state)
{
    (void)state;
    int rel;
    pid_t pid = spawn_held(reaped_long_children, &rel);
    struct totals tot;
    double truth = track_until_exit(pid, rel, 50, &tot);
    assert_true(truth > 0.7);
    assert_true(tot.max_procs >= 3);
    check_close(secs(&tot), truth);
}

/* A grandchild whose parent dies is re-parented out of the tree (to init or a
 * subreaper): what it burned while in the tree counts, nothing is subtracted. */
static void orphaning_child(void)
{
    pid_t k = fork();
    if (k == 0) {
        int done[2];
        if (pipe(done) < 0)
            _exit(1);
        pid_t g = fork();
        if (g == 0) {
            close(done[0]);
            burn_ms(300);
            close(done[1]); /* tell the parent the work is done */
            sleep_ms(700);  /* outlives its parent, then exits elsewhere */
            _exit(0);
        }
        close(done[1]);
        char c;
        if (read(done[0], &c, 1) < 0)
            _exit(1);
        sleep_ms(300); /* let scans see the grandchild's work while it is in the tree */
        _exit(0);
    }
    waitpid(k, NULL, 0);
    burn_ms(100);
    sleep_ms(800);
}

static void test_orphan_keeps_counted_cpu(void **state)
{
    (void)state;
    int rel;
    pid_t pid = spawn_held(orphaning_child, &rel);
    struct totals tot;
    double truth = track_until_exit(pid, rel, 50, &tot);
    /* wait4 misses the orphan's 300 ms; the tracker saw it inside the tree. */
    double extra = secs(&tot) - truth;
    if (extra < 0.26 || extra > 0.34)
        fail_msg("tracked %.3f s beyond wait4, expected the orphan's 0.3 s", extra);
}

/* Disk writes of a reaped child reach the parent's /proc/PID/io too. */
static char io_path[64];

static void writer_child(void)
{
    pid_t k = fork();
    if (k == 0) {
        int fd = open(io_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        char buf[4096];
        memset(buf, 'x', sizeof(buf));
        for (int i = 0; i < 256; i++)
            if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
                _exit(1);
        fsync(fd);
        close(fd);
        sleep_ms(200); /* seen by a scan after the write */
        _exit(0);
    }
    waitpid(k, NULL, 0);
    sleep_ms(200);
}

static void test_io_once(void **state)
{
    (void)state;
    snprintf(io_path, sizeof(io_path), "/var/tmp/rt-ptree-io-%d", (int)getpid());
    /* Some filesystems (tmpfs, overlays) account no block I/O: probe first. */
    uint64_t r0, w0, r1, w1;
    assert_int_equal(rt_pio_read(proc_fd, getpid(), &r0, &w0), 0);
    int pfd = open(io_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char blk[4096] = {0};
    assert_int_equal(write(pfd, blk, sizeof(blk)), (ssize_t)sizeof(blk));
    fsync(pfd);
    close(pfd);
    assert_int_equal(rt_pio_read(proc_fd, getpid(), &r1, &w1), 0);
    if (w1 == w0)
        skip();
    int rel;
    pid_t pid = spawn_held(writer_child, &rel);
    struct totals tot;
    track_until_exit(pid, rel, 50, &tot);
    unlink(io_path);
    /* 1 MiB written once; filesystems may add a little metadata. */
    assert_true(tot.wb >= 1024 * 1024);
    assert_true(tot.wb < 2 * 1024 * 1024);
}

static void test_reused_pid_refused(void **state)
{
    (void)state;
    struct rt_proc_cache c;
    rt_proc_cache_init(&c, proc_fd);
    struct rt_pstat st;
    assert_int_equal(rt_pstat_read(proc_fd, getpid(), &st), 0);
    struct rt_ptree t;
    /* Same PID, other start time: a different process that reused the PID. */
    assert_int_equal(rt_ptree_init(&t, &c, getpid(), st.starttime + 1, false, NULL), -ENOENT);
    assert_int_equal(rt_ptree_init(&t, &c, getpid(), st.starttime, false, NULL), 0);
    rt_ptree_free(&t);
    rt_proc_cache_free(&c);
}

static void test_stat_parse_odd_comm(void **state)
{
    (void)state;
    struct rt_pstat st;
    const char *line = "42 (a) b) (c ) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 -2 5 20 0 4 0 12345 "
                       "1000 25 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 "
                       "0 0 0 0 0 0 0 256";
    assert_int_equal(rt_pstat_parse(line, &st), 0);
    assert_int_equal(st.pid, 42);
    assert_int_equal(st.ppid, 1);
    assert_int_equal(st.state, 'S');
    assert_int_equal(st.utime, 7);
    assert_int_equal(st.stime, 3);
    assert_int_equal(st.cutime, 0); /* negative clamps to 0 */
    assert_int_equal(st.cstime, 5);
    assert_int_equal(st.num_threads, 4);
    assert_int_equal(st.starttime, 12345);
    assert_int_equal(st.rss_pages, 25);
    assert_int_equal(st.exit_code, -1); /* a zombie's only */
    char zombie[256];
    snprintf(zombie, sizeof(zombie), "%s", line);
    assert_int_equal(zombie[strlen("42 (a) b) (c ) ")], 'S');
    zombie[strlen("42 (a) b) (c ) ")] = 'Z';
    assert_int_equal(rt_pstat_parse(zombie, &st), 0);
    assert_int_equal(st.state, 'Z');
    assert_int_equal(st.rss_pages, 25);
    assert_int_equal(st.exit_code, 256);
    assert_int_equal(rt_pstat_parse("42 (x) S 1 2", &st), -EINVAL);
    assert_int_equal(rt_pstat_parse("garbage", &st), -EINVAL);
}

int main(void)
{
    proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stat_parse_odd_comm),
        cmocka_unit_test(test_reused_pid_refused),
        cmocka_unit_test(test_short_children_counted),
        cmocka_unit_test(test_first_interval_counted),
        cmocka_unit_test(test_reaped_children_once),
        cmocka_unit_test(test_orphan_keeps_counted_cpu),
        cmocka_unit_test(test_io_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
