/* The PSS read policy (daemon/proc/pss.h): when a read is due, how the value
 * follows RSS in between, and that a tree scan reuses a slow read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "proc/proccache.h"
#include "proc/procfs.h"
#include "proc/pss.h"
#include "proc/ptree.h"
#include "rt/util.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MS 1000000ULL
#define SEC 1000000000ULL
#define MIB (1024ULL * 1024)

static void test_due(void **state)
{
    (void)state;
    const uint64_t rss = 40 * MIB, more = 41 * MIB;
    struct rt_pss p = {0};
    assert_true(rt_pss_due(&p, 5 * SEC, 0, rss)); /* never read */
    rt_pss_update(&p, true, 10 * MIB, rss, 100 * SEC, 1 * MS, 2);
    /* A 1 ms read: reused for 5 s (5000 ×), for 0.5 s once the children changed. */
    assert_false(rt_pss_due(&p, 100 * SEC + 4999 * MS, 2, more));
    assert_true(rt_pss_due(&p, 105 * SEC, 2, more));
    assert_false(rt_pss_due(&p, 100 * SEC + 499 * MS, 3, rss));
    assert_true(rt_pss_due(&p, 100 * SEC + 500 * MS, 1, rss));
    assert_true(rt_pss_due(&p, 99 * SEC, 2, rss)); /* clock went back: read */
    /* Past the spacing with RSS and children unchanged: every 10 s only. */
    assert_false(rt_pss_due(&p, 109 * SEC, 2, rss));
    assert_true(rt_pss_due(&p, 110 * SEC, 2, rss));
    /* A 1 s read: 5000 s would be too stale; 60 s at most. */
    rt_pss_update(&p, true, 10 * MIB, rss, 100 * SEC, 1 * SEC, 2);
    assert_false(rt_pss_due(&p, 159 * SEC, 3, more));
    assert_true(rt_pss_due(&p, 160 * SEC, 2, rss));
    /* A free read (cost 0): due whenever RSS or the children change. */
    rt_pss_update(&p, true, 10 * MIB, rss, 100 * SEC, 0, 2);
    assert_false(rt_pss_due(&p, 100 * SEC, 2, rss));
    assert_true(rt_pss_due(&p, 100 * SEC, 2, more));
    assert_true(rt_pss_due(&p, 100 * SEC, 0, rss));
}

static void test_estimate(void **state)
{
    (void)state;
    struct rt_pss p = {0};
    assert_int_equal(rt_pss_estimate(&p, 40 * MIB), 0);
    rt_pss_update(&p, true, 10 * MIB, 40 * MIB, SEC, MS, 0);
    assert_int_equal(rt_pss_estimate(&p, 40 * MIB), 10 * MIB);
    assert_int_equal(rt_pss_estimate(&p, 50 * MIB), 20 * MIB); /* private growth */
    assert_int_equal(rt_pss_estimate(&p, 35 * MIB), 5 * MIB);
    assert_int_equal(rt_pss_estimate(&p, 25 * MIB), 0);        /* clamped at 0 */
    rt_pss_update(&p, true, 40 * MIB, 40 * MIB, SEC, MS, 0);
    assert_int_equal(rt_pss_estimate(&p, 100 * MIB), 100 * MIB);
    assert_int_equal(rt_pss_estimate(&p, 1 * MIB), 1 * MIB);   /* never above RSS */
    rt_pss_update(&p, false, 7 * MIB, 40 * MIB, SEC, MS, 0);   /* unreadable */
    assert_int_equal(rt_pss_estimate(&p, 40 * MIB), 0);
}

/* A child with `mib` MiB of touched 4 KiB pages; each byte written to cmd
 * makes it touch `grow` MiB more, and it answers on ack. */
