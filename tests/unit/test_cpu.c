/* CPU collector against tests/fixtures/host with exact expected numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "collect/cpu.h"
#include "fixture.h"

#include <unistd.h>

#define EPS 1e-9

/* The fixture's /proc/stat advanced by: user +150, nice +50, system +100,
 * idle +150, iowait +50, guest +100 (inside user, so not added to total).
 * Δtotal 500, Δidle 200 → 300 busy ticks over 2 cores.
 * cpu0: Δtotal 250, Δidle 75 → 70 %; cpu1: Δtotal 250, Δidle 125 → 50 %. */
static const char STAT2[] =
    "cpu  10150 550 3100 80150 1050 100 200 300 500 50\n"
    "cpu0 5100 275 1550 40050 525 50 100 150 250 25\n"
    "cpu1 5050 275 1550 40100 525 50 100 150 250 25\n"
    "intr 1000 0 0 0\n"
    "ctxt 5100\n";

struct env {
    char *dir;
    struct rt_roots roots;
    struct rt_sample s;
};

static struct env *env_new(void)
{
    struct env *e = rt_xcalloc(1, sizeof(*e));
    e->dir = fx_copy("host");
    fx_roots(&e->roots, e->dir);
    rt_sample_init(&e->s);
    fx_now_ns = 1000000000ULL;
    return e;
}

static void env_free(struct env *e)
{
    rt_sample_free(&e->s);
    rt_roots_close(&e->roots);
    fx_rmtree(e->dir);
    free(e);
}

static double tck(void)
{
    return (double)sysconf(_SC_CLK_TCK);
}

static void test_interval(void **state)
{
    (void)state;
    struct env *e = env_new();
    struct rt_cpu_collector *c = rt_cpu_collector_new_hooks(&e->roots, &fx_hooks);
    fx_write(e->dir, "proc/stat", STAT2);
    fx_write(e->dir, "sys/fs/cgroup/cpu.stat", "usage_usec 6500000\nuser_usec 4000000\n");
    fx_now_ns += 2000000000ULL;
    rt_cpu_collect(c, &e->s);

    const struct rt_cpu *cpu = &e->s.cpu;
    assert_int_equal(cpu->n_cores, 2);
    assert_float_equal(cpu->per_core_pct[0], 70.0, EPS);
    assert_float_equal(cpu->per_core_pct[1], 50.0, EPS);
    assert_float_equal(cpu->utilization_pct, 1.2, EPS);
    assert_float_equal(cpu->utime_secs, 200 / tck(), EPS);
    assert_float_equal(cpu->stime_secs, 100 / tck(), EPS);
    assert_int_equal(cpu->process_count, 3); /* 1, 42, 4242; not 12ab, self, net */
    assert_true(cpu->has_cgroup);
    assert_float_equal(cpu->cgroup_usage_secs, 1.5, EPS);
    assert_float_equal(cpu->cgroup_utilization_pct, 0.75, EPS);

    assert_int_equal(rt_cpu_collector_ncores(c), 2);
    double busy = -1;
    assert_true(rt_cpu_collector_busy_secs(c, &busy));
    assert_float_equal(busy, 300 / tck(), EPS);
    assert_float_equal(rt_cpu_collector_elapsed_secs(c), 2.0, EPS);
    assert_float_equal(rt_cpu_collector_effective_cores(c), 2.0, EPS);

    /* Nothing moved since: everything is 0 and there is no busy figure. */
    rt_sample_reset(&e->s);
    fx_now_ns += 1000000000ULL;
    rt_cpu_collect(c, &e->s);
    assert_float_equal(e->s.cpu.utilization_pct, 0, 0);
    assert_float_equal(e->s.cpu.per_core_pct[0], 0, 0);
    assert_float_equal(e->s.cpu.cgroup_usage_secs, 0, 0);
    assert_false(rt_cpu_collector_busy_secs(c, &busy));

    rt_cpu_collector_free(c);
    env_free(e);
}

static void test_backwards_saturate(void **state)
{
    (void)state;
    struct env *e = env_new();
    struct rt_cpu_collector *c = rt_cpu_collector_new_hooks(&e->roots, &fx_hooks);
    fx_write(e->dir, "proc/stat",
             "cpu  9000 400 2000 70000 900 100 200 300 400 50\n"
             "cpu0 4000 250 1500 40000 500 50 100 150 200 25\n"
             "cpu1 5000 250 1500 40000 500 50 100 150 200 25\n");
    fx_write(e->dir, "sys/fs/cgroup/cpu.stat", "usage_usec 100\n");
    fx_now_ns += 1000000000ULL;
    rt_cpu_collect(c, &e->s);
    const struct rt_cpu *cpu = &e->s.cpu;
    assert_float_equal(cpu->utilization_pct, 0, 0);
    assert_float_equal(cpu->utime_secs, 0, 0);
    assert_float_equal(cpu->stime_secs, 0, 0);
    assert_float_equal(cpu->per_core_pct[0], 0, 0);
    assert_float_equal(cpu->per_core_pct[1], 0, 0);
    assert_float_equal(cpu->cgroup_usage_secs, 0, 0);
    assert_float_equal(cpu->cgroup_utilization_pct, 0, 0);
    rt_cpu_collector_free(c);
    env_free(e);
}

