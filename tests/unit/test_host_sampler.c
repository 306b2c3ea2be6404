/* Host sampler over the fixture tree: timestamps, interval, every collector
 * wired in, and the exact CSV row it produces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"
#include "collect/host_sampler.h"
#include "rt/json.h"
#include "rt/sample_csv.h"
#include "rt/sample_json.h"

static const struct fx_fs FS[] = {
    {"/", 4096, 4096, 25000000, 10000000, 9000000, 0},
    {"/boot", 1024, 1024, 500000, 400000, 375000, 0},
    {NULL, 0, 0, 0, 0, 0, 0},
};

static void test_samples(void **state)
{
    (void)state;
    struct rt_roots r;
    char *dir = fx_path("host");
    fx_roots(&r, dir);
    free(dir);
    fx_now_ns = 1000000000ULL;
    fx_fs_table = FS;
    struct rt_host_sampler *h = rt_host_sampler_new_hooks(&r, 5.0, &fx_hooks);
    assert_int_equal(rt_cpu_collector_ncores(rt_host_sampler_cpu(h)), 2);

    struct rt_sample s;
    rt_sample_init(&s);
    fx_now_ns += 2000000000ULL;
    rt_host_sampler_collect(h, &s);
    assert_int_equal(s.timestamp_secs, 1795310334); /* floored */
    assert_int_equal(s.timestamp_ms, 1795310334999ULL);
    assert_false(s.has_interval);
    assert_float_equal(s.nominal_interval_secs, 5.0, 0);
    assert_int_equal(s.cpu.n_cores, 2);
    assert_int_equal(s.cpu.process_count, 3);
    assert_int_equal(s.memory.total_mib, 16000);
    assert_int_equal(s.n_disks, 4);
    assert_int_equal(s.n_nets, 3);
    assert_int_equal(s.n_gpus, 0);
    assert_false(s.has_gpu_backend);

    /* Only / (dm-0) and /boot (sda) have statvfs figures in this test: used is
     * total - free blocks as df and psutil count it (61.5424 GB), free the
     * blocks available to users. */
    char row[1024];
    rt_sample_to_csv(&s, row, sizeof(row));
    assert_string_equal(row, "1795310334.999,3,0.000,0.000,0.0000,2000,8000,500,4250,5859,2929,0,0,"
                             "102.912000,61.542400,37.248000,0,0,0.0000,0.0000,0,,,,,,,,,,,\n");
    struct json_object *o = rt_sample_to_json(&s);
    assert_null(strstr(rt_json_plain(o), "actual_interval_ms"));
    json_object_put(o);

    rt_sample_reset(&s);
    fx_now_ns += 1500000000ULL;
    rt_host_sampler_collect(h, &s);
    assert_true(s.has_interval);
    assert_int_equal(s.actual_interval_ms, 1500);
    o = rt_sample_to_json(&s);
    assert_non_null(strstr(rt_json_plain(o), "\"actual_interval_ms\":1500,"));
    json_object_put(o);

    rt_sample_free(&s);
    rt_host_sampler_free(h);
    rt_roots_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