static pid_t spawn_memory(size_t mib, size_t grow, int *cmd, int *ack)
{
    int c[2], a[2];
    assert_int_equal(pipe2(c, O_CLOEXEC), 0);
    assert_int_equal(pipe2(a, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(c[1]);
        close(a[0]);
        size_t len = (mib + 4 * grow) * MIB;
        char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            _exit(90);
        madvise(m, len, MADV_NOHUGEPAGE); /* page tables a PSS read must walk */
        size_t touched = mib * MIB;
        memset(m, 1, touched);
        char x;
        do {
            if (write(a[1], "r", 1) != 1)
                _exit(91);
            if (read(c[0], &x, 1) != 1)
                _exit(0);
            memset(m + touched, 1, grow * MIB);
            touched += grow * MIB;
        } while (touched + grow * MIB <= len);
        _exit(0);
    }
    close(c[0]);
    close(a[1]);
    *cmd = c[1];
    *ack = a[0];
    char x;
    assert_int_equal(read(*ack, &x, 1), 1);
    return pid;
}

/* A large process: the read at the start is reused by the next scans, which
 * add the RSS growth to it. */
static void test_tree_reuses_slow_read(void **state)
{
    (void)state;
    int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(proc_fd >= 0);
    int cmd, ack;
    pid_t pid = spawn_memory(256, 32, &cmd, &ack);
    struct rt_proc_cache c;
    rt_proc_cache_init(&c, proc_fd);
    struct rt_pstat st;
    assert_int_equal(rt_pstat_read(proc_fd, pid, &st), 0);
    struct rt_ptree t;
    assert_int_equal(rt_ptree_init(&t, &c, pid, st.starttime, true, NULL), 0);
    assert_int_equal(t.cur.n, 1);
    struct rt_pss first = t.cur.v[0].pss;
    assert_true(first.valid && first.ok);
    assert_true(first.pss >= 256 * MIB);
    /* 256 MiB of 4 KiB pages take far more than 100 µs to walk: ≥ 0.5 s reuse. */
    assert_true(first.cost_ns > 100000);

    struct rt_ptree_result r;
    rt_proc_cache_begin_tick(&c);
    rt_ptree_scan(&t, &c, &r);
    assert_int_equal(r.pss_reads, 0);
    assert_int_equal(r.pss_bytes, rt_pss_estimate(&first, r.rss_bytes));

    char x;
    assert_int_equal(write(cmd, "g", 1), 1);
    assert_int_equal(read(ack, &x, 1), 1);
    rt_proc_cache_begin_tick(&c);
    rt_ptree_scan(&t, &c, &r);
    assert_int_equal(r.pss_reads, 0);
    /* The RSS in stat is a per-CPU counter read without folding in what each
     * CPU has not yet added (up to percpu_counter_batch pages each, since
     * Linux 6.2): the growth shows up to that much short. */
    long cpus = sysconf(_SC_NPROCESSORS_CONF);
    uint64_t batch = (uint64_t)(cpus * 2 > 32 ? cpus * 2 : 32);
    assert_true(r.rss_bytes + (uint64_t)cpus * batch * (uint64_t)rt_page_size() >= first.rss + 32 * MIB);
    assert_int_equal(r.pss_bytes, first.pss + (r.rss_bytes - first.rss));

    close(cmd);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    close(ack);
    rt_ptree_free(&t);
    rt_proc_cache_free(&c);
    close(proc_fd);
}

/* A small process: once its (cheap) spacing has passed, it is read again
 * only when its RSS changed, not while it idles. */
static void test_tree_idle_small_process(void **state)
{
    (void)state;
    int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int cmd, ack;
    pid_t pid = spawn_memory(4, 4, &cmd, &ack);
    struct rt_proc_cache c;
    rt_proc_cache_init(&c, proc_fd);
    struct rt_pstat st;
    assert_int_equal(rt_pstat_read(proc_fd, pid, &st), 0);
    struct rt_ptree t;
    assert_int_equal(rt_ptree_init(&t, &c, pid, st.starttime, true, NULL), 0);
    struct rt_pss first = t.cur.v[0].pss;
    uint64_t spacing = first.cost_ns * RT_PSS_SPACING;
    assert_true(spacing < 5 * SEC); /* a 4 MiB process reads in well under 1 ms */
    struct timespec ts = {(time_t)((spacing + 20 * MS) / SEC), (long)((spacing + 20 * MS) % SEC)};
    nanosleep(&ts, NULL);

    struct rt_ptree_result r;
    rt_proc_cache_begin_tick(&c);
    rt_ptree_scan(&t, &c, &r);
    assert_int_equal(r.pss_reads, 0);
    assert_int_equal(r.pss_bytes, first.pss);

    char x;
    assert_int_equal(write(cmd, "g", 1), 1);
    assert_int_equal(read(ack, &x, 1), 1);
    rt_proc_cache_begin_tick(&c);
    rt_ptree_scan(&t, &c, &r);
    assert_int_equal(r.pss_reads, 1);
    /* 4 MiB more private memory; shared pages' share may shrink meanwhile as
     * other processes map the same libraries, so allow a MiB of that. */
    assert_true(r.pss_bytes >= first.pss + 3 * MIB);

    close(cmd);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    close(ack);
    rt_ptree_free(&t);
    rt_proc_cache_free(&c);
    close(proc_fd);
}

/* Without PSS the files are never read. */
static void test_tree_without_pss(void **state)
{
    (void)state;
    int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct rt_proc_cache c;
    rt_proc_cache_init(&c, proc_fd);
    struct rt_pstat st;
    assert_int_equal(rt_pstat_read(proc_fd, getpid(), &st), 0);
    struct rt_ptree t;
    assert_int_equal(rt_ptree_init(&t, &c, getpid(), st.starttime, false, NULL), 0);
    struct rt_ptree_result r;
    rt_proc_cache_begin_tick(&c);
    rt_ptree_scan(&t, &c, &r);
    assert_int_equal(r.pss_reads, 0);
    assert_int_equal(r.pss_bytes, 0);
    assert_true(r.rss_bytes > 0);
    rt_ptree_free(&t);
    rt_proc_cache_free(&c);
    close(proc_fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_due),
        cmocka_unit_test(test_estimate),
        cmocka_unit_test(test_tree_reuses_slow_read),
        cmocka_unit_test(test_tree_idle_small_process),
        cmocka_unit_test(test_tree_without_pss),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