/* cpu1 goes offline and cpu2 comes online: cores are matched by number. */
static void test_hotplug(void **state)
{
    (void)state;
    struct env *e = env_new();
    struct rt_cpu_collector *c = rt_cpu_collector_new_hooks(&e->roots, &fx_hooks);
    fx_write(e->dir, "proc/stat",
             "cpu  10150 550 3100 80150 1050 100 200 300 500 50\n"
             "cpu0 5100 275 1550 40050 525 50 100 150 250 25\n"
             "cpu2 10 0 10 80 0 0 0 0 0 0\n");
    fx_now_ns += 1000000000ULL;
    rt_cpu_collect(c, &e->s);
    assert_int_equal(e->s.cpu.n_cores, 2);
    assert_float_equal(e->s.cpu.per_core_pct[0], 70.0, EPS);
    assert_float_equal(e->s.cpu.per_core_pct[1], 0, 0); /* first sight of cpu2 */
    assert_float_equal(e->s.cpu.utilization_pct, 1.2, EPS);
    rt_cpu_collector_free(c);
    env_free(e);
}

static void test_quota_caps_cgroup(void **state)
{
    (void)state;
    struct env *e = env_new();
    fx_write(e->dir, "sys/fs/cgroup/cpu.max", "50000 100000\n");
    struct rt_cpu_collector *c = rt_cpu_collector_new_hooks(&e->roots, &fx_hooks);
    assert_float_equal(rt_cpu_collector_effective_cores(c), 0.5, EPS);
    fx_write(e->dir, "sys/fs/cgroup/cpu.stat", "usage_usec 6500000\n");
    fx_now_ns += 2000000000ULL;
    rt_cpu_collect(c, &e->s);
    assert_float_equal(e->s.cpu.cgroup_usage_secs, 1.5, EPS);
    assert_float_equal(e->s.cpu.cgroup_utilization_pct, 0.5, EPS);
    rt_cpu_collector_free(c);
    env_free(e);
}

/* Hybrid hosts (like the CI machine): v1 controllers, cgroup2 at unified/. */
static void test_cgroup_hybrid(void **state)
{
    (void)state;
    struct env *e = env_new();
    fx_remove(e->dir, "sys/fs/cgroup/cpu.stat");
    fx_write(e->dir, "sys/fs/cgroup/unified/cpu.stat", "usage_usec 1000000\n");
    fx_write(e->dir, "sys/fs/cgroup/cpuacct/cpuacct.usage", "999999999999\n");
    struct rt_cpu_collector *c = rt_cpu_collector_new_hooks(&e->roots, &fx_hooks);
    fx_write(e->dir, "sys/fs/cgroup/unified/cpu.stat", "usage_usec 1250000\n");
    fx_now_ns += 500000000ULL;
    rt_cpu_collect(c, &e->s);
    assert_true(e->s.cpu.has_cgroup);
    assert_float_equal(e->s.cpu.cgroup_usage_secs, 0.25, EPS);
    assert_float_equal(e->s.cpu.cgroup_utilization_pct, 0.5, EPS);
    rt_cpu_collector_free(c);
    env_free(e);
}

