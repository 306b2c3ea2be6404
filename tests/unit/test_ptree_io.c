/* Process-tree I/O accounting on a fake /proc whose files change between
 * scans: a process whose io file cannot be read in one scan (it exited
 * between the stat and the io read) must still have what was counted of it
 * taken back when its parent reaps it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "proc/proccache.h"
#include "proc/ptree.h"
#include "rt/util.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIB (1024 * 1024)
#define ROOT 100
#define CHILD 101

static char root_dir[64];
static int proc_fd = -1;

static void put(const char *rel, const char *text)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", root_dir, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void proc_dir(int pid)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%d", root_dir, pid);
    mkdir(path, 0755);
}

/* A stat line with the fields the tracker reads (utime and cutime in clock
 * ticks); all others 0. */
static void put_stat_cpu(int pid, int ppid, char state, uint64_t starttime, uint64_t utime, uint64_t cutime)
{
    char rel[32], line[512];
    snprintf(rel, sizeof(rel), "%d/stat", pid);
    int n = snprintf(line, sizeof(line), "%d (p%d) %c %d", pid, pid, state, ppid);
    for (int field = 5; field <= 52; field++) {
        uint64_t v = field == 14 ? utime : field == 16 ? cutime : field == 20 ? 1 : field == 22 ? starttime : 0;
        n += snprintf(line + n, sizeof(line) - (size_t)n, " %" PRIu64, v);
    }
    snprintf(line + n, sizeof(line) - (size_t)n, "\n");
    put(rel, line);
}

static void put_stat(int pid, int ppid, char state, uint64_t starttime)
{
    put_stat_cpu(pid, ppid, state, starttime, 0, 0);
}

static void put_io(int pid, uint64_t write_bytes)
{
    char rel[32], text[256];
    snprintf(rel, sizeof(rel), "%d/io", pid);
    snprintf(text, sizeof(text),
             "rchar: 0\nwchar: %" PRIu64 "\nsyscr: 0\nsyscw: 0\nread_bytes: 0\nwrite_bytes: %" PRIu64
             "\ncancelled_write_bytes: 0\n",
             write_bytes, write_bytes);
    put(rel, text);
}

static void remove_file(int pid, const char *name)
{
    char rel[64];
    snprintf(rel, sizeof(rel), "%d/%s", pid, name);
    unlinkat(proc_fd, rel, 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root_dir, sizeof(root_dir), "/tmp/rt-ptree-io-XXXXXX");
    assert_non_null(mkdtemp(root_dir));
    proc_fd = open(root_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(proc_fd >= 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    close(proc_fd);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root_dir);
    assert_int_equal(system(cmd), 0);
    return 0;
}

static uint64_t scan(struct rt_ptree *t, struct rt_proc_cache *c)
{
    struct rt_ptree_result r;
    rt_proc_cache_begin_tick(c);
    rt_ptree_scan(t, c, &r);
    return r.d_write_bytes;
}

static void remove_child(void)
{
    remove_file(CHILD, "stat");
    remove_file(CHILD, "io");
    char rel[32];
    snprintf(rel, sizeof(rel), "%d", CHILD);
    unlinkat(proc_fd, rel, AT_REMOVEDIR);
}

/* A scan reads the parent, then finds its child gone: reaped after the
 * parent was read, whose counters show the child only at the next scan.
 * What was counted of the child is taken back then, not lost. */
static void test_reaped_after_its_parent_was_read(void **state)
{
    (void)state;
    uint64_t later = rt_boot_ticks() + 1000000;
    proc_dir(ROOT);
    put_stat_cpu(ROOT, 1, 'S', 10, 0, 0);
    put_io(ROOT, 0);
    struct rt_proc_cache c;
    rt_proc_cache_init(&c, proc_fd);
    struct rt_ptree t;
    assert_int_equal(rt_ptree_init(&t, &c, ROOT, 10, false, NULL), 0);
    uint64_t cpu = 0, io = 0;
    struct rt_ptree_result r;

    proc_dir(CHILD);
    put_stat_cpu(CHILD, ROOT, 'S', later, 30, 0);
    put_io(CHILD, MIB);
    rt_proc_cache_begin_tick(&c);
    rt_ptree_scan(&t, &c, &r);
    cpu += r.d_utime, io += r.d_write_bytes;
    assert_int_equal(cpu, 30);
    assert_int_equal(io, MIB);

    remove_child(); /* the parent's counters, read first, do not show it yet */
    rt_proc_cache_begin_tick(&c);
    rt_ptree_scan(&t, &c, &r);
    cpu += r.d_utime, io += r.d_write_bytes;

    put_stat_cpu(ROOT, 1, 'S', 10, 0, 40); /* its final 40 ticks, 2 MiB */
    put_io(ROOT, 2 * MIB);
    rt_proc_cache_begin_tick(&c);
    rt_ptree_scan(&t, &c, &r);
    cpu += r.d_utime, io += r.d_write_bytes;
    assert_int_equal(cpu, 40);
    assert_int_equal(io, 2 * MIB);

    rt_ptree_free(&t);
    rt_proc_cache_free(&c);
}

static void test_unreadable_io_then_reaped(void **state)
{
    (void)state;
    /* No children files in the fixture: the cache groups a full pass by ppid. */
    uint64_t later = rt_boot_ticks() + 1000000; /* the child started after tracking began */
    proc_dir(ROOT);
    put_stat(ROOT, 1, 'S', 10);
    put_io(ROOT, 0);
    struct rt_proc_cache c;
    rt_proc_cache_init(&c, proc_fd);
    struct rt_ptree t;
    assert_int_equal(rt_ptree_init(&t, &c, ROOT, 10, false, NULL), 0);

    /* The child wrote 1 MiB: counted when first seen. */
    proc_dir(CHILD);
    put_stat(CHILD, ROOT, 'S', later);
    put_io(CHILD, MIB);
    uint64_t total = scan(&t, &c);
    assert_int_equal(total, MIB);

    /* It exits: stat still there, its io file no longer readable. */
    put_stat(CHILD, ROOT, 'Z', later);
    remove_file(CHILD, "io");
    total += scan(&t, &c);
    assert_int_equal(total, MIB);

    /* Reaped: the root's counters absorb the child's 1 MiB, already counted. */
    remove_file(CHILD, "stat");
    char rel[32];
    snprintf(rel, sizeof(rel), "%d", CHILD);
    unlinkat(proc_fd, rel, AT_REMOVEDIR);
    put_io(ROOT, MIB);
    total += scan(&t, &c);
    assert_int_equal(total, MIB);

    rt_ptree_free(&t);
    rt_proc_cache_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unreadable_io_then_reaped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reaped_after_its_parent_was_read, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
