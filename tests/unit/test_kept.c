/* The tracked processes' files kept open between ticks (proc/kept.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "proc/kept.h"
#include "proc/procfs.h"

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *de; (de = readdir(d));)
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

static pid_t sleeper(void)
{
    pid_t p = fork();
    if (p == 0) {
        pause();
        _exit(0);
    }
    return p;
}

/* Up to RT_KEPT_PROCS processes keep their files; more are read all the
 * same; files unread for RT_KEPT_IDLE_SCANS scans are closed. */
static void test_budget_and_idle(void **state)
{
    (void)state;
    int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    enum { N = RT_KEPT_PROCS + 2 };
    pid_t kids[N];
    for (int i = 0; i < N; i++)
        kids[i] = sleeper();
    int before = open_fds();
    struct rt_kept_procs k;
    rt_kept_procs_init(&k);
    rt_kept_procs_scan(&k);
    char buf[1024];
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < N; i++) {
            struct rt_pstat st;
            assert_true(rt_kept_procs_read(&k, proc, kids[i], RT_KEPT_STAT, buf, sizeof(buf)) > 0);
            assert_int_equal(rt_pstat_parse(buf, &st), 0);
            assert_int_equal(st.pid, kids[i]);
            assert_true(rt_kept_procs_read(&k, proc, kids[i], RT_KEPT_IO, buf, sizeof(buf)) > 0);
        }
    assert_int_equal(k.n, RT_KEPT_PROCS);
    assert_int_equal(open_fds(), before + 2 * RT_KEPT_PROCS);
    for (int i = 0; i <= RT_KEPT_IDLE_SCANS; i++) {
        assert_true(rt_kept_procs_read(&k, proc, kids[0], RT_KEPT_STAT, buf, sizeof(buf)) > 0);
        rt_kept_procs_scan(&k);
    }
    assert_int_equal(k.n, 1); /* the one read on each scan */
    assert_int_equal(open_fds(), before + 2);
    /* Gone: an error, then not kept. */
    kill(kids[0], SIGKILL);
    waitpid(kids[0], NULL, 0);
    assert_int_equal(rt_kept_procs_read(&k, proc, kids[0], RT_KEPT_STAT, buf, sizeof(buf)), -ENOENT);
    rt_kept_procs_free(&k);
    assert_int_equal(open_fds(), before);
    for (int i = 1; i < N; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    close(proc);
}

/* A kept children file follows the process's children as they come and go. */
static void test_children_fresh(void **state)
{
    (void)state;
    int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct rt_kept_procs k;
    rt_kept_procs_init(&k);
    char buf[4096], want[32];
    pid_t self = getpid();
    assert_true(rt_kept_procs_read(&k, proc, self, RT_KEPT_KIDS, buf, sizeof(buf)) >= 0);
    pid_t kid = sleeper();
    assert_true(rt_kept_procs_read(&k, proc, self, RT_KEPT_KIDS, buf, sizeof(buf)) > 0);
    snprintf(want, sizeof(want), "%d ", (int)kid);
    assert_non_null(strstr(buf, want));
    int32_t *list = NULL;
    size_t n = 0, cap = 0;
    rt_pchildren_parse(buf, &list, &n, &cap);
    assert_true(n >= 1);
    assert_int_equal(list[n - 1], kid);
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    assert_true(rt_kept_procs_read(&k, proc, self, RT_KEPT_KIDS, buf, sizeof(buf)) >= 0);
    assert_null(strstr(buf, want));
    free(list);
    rt_kept_procs_free(&k);
    close(proc);
}

/* More children than a page holds: a kept read of a file made a record at
 * a time goes on past the kernel's first page, which ends short of what was
 * asked (the read that says 0 is skipped only well short of a page). */
static void test_children_past_a_page(void **state)
{
    (void)state;
    enum { KIDS = 1200 }; /* "PID " each: 5 to 8 bytes, past 4096 */
    int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct rt_kept_procs k;
    rt_kept_procs_init(&k);
    pid_t kids[KIDS];
    for (int i = 0; i < KIDS; i++)
        kids[i] = sleeper();
    static char buf[16384];
    ssize_t len = rt_kept_procs_read(&k, proc, getpid(), RT_KEPT_KIDS, buf, sizeof(buf));
    assert_true(len > 4096);
    int32_t *list = NULL;
    size_t n = 0, cap = 0;
    rt_pchildren_parse(buf, &list, &n, &cap);
    assert_int_equal(n, KIDS);
    for (int i = 0; i < KIDS; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    assert_int_equal(rt_kept_procs_read(&k, proc, getpid(), RT_KEPT_KIDS, buf, sizeof(buf)), 0);
    free(list);
    rt_kept_procs_free(&k);
    close(proc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget_and_idle),
        cmocka_unit_test(test_children_fresh),
        cmocka_unit_test(test_children_past_a_page),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
