/* Requested against used: efficiency as seff computes it and the notes
 * that say what to change, from a job's summary and request, by the rules of
 * docs/efficiency.md; figures the daemon does not have yet (OOM kills,
 * throttling, pressure) are read when present and silent when absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "jobs/notes.h"
#include "rt/json.h"

#define GIB (1ULL << 30)

/* The configuration's defaults (notes.*). */
static struct rt_notes_rules defaults;

static int setup(void **state)
{
    (void)state;
    struct rt_config c;
    rt_config_defaults(&c);
    rt_notes_rules_from_config(&c, &defaults);
    assert_int_equal(defaults.min_duration_secs, 60);
    return 0;
}

static struct json_object *summary(const char *text)
{
    struct json_object *o = json_tokener_parse(text);
    assert_non_null(o);
    return o;
}

static void expect_json(struct json_object *o, const char *text)
{
    assert_string_equal(o ? rt_json_plain(o) : "null", text);
    json_object_put(o);
}

/* The ids of the notes, space-separated. */
static void expect_ids(struct json_object *notes, const char *ids)
{
    char buf[256] = "";
    for (size_t i = 0; i < json_object_array_length(notes); i++) {
        strcat(buf, i ? " " : "");
        strcat(buf, rt_json_get_string(json_object_array_get_idx(notes, i), "id"));
    }
    assert_string_equal(buf, ids);
}

static struct json_object *note(struct json_object *notes, const char *id)
{
    for (size_t i = 0; i < json_object_array_length(notes); i++) {
        struct json_object *n = json_object_array_get_idx(notes, i);
        if (strcmp(rt_json_get_string(n, "id"), id) == 0)
            return n;
    }
    fail_msg("no note %s", id);
    return NULL;
}

static const char *busy_but_oversized =
    "{\"duration_secs\":100.0,\"cpu_secs\":190.0,\"avg_cores\":1.9,\"peak_cores\":3.2,"
    "\"peak_rss_bytes\":16106127360,\"gpu_avg_usage\":0.3,\"gpu_peak_usage\":1.0}";

static void test_efficiency_as_seff(void **state)
{
    (void)state;
    struct json_object *s = summary(busy_but_oversized);
    struct rt_request req = {.cpus = 8, .memory_bytes = 100 * GIB, .gpus = 2};
    /* 190 CPU-s / (8 x 100 s); 15 GiB of 100; 0.3 of 2 GPUs */
    expect_json(rt_job_efficiency(s, &req), "{\"cpu_pct\":23.8,\"memory_pct\":15.0,\"gpu_pct\":15.0}");
    /* only what was asked for */
    struct rt_request cpus = {.cpus = 2};
    expect_json(rt_job_efficiency(s, &cpus), "{\"cpu_pct\":95.0,\"memory_pct\":null,\"gpu_pct\":null}");
    struct rt_request none = {0};
    expect_json(rt_job_efficiency(s, &none), "null");
    json_object_put(s);

    /* no GPU backend (null use), no time yet: unknown, not 0 */
    s = summary("{\"duration_secs\":0,\"cpu_secs\":0,\"peak_rss_bytes\":1,\"gpu_avg_usage\":null}");
    expect_json(rt_job_efficiency(s, &req), "{\"cpu_pct\":null,\"memory_pct\":0.0,\"gpu_pct\":null}");
    json_object_put(s);

    /* a cgroup job's kernel peak is the memory figure */
    s = summary("{\"duration_secs\":10,\"cpu_secs\":10,\"peak_rss_bytes\":1073741824,"
                "\"memory_peak_bytes\":3221225472}");
    struct rt_request mem = {.memory_bytes = 4 * GIB};
    expect_json(rt_job_efficiency(s, &mem), "{\"cpu_pct\":null,\"memory_pct\":75.0,\"gpu_pct\":null}");
    json_object_put(s);
}

