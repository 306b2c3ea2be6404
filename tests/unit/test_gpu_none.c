/* The real code path on a host without GPUs: dlopen of the absent
 * libnvidia-ml.so.1, the real /sys and /proc. No GPUs, no backend, null
 * process GPU fields, and not a line in the log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../gpu/gpu_test.h"
#include "collect/gpu/gpu.h"
#include "system/log.h"

#include <dlfcn.h>

/* This test is about GPU-less hosts; on one with a GPU it has nothing to say. */
static bool host_has_gpu(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h)
        dlclose(h);
    return h || access("/sys/module/amdgpu", F_OK) == 0 || access("/dev/nvidiactl", F_OK) == 0;
}

static void check_no_gpu(const struct rt_gpu_options *o)
{
    struct rt_roots r;
    assert_int_equal(rt_roots_open(&r, NULL, NULL), 0);
    capture_start();
    double t = mono_secs();
    struct rt_gpu_collector *c = rt_gpu_collector_new(&r, o);
    rt_roots_close(&r);
    struct rt_sample s;
    rt_sample_init(&s);
    struct rt_gpu_job *j = rt_gpu_job_new();
    int32_t pids[] = {getpid(), 1};
    struct rt_process_gpu p;
    for (int i = 0; i < 5; i++) {
        rt_sample_reset(&s);
        rt_gpu_collect(c, &s);
        rt_gpu_job_usage(c, j, pids, 2, 1.0, &p);
        assert_false(s.has_gpu_backend);
        assert_int_equal(s.n_gpus, 0);
        assert_null(s.gpus);
        assert_false(s.job.gates & RT_GATE_GPU);
        assert_false(p.present);
    }
    struct rt_gpu_job_summary sum;
    rt_gpu_job_summary(j, &sum);
    assert_false(sum.present);
    assert_int_equal(sum.n_gpus, 0);
    rt_gpu_job_free(j);
    rt_sample_free(&s);
    rt_gpu_collector_free(c);
    double took = mono_secs() - t;
    char *log = capture_end();
    assert_string_equal(log, "");
    free(log);
    assert_true(took < 5.0); /* nothing to wait for */
}

static void test_default_library(void **state)
{
    (void)state;
    if (host_has_gpu())
        skip();
    check_no_gpu(NULL);
}

static void test_library_path_absent(void **state)
{
    (void)state;
    if (access("/sys/module/amdgpu", F_OK) == 0)
        skip();
    struct rt_gpu_options o = {.nvml_library = "/nonexistent/libnvidia-ml.so.1"};
    check_no_gpu(&o);
}

int main(void)
{
    rt_log_init(RT_LOG_STDERR, LOG_INFO);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_library),
        cmocka_unit_test(test_library_path_absent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
