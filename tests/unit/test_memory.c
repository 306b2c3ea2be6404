/* Memory collector: exact MiB figures from fixture meminfo files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"
#include "collect/memory.h"

#define EPS 1e-9

static void open_split(struct rt_roots *r, const char *proc_fixture)
{
    char *p = rt_xasprintf("%s/%s/proc", fx_fixtures(), proc_fixture);
    char *s = rt_xasprintf("%s/host/sys", fx_fixtures());
    assert_int_equal(rt_roots_open(r, p, s), 0);
    free(p);
    free(s);
}

/* Each field floored to MiB on its own: Active 6000000 kB = 5859.375 MiB. */
static void test_fixture(void **state)
{
    (void)state;
    struct rt_roots r;
    open_split(&r, "host");
    struct rt_memory m;
    assert_int_equal(rt_memory_collect(&r, &m), 0);
    assert_int_equal(m.total_mib, 16000);
    assert_int_equal(m.free_mib, 2000);
    assert_int_equal(m.available_mib, 8000);
    assert_int_equal(m.used_mib, 8000);
    assert_float_equal(m.used_pct, 50.0, EPS);
    assert_int_equal(m.buffers_mib, 500);
    assert_int_equal(m.cached_mib, 4000 + 250); /* Cached + SReclaimable */
    assert_int_equal(m.swap_total_mib, 2048);
    assert_int_equal(m.swap_used_mib, 1024);
    assert_float_equal(m.swap_used_pct, 50.0, EPS);
    assert_int_equal(m.active_mib, 5859);
    assert_int_equal(m.inactive_mib, 2929);
    rt_roots_close(&r);
}

/* No MemAvailable (kernels < 3.14): Free + Buffers + Cached + SReclaimable. */
static void test_no_memavailable(void **state)
{
    (void)state;
    struct rt_roots r;
    open_split(&r, "host-noavail");
    struct rt_memory m;
    assert_int_equal(rt_memory_collect(&r, &m), 0);
    assert_int_equal(m.available_mib, 6750); /* (2048000+512000+4096000+256000) kB */
    assert_int_equal(m.used_mib, 9250);
    assert_float_equal(m.used_pct, 57.8125, EPS);
    assert_int_equal(m.total_mib, 16000);
    rt_roots_close(&r);
}

static void collect_text(const char *dir, struct rt_roots *r, const char *text, struct rt_memory *m, int want)
{
    fx_write(dir, "proc/meminfo", text);
    assert_int_equal(rt_memory_collect(r, m), want);
}

static void test_edge_cases(void **state)
{
    (void)state;
    char *dir = fx_copy("host");
    struct rt_roots r;
    fx_roots(&r, dir);
    struct rt_memory m;
    /* No swap at all, and MemAvailable above MemTotal (used saturates at 0). */
    collect_text(dir, &r, "MemTotal: 2097152 kB\nMemAvailable: 4194304 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n", &m, 0);
    assert_int_equal(m.total_mib, 2048);
    assert_int_equal(m.available_mib, 4096);
    assert_int_equal(m.used_mib, 0);
    assert_float_equal(m.used_pct, 0, 0);
    assert_float_equal(m.swap_used_pct, 0, 0);
    /* SwapFree above SwapTotal (racing counters) saturates too. */
    collect_text(dir, &r, "MemTotal: 2097152 kB\nSwapTotal: 1024 kB\nSwapFree: 2048 kB\n", &m, 0);
    assert_int_equal(m.total_mib, 2048);
    assert_int_equal(m.swap_used_mib, 0);
    rt_roots_close(&r);
    fx_rmtree(dir);
}

/* Garbage, truncated and missing files: zeros, no crash, one warning each. */
static void test_garbage(void **state)
{
    (void)state;
    char *dir = fx_copy("host");
    struct rt_roots r;
    fx_roots(&r, dir);
    struct rt_memory m;
    fx_capture_start();
    for (int i = 0; i < 2; i++) {
        collect_text(dir, &r, "MemTotal: abc kB\nMemFree: 12 MB\n\x01\x02:::\n", &m, -EINVAL);
        assert_int_equal(m.total_mib, 0);
        assert_int_equal(m.free_mib, 0);
    }
    /* Truncated mid-value: MemFree has lost its unit and is not trusted. */
    collect_text(dir, &r, "MemTotal:       16384000 kB\nMemFree:   20", &m, 0);
    assert_int_equal(m.total_mib, 16000);
    assert_int_equal(m.free_mib, 0);
    assert_int_equal(m.used_mib, 16000);
    fx_remove(dir, "proc/meminfo");
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rt_memory_collect(&r, &m), -ENOENT);
        assert_int_equal(m.total_mib, 0);
    }
    char *log = fx_capture_end();
    assert_int_equal(fx_count(log, "unparsable"), 1);
    assert_int_equal(fx_count(log, "no MemTotal"), 1);
    assert_int_equal(fx_count(log, "cannot read /proc/meminfo"), 1);
    free(log);
    rt_roots_close(&r);
    fx_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture),
        cmocka_unit_test(test_no_memavailable),
        cmocka_unit_test(test_edge_cases),
        cmocka_unit_test(test_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