static void test_notes_for_an_oversized_request(void **state)
{
    (void)state;
    struct json_object *s = summary(busy_but_oversized);
    struct rt_request req = {.cpus = 8, .memory_bytes = 100 * GIB, .gpus = 2};
    struct json_object *n = rt_job_notes(s, &req, &defaults);
    expect_ids(n, "cpu_efficiency memory_unused gpu_efficiency");
    assert_string_equal(rt_json_plain(note(n, "cpu_efficiency")),
                        "{\"id\":\"cpu_efficiency\",\"text\":\"CPU efficiency 24%: asked for 8 CPUs, used 1.9 on "
                        "average. Ask for 2 (cpus=2).\",\"suggest\":{\"cpus\":2.0}}");
    /* the peak plus a fifth, rounded as recommend rounds: 18 GiB */
    assert_string_equal(rt_json_plain(note(n, "memory_unused")),
                        "{\"id\":\"memory_unused\",\"text\":\"Memory efficiency 15%: asked for 100.0 GiB, the peak "
                        "was 15.0 GiB. Ask for 18G (mem=18G).\",\"suggest\":{\"memory_bytes\":19327352832}}");
    /* GPUs: the peak use says how many (1), not the mean */
    assert_string_equal(rt_json_plain(note(n, "gpu_efficiency")),
                        "{\"id\":\"gpu_efficiency\",\"text\":\"GPU efficiency 15%: asked for 2 GPUs, used 0.30 on "
                        "average. Ask for 1 (gpus=1).\",\"suggest\":{\"gpus\":1}}");
    json_object_put(n);

    /* well-sized: nothing to say */
    struct rt_request fit = {.cpus = 2, .memory_bytes = 18 * GIB, .gpus = 1};
    n = rt_job_notes(s, &fit, &defaults);
    expect_ids(n, "");
    json_object_put(n);
    /* no request at all: nothing either */
    struct rt_request none = {0};
    n = rt_job_notes(s, &none, &defaults);
    expect_ids(n, "");
    json_object_put(n);
    json_object_put(s);
}

static void test_idle_gpus_and_small_jobs(void **state)
{
    (void)state;
    struct json_object *s = summary("{\"duration_secs\":600,\"cpu_secs\":590,\"avg_cores\":0.98,"
                                    "\"peak_cores\":1.0,\"peak_rss_bytes\":104857600,\"gpu_avg_usage\":0.0,"
                                    "\"gpu_peak_usage\":0.0}");
    struct rt_request req = {.cpus = 1, .memory_bytes = 150 << 20, .gpus = 1};
    struct json_object *n = rt_job_notes(s, &req, &defaults);
    /* 1 CPU is the least one asks for; a 100 MiB peak of 150 MiB is over
     * half of it: only the idle GPU is worth a note */
    expect_ids(n, "gpu_unused");
    assert_string_equal(rt_json_plain(note(n, "gpu_unused")),
                        "{\"id\":\"gpu_unused\",\"text\":\"The GPU was not used: asked for 1, used none. Ask for "
                        "none (gpus=0), or check that the code runs on the GPU.\",\"suggest\":{\"gpus\":0}}");
    json_object_put(n);
    json_object_put(s);

    /* a host without a GPU backend cannot tell: silent */
    s = summary("{\"duration_secs\":600,\"cpu_secs\":590,\"avg_cores\":0.98,\"gpu_avg_usage\":null}");
    n = rt_job_notes(s, &req, &defaults);
    expect_ids(n, "");
    json_object_put(n);
    json_object_put(s);

    /* too short to judge (under notes.min_duration) */
    s = summary("{\"duration_secs\":30,\"cpu_secs\":1,\"avg_cores\":0.03,\"peak_rss_bytes\":1048576,"
                "\"gpu_avg_usage\":0.0}");
    struct rt_request big = {.cpus = 8, .memory_bytes = 64 * GIB, .gpus = 4};
    n = rt_job_notes(s, &big, &defaults);
    expect_ids(n, "");
    json_object_put(n);
    struct rt_notes_rules quick = defaults;
    quick.min_duration_secs = 10;
    n = rt_job_notes(s, &big, &quick);
    expect_ids(n, "cpu_efficiency memory_unused gpu_unused");
    json_object_put(n);
    /* a rule at 0 is off */
    quick.cpu_efficiency_below = quick.memory_usage_below = quick.gpu_usage_below = 0;
    n = rt_job_notes(s, &big, &quick);
    expect_ids(n, "");
    json_object_put(n);
    json_object_put(s);
}

