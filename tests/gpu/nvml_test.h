/* Helpers of the tests that load the fake libnvidia-ml.so.1 (after
 * cmocka.h and gpu_test.h): its configuration file, its controls and
 * counters, and a collector freed by the teardown when a test fails. */
#ifndef RT_NVML_TEST_H
#define RT_NVML_TEST_H

#include "collect/gpu/gpu.h"

#include <dlfcn.h>

static struct rt_gpu_collector *current; /* freed by the teardown after a failure */
static char config_path[64];

/* $FAKE_NVML_CONFIG: a file of our own, for the fake to read. */
static inline void config_create(void)
{
    snprintf(config_path, sizeof(config_path), "/tmp/rt-fake-nvml-XXXXXX");
    int fd = mkstemp(config_path);
    close(fd);
    setenv("FAKE_NVML_CONFIG", config_path, 1);
}

/* Replaced whole (a new inode), as a running fake rereads it. */
static inline void write_config(const char *text)
{
    char tmp[80];
    snprintf(tmp, sizeof(tmp), "%s.new", config_path);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(rename(tmp, config_path), 0);
}

static inline struct rt_gpu_options fast_options(void)
{
    return (struct rt_gpu_options){.poll_interval_secs = 0.05, .util_samples = 4, .hang_bound_secs = 1.0,
                                   .retry_secs = 0.1, .start_wait_secs = DEADLINE_SECS, .disable_amd = true};
}

static inline struct rt_gpu_collector *new_collector(const struct rt_gpu_options *o)
{
    struct rt_roots r;
    assert_int_equal(rt_roots_open(&r, NULL, NULL), 0);
    struct rt_gpu_collector *c = rt_gpu_collector_new(&r, o);
    rt_roots_close(&r);
    current = c;
    return c;
}

static inline void free_collector(struct rt_gpu_collector *c)
{
    rt_gpu_collector_free(c);
    current = NULL;
}

/* After a failed assertion: restore stderr and stop the collector, so the
 * next test starts clean (the fake's init nests like NVML's). */
static int test_teardown(void **state)
{
    (void)state;
    capture_cleanup();
    events_cleanup();
    if (current)
        free_collector(current);
    return 0;
}

static inline unsigned long fake_counter(const char *lib, const char *name)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    unsigned long (*fn)(const char *) = (unsigned long (*)(const char *))dlsym(h, "fake_nvml_counter");
    assert_non_null(fn);
    unsigned long v = fn(name);
    dlclose(h);
    return v;
}

static inline void fake_control(const char *fn_name, unsigned index, unsigned value)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    void (*fn)(unsigned, unsigned) = (void (*)(unsigned, unsigned))dlsym(h, fn_name);
    assert_non_null(fn);
    fn(index, value);
    dlclose(h);
}

/* Collect until pred(s) holds; false at the deadline. */
static inline bool collect_until(struct rt_gpu_collector *c, struct rt_sample *s,
                                 bool (*pred)(const struct rt_sample *))
{
    double end = mono_secs() + DEADLINE_SECS;
    for (;;) {
        rt_sample_reset(s);
        rt_gpu_collect(c, s);
        if (pred(s))
            return true;
        if (mono_secs() > end)
            return false;
        sleep_ms(10);
    }
}

#endif