static void test_cgroup_v1(void **state)
{
    (void)state;
    struct env *e = env_new();
    fx_remove(e->dir, "sys/fs/cgroup/cpu.stat");
    fx_write(e->dir, "sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", "2000000000\n");
    fx_write(e->dir, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "150000\n");
    fx_write(e->dir, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    struct rt_cpu_collector *c = rt_cpu_collector_new_hooks(&e->roots, &fx_hooks);
    assert_float_equal(rt_cpu_collector_effective_cores(c), 1.5, EPS);
    fx_write(e->dir, "sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", "3000000000\n");
    fx_now_ns += 1000000000ULL;
    rt_cpu_collect(c, &e->s);
    assert_true(e->s.cpu.has_cgroup);
    assert_float_equal(e->s.cpu.cgroup_usage_secs, 1.0, EPS);
    assert_float_equal(e->s.cpu.cgroup_utilization_pct, 1.0, EPS);
    rt_cpu_collector_free(c);
    env_free(e);
}

static void test_no_cgroup(void **state)
{
    (void)state;
    struct env *e = env_new();
    fx_remove(e->dir, "sys/fs/cgroup");
    struct rt_cpu_collector *c = rt_cpu_collector_new_hooks(&e->roots, &fx_hooks);
    fx_now_ns += 1000000000ULL;
    rt_cpu_collect(c, &e->s);
    assert_false(e->s.cpu.has_cgroup);
    assert_float_equal(rt_cpu_collector_effective_cores(c), 2.0, EPS);
    rt_cpu_collector_free(c);
    env_free(e);
}

/* Garbage, truncated and missing /proc/stat: zeros, no crash, one warning. */
static void test_garbage(void **state)
{
    (void)state;
    struct env *e = env_new();
    struct rt_cpu_collector *c = rt_cpu_collector_new_hooks(&e->roots, &fx_hooks);
    fx_capture_start();
    fx_write(e->dir, "proc/stat", "cpu  abc def\ncpu0 1 2 x 4\ncpu1 5000 250\n");
    for (int i = 0; i < 3; i++) {
        rt_sample_reset(&e->s);
        fx_now_ns += 1000000000ULL;
        rt_cpu_collect(c, &e->s);
        assert_float_equal(e->s.cpu.utilization_pct, 0, 0);
        assert_int_equal(e->s.cpu.n_cores, 2);
        assert_float_equal(e->s.cpu.per_core_pct[0], 0, 0);
        assert_float_equal(e->s.cpu.per_core_pct[1], 0, 0);
    }
    /* Truncated in the middle of the first line. */
    fx_write(e->dir, "proc/stat", "cpu  10150 55");
    rt_sample_reset(&e->s);
    rt_cpu_collect(c, &e->s);
    assert_int_equal(e->s.cpu.n_cores, 0);
    assert_float_equal(e->s.cpu.utime_secs, 0, 0);
    fx_remove(e->dir, "proc/stat");
    for (int i = 0; i < 2; i++) {
        rt_sample_reset(&e->s);
        rt_cpu_collect(c, &e->s);
        assert_int_equal(e->s.cpu.n_cores, 0);
    }
    /* Back to good data: a fresh baseline first, then real figures. */
    fx_write(e->dir, "proc/stat", "cpu  10000 500 3000 80000 1000 100 200 300 400 50\n"
                                  "cpu0 5000 250 1500 40000 500 50 100 150 200 25\n"
                                  "cpu1 5000 250 1500 40000 500 50 100 150 200 25\n");
    rt_sample_reset(&e->s);
    rt_cpu_collect(c, &e->s);
    fx_write(e->dir, "proc/stat", STAT2);
    rt_sample_reset(&e->s);
    rt_cpu_collect(c, &e->s);
    char *log = fx_capture_end();
    assert_float_equal(e->s.cpu.utilization_pct, 1.2, EPS);
    assert_int_equal(fx_count(log, "unparsable line in /proc/stat"), 1);
    assert_int_equal(fx_count(log, "cannot read /proc/stat"), 1);
    free(log);
    rt_cpu_collector_free(c);
    env_free(e);
}

/* 300 cores: /proc/stat outgrows the first read buffer. */
static void test_many_cores(void **state)
{
    (void)state;
    struct env *e = env_new();
    size_t size = 64 * 400, len = 0;
    char *text = rt_xmalloc(size);
    len += (size_t)snprintf(text, size, "cpu  %d 0 %d %d 0 0 0 0 0 0\n", 300 * 10, 300 * 10, 300 * 80);
    for (int i = 0; i < 300; i++)
        len += (size_t)snprintf(text + len, size - len, "cpu%d 10 0 10 80 0 0 0 0 0 0\n", i);
    fx_write(e->dir, "proc/stat", text);
    struct rt_cpu_collector *c = rt_cpu_collector_new_hooks(&e->roots, &fx_hooks);
    len = (size_t)snprintf(text, size, "cpu  %d 0 %d %d 0 0 0 0 0 0\n", 300 * 10 + 150 * 50, 300 * 10,
                           300 * 80 + 150 * 50 + 150 * 100);
    for (int i = 0; i < 300; i++)
        len += (size_t)snprintf(text + len, size - len, "cpu%d %d 0 10 %d 0 0 0 0 0 0\n", i,
                                i % 2 ? 10 : 60, i % 2 ? 180 : 130);
    fx_write(e->dir, "proc/stat", text);
    free(text);
    fx_now_ns += 1000000000ULL;
    rt_cpu_collect(c, &e->s);
    assert_int_equal(e->s.cpu.n_cores, 300);
    assert_int_equal(rt_cpu_collector_ncores(c), 300);
    assert_float_equal(e->s.cpu.per_core_pct[0], 50.0, EPS);
    assert_float_equal(e->s.cpu.per_core_pct[299], 0.0, EPS);
    /* Even cores 50 % busy, odd ones idle: a quarter of 300 cores. */
    assert_float_equal(e->s.cpu.utilization_pct, 75.0, EPS);
    rt_cpu_collector_free(c);
    env_free(e);
}

/* A clock that advances by slow_step at every reading, so a /proc listing
 * seems to take slow_step. */
static uint64_t slow_now, slow_step;

static uint64_t slow_mono(void *ctx)
{
    (void)ctx;
    return slow_now += slow_step;
}

/* Listing /proc is repeated only after 2000 times its duration (at most 30 s);
 * in between the last count stands. */
static void test_process_count_spacing(void **state)
{
    (void)state;
    struct env *e = env_new();
    struct rt_collect_hooks h = fx_hooks;
    h.mono_ns = slow_mono;
    slow_now = 1000000000ULL;
    slow_step = 1000000; /* a listing takes 1 ms: the next one is due 2 s later */
    struct rt_cpu_collector *c = rt_cpu_collector_new_hooks(&e->roots, &h);
    fx_write(e->dir, "proc/777/stat", "777 (new) S 1");
    rt_cpu_collect(c, &e->s);
    assert_int_equal(e->s.cpu.process_count, 3);
    slow_now += 2000000000ULL;
    rt_cpu_collect(c, &e->s);
    assert_int_equal(e->s.cpu.process_count, 4);

    slow_step = 1000000000ULL; /* 1 s per listing: capped at 30 s, not 2000 s */
    slow_now += 60000000000ULL;
    rt_cpu_collect(c, &e->s);
    fx_remove(e->dir, "proc/777");
    slow_now += 25000000000ULL;
    rt_cpu_collect(c, &e->s);
    assert_int_equal(e->s.cpu.process_count, 4);
    slow_now += 10000000000ULL;
    rt_cpu_collect(c, &e->s);
    assert_int_equal(e->s.cpu.process_count, 3);
    rt_cpu_collector_free(c);
    env_free(e);
}

/* With the kernel's tasks unchanged since the last listing (the text after
 * the '/' of loadavg), /proc is not listed again: a process added to the
 * fixture without it is not counted until the tasks change. */
static void test_process_count_tasks_unchanged(void **state)
{
    (void)state;
    struct env *e = env_new();
    fx_write(e->dir, "proc/loadavg", "0.10 0.20 0.30 2/90 5000\n");
    struct rt_cpu_collector *c = rt_cpu_collector_new_hooks(&e->roots, &fx_hooks); /* a listing takes no time */
    fx_write(e->dir, "proc/777/stat", "777 (new) S 1");
    fx_write(e->dir, "proc/loadavg", "0.70 0.20 0.30 1/90 5000\n"); /* running tasks do not count */
    rt_cpu_collect(c, &e->s);
    assert_int_equal(e->s.cpu.process_count, 3);
    fx_write(e->dir, "proc/loadavg", "0.70 0.20 0.30 1/91 5001\n");
    rt_cpu_collect(c, &e->s);
    assert_int_equal(e->s.cpu.process_count, 4);
    fx_remove(e->dir, "proc/777");
    fx_write(e->dir, "proc/loadavg", "0.70 0.20 0.30 1/90 5001\n");
    rt_cpu_collect(c, &e->s);
    assert_int_equal(e->s.cpu.process_count, 3);
    rt_cpu_collector_free(c);
    env_free(e);
}

/* The real /proc: sane ranges only. */
static void test_live(void **state)
{
    (void)state;
    struct rt_roots r;
    assert_int_equal(rt_roots_open(&r, NULL, NULL), 0);
    struct rt_cpu_collector *c = rt_cpu_collector_new(&r);
    struct rt_sample s;
    rt_sample_init(&s);
    usleep(20000);
    rt_cpu_collect(c, &s);
    assert_int_equal(s.cpu.n_cores, sysconf(_SC_NPROCESSORS_ONLN));
    assert_true(s.cpu.utilization_pct >= 0 && s.cpu.utilization_pct <= (double)s.cpu.n_cores);
    assert_true(s.cpu.process_count > 0);
    rt_sample_free(&s);
    rt_cpu_collector_free(c);
    rt_roots_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interval),      cmocka_unit_test(test_backwards_saturate),
        cmocka_unit_test(test_hotplug),       cmocka_unit_test(test_quota_caps_cgroup),
        cmocka_unit_test(test_cgroup_hybrid), cmocka_unit_test(test_cgroup_v1),
        cmocka_unit_test(test_no_cgroup),     cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_many_cores),    cmocka_unit_test(test_process_count_spacing),
        cmocka_unit_test(test_process_count_tasks_unchanged),
        cmocka_unit_test(test_live),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