static void test_kernel_figures_when_present(void **state)
{
    (void)state;
    struct rt_request req = {.cpus = 4, .memory_bytes = 4 * GIB};
    /* OOM-killed at its limit: more memory, and no "memory unused" however
     * low the peak of the survivors; also for a short job */
    struct json_object *s = summary("{\"duration_secs\":5,\"cpu_secs\":4,\"avg_cores\":0.8,\"peak_cores\":1,"
                                    "\"peak_rss_bytes\":1073741824,\"memory_peak_bytes\":4294967296,"
                                    "\"oom_kills\":1}");
    struct json_object *n = rt_job_notes(s, &req, &defaults);
    expect_ids(n, "oom_killed");
    assert_string_equal(rt_json_plain(note(n, "oom_killed")),
                        "{\"id\":\"oom_killed\",\"text\":\"Out of memory: the kernel's OOM killer killed 1 process at "
                        "the memory limit (peak 4.0 GiB of 4.0 GiB asked for). Ask for more memory (mem=6G) or make "
                        "the job use less.\",\"suggest\":{\"memory_bytes\":6442450944}}");
    json_object_put(n);
    json_object_put(s);

    /* throttled by its quota: more CPUs, and no "CPU efficiency" (its
     * average is low because it was held back); memory pressure: more
     * memory, and not "unused" */
    s = summary("{\"duration_secs\":600,\"cpu_secs\":240,\"avg_cores\":0.4,\"peak_cores\":4.6,"
                "\"peak_rss_bytes\":536870912,\"throttled_pct\":40.0,"
                "\"pressure\":{\"memory_some_pct\":35.2,\"cpu_some_pct\":50}}");
    n = rt_job_notes(s, &req, &defaults);
    expect_ids(n, "memory_pressure cpu_throttled");
    assert_string_equal(rt_json_get_string(note(n, "memory_pressure"), "text"),
                        "Memory pressure 35%: the job waited for memory 35% of its time, it needed more than it had. "
                        "Ask for more memory (mem=6G) or make the job use less.");
    assert_string_equal(rt_json_get_string(note(n, "cpu_throttled"), "text"),
                        "CPU throttled 40% of the time by its CPU quota: the job wanted more than the 4 CPUs it had. "
                        "Ask for 5 (cpus=5) or run fewer threads.");
    json_object_put(n);
    /* under the thresholds, or absent, or zero: silent */
    struct rt_notes_rules strict = defaults;
    strict.throttled_above = 50;
    strict.memory_pressure_above = 40;
    n = rt_job_notes(s, &req, &strict);
    expect_ids(n, "cpu_efficiency memory_unused");
    json_object_put(n);
    json_object_put(s);
    s = summary("{\"duration_secs\":600,\"cpu_secs\":2300,\"avg_cores\":3.8,\"peak_cores\":4,"
                "\"peak_rss_bytes\":3221225472,\"oom_kills\":0,\"pressure\":{}}");
    n = rt_job_notes(s, &req, &defaults);
    expect_ids(n, "");
    json_object_put(n);
    json_object_put(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_efficiency_as_seff),
        cmocka_unit_test(test_notes_for_an_oversized_request),
        cmocka_unit_test(test_idle_gpus_and_small_jobs),
        cmocka_unit_test(test_kernel_figures_when_present),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
