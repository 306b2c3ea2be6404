/* Whose processes a job's owner may read (proc/access.h): the kernel's rule
 * for /proc/PID/io, on parsed status files and on real processes that change
 * their ids or stop being dumpable; a tree scanned with a reader leaves out
 * the I/O, PSS and GPU use of what it may not read. Run as root (it changes
 * a child's ids). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "proc/access.h"
#include "proc/ptree.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOBODY 65534

static int proc_fd;

static void test_status_ids(void **state)
{
    (void)state;
    struct rt_pcreds c;
    assert_int_equal(rt_pcreds_parse("Name:\tpasswd\nUid:\t1000\t0\t0\t0\nGid:\t100\t100\t100\t100\n", &c), 0);
    assert_int_equal(c.uid[0], 1000);
    assert_int_equal(c.uid[1], 0);
    assert_int_equal(c.uid[2], 0);
    assert_int_equal(c.gid[2], 100);
    assert_int_equal(rt_pcreds_parse("Uid:\t1000\t1000\nGid:\t1\t1\t1\t1\n", &c), -EINVAL);
    assert_int_equal(rt_pcreds_parse("Uid:\t4294967296\t1\t1\t1\nGid:\t1\t1\t1\t1\n", &c), -EINVAL);
    assert_int_equal(rt_pcreds_parse("Uid:\t1\t1\t1\t1\n", &c), -EINVAL);
    assert_int_equal(rt_pcreds_parse("", &c), -EINVAL);
}

static void test_rule(void **state)
{
    (void)state;
    struct rt_reader u = {.uid = 1000, .gid = 100}, any_gid = {.uid = 1000, .gid = RT_GID_UNKNOWN},
                     admin = {.all = true};
    struct rt_pcreds same = {{1000, 1000, 1000}, {100, 100, 100}};
    struct rt_pcreds setuid = {{1000, 0, 0}, {100, 100, 100}};
    struct rt_pcreds dropped_but_saved = {{1000, 1000, 0}, {100, 100, 100}};
    struct rt_pcreds setgid = {{1000, 1000, 1000}, {100, 5, 5}};
    assert_true(rt_reader_ids_match(&u, &same));
    assert_false(rt_reader_ids_match(&u, &setuid));
    assert_false(rt_reader_ids_match(&u, &dropped_but_saved));
    assert_false(rt_reader_ids_match(&u, &setgid));
    assert_true(rt_reader_ids_match(&any_gid, &setgid));
    assert_false(rt_reader_ids_match(&any_gid, &setuid));
    assert_true(rt_reader_ids_match(&admin, &setuid));
    assert_true(rt_reader_owns(&u, 1000, 100));
    assert_false(rt_reader_owns(&u, 0, 0)); /* not dumpable */
    assert_false(rt_reader_owns(&u, 1000, 5));
    assert_true(rt_reader_owns(&any_gid, 1000, 5));
    assert_true(rt_reader_owns(&admin, 0, 0));
}

enum { DUMPABLE, NOT_DUMPABLE, SAVED_ROOT };

/* A child as nobody, in one of those states, that writes to fd and stays. */
static pid_t child(int how, int *ready)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        if (setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
            setresuid(NOBODY, NOBODY, how == SAVED_ROOT ? 0 : NOBODY) < 0)
            _exit(2);
        /* A change of ids made it not dumpable; this is what a program that
         * drops its privileges may undo. */
        if (prctl(PR_SET_DUMPABLE, how == NOT_DUMPABLE ? 0 : 1) < 0)
            _exit(3);
        if (write(p[1], "x", 1) != 1)
            _exit(4);
        pause();
        _exit(0);
    }
    close(p[1]);
    char c;
    assert_int_equal(read(p[0], &c, 1), 1);
    *ready = p[0];
    return pid;
}

static void reap(pid_t pid, int fd)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(fd);
}

static void test_real_processes(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip(); /* it changes a child's ids */
    struct rt_reader nobody = {.uid = NOBODY, .gid = NOBODY}, other = {.uid = 1, .gid = NOBODY},
                     admin = {.all = true};
    int fd;
    pid_t pid = child(DUMPABLE, &fd);
    assert_int_equal(rt_reader_may_read(&nobody, proc_fd, pid), 1);
    assert_int_equal(rt_reader_may_read(&other, proc_fd, pid), 0);
    reap(pid, fd);

    pid = child(NOT_DUMPABLE, &fd);
    uid_t ou;
    gid_t og;
    assert_int_equal(rt_pdump_owner(proc_fd, pid, &ou, &og), 0);
    assert_int_equal(ou, 0);
    assert_int_equal(rt_reader_may_read(&nobody, proc_fd, pid), 0);
    assert_int_equal(rt_reader_may_read(&admin, proc_fd, pid), 1);
    reap(pid, fd);

    /* Dumpable again, but root is still its saved uid. */
    pid = child(SAVED_ROOT, &fd);
    assert_int_equal(rt_pdump_owner(proc_fd, pid, &ou, &og), 0);
    assert_int_equal(ou, NOBODY);
    assert_int_equal(rt_reader_may_read(&nobody, proc_fd, pid), 0);
    reap(pid, fd);

    assert_int_equal(rt_reader_may_read(&nobody, proc_fd, pid), -ENOENT);
}

/* A tree whose child the reader may not read: counted as a process with its
 * RSS for PSS, left out of the GPU attribution. */
static void test_tree_with_an_unreadable_child(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip(); /* it changes a child's ids */
    int fd;
    pid_t kid = child(NOT_DUMPABLE, &fd);
    struct rt_proc_cache c;
    rt_proc_cache_init(&c, proc_fd);
    struct rt_pstat st;
    assert_int_equal(rt_pstat_read(proc_fd, getpid(), &st), 0);
    struct rt_reader root_as_user = {.uid = 0, .gid = 0};
    struct rt_ptree t;
    rt_proc_cache_begin_tick(&c);
    assert_int_equal(rt_ptree_init(&t, &c, getpid(), st.starttime, true, &root_as_user), 0);
    struct rt_ptree_result r;
    rt_proc_cache_begin_tick(&c);
    rt_ptree_scan(&t, &c, &r);
    assert_int_equal(r.unreadable, 1); /* the child runs as nobody */
    assert_true(r.nprocs >= 2);
    bool listed = false;
    for (size_t i = 0; i < t.npids; i++)
        listed |= t.pids[i] == kid;
    assert_false(listed);
    assert_true(r.pss_bytes > 0);
    rt_ptree_free(&t);

    /* Read with root's eyes, it is one of the tree. */
    rt_proc_cache_begin_tick(&c);
    assert_int_equal(rt_ptree_init(&t, &c, getpid(), st.starttime, true, NULL), 0);
    rt_proc_cache_begin_tick(&c);
    rt_ptree_scan(&t, &c, &r);
    assert_int_equal(r.unreadable, 0);
    listed = false;
    for (size_t i = 0; i < t.npids; i++)
        listed |= t.pids[i] == kid;
    assert_true(listed);
    rt_ptree_free(&t);
    rt_proc_cache_free(&c);
    reap(kid, fd);
}

int main(void)
{
    proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_ids),
        cmocka_unit_test(test_rule),
        cmocka_unit_test(test_real_processes),
        cmocka_unit_test(test_tree_with_an_unreadable_child),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    close(proc_fd);
    return rc;
}
