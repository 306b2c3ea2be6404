/* A job's peak cores: the highest of its samples (each over at least
 * 0.1 s), the same live and when rebuilt from sample lines, never below its
 * average; its average cores stay within the host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "jobs/jobs.h"
#include "jobs/state_dir.h"
#include "store/figures.h"

#include <json-c/json.h>
#include <unistd.h>

static double summary_field(const struct rt_job *j, const char *key)
{
    struct json_object *o = rt_job_to_json(j, 2000.0), *summary, *v;
    assert_true(json_object_object_get_ex(o, "summary", &summary));
    assert_true(json_object_object_get_ex(summary, key, &v));
    double d = json_object_get_double(v);
    json_object_put(o);
    return d;
}

/* A sample of that many cores. */
static void note_cores(struct rt_job_summary *s, double cores)
{
    rt_job_summary_add(s, &(struct rt_job_figures){.interval_ms = 1000, .cores_used = cores});
}

static void test_peak_is_the_highest_sample(void **state)
{
    (void)state;
    struct rt_job_summary s = {0};
    note_cores(&s, 0.8);
    note_cores(&s, 1.2);
    note_cores(&s, 0.1); /* a short last sample reads low, not high */
    assert_true(s.peak_cores == 1.2);
}

static void test_peak_not_below_average(void **state)
{
    (void)state;
    /* 0.3 s of CPU in 0.2 s: 1.5 cores on average, whatever the samples said. */
    struct rt_job j;
    memset(&j, 0, sizeof(j));
    j.state = RT_JOB_FINISHED;
    j.started_at = 1000.0;
    j.ended_at = 1000.2;
    j.summary.cpu_secs = 0.3;
    note_cores(&j.summary, 0.9);
    double avg = summary_field(&j, "avg_cores"), peak = summary_field(&j, "peak_cores");
    if (sysconf(_SC_NPROCESSORS_ONLN) >= 2)
        assert_true(avg == 1.5);
    assert_true(peak == avg);
}

static void test_rebuilt_from_lines(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "{\"actual_interval_ms\":3,\"cpu\":{\"process_cores_used\":0.1,\"process_utime_secs\":0.01}}",
        "{\"actual_interval_ms\":200,\"cpu\":{\"process_cores_used\":2.0,\"process_utime_secs\":0.4}}",
        "{\"actual_interval_ms\":7,\"cpu\":{\"process_cores_used\":0.1,\"process_stime_secs\":0.01}}",
    };
    struct rt_job_summary s = {0};
    for (size_t i = 0; i < 3; i++) {
        struct rt_job_figures f;
        assert_true(rt_figures_from_line(lines[i], strlen(lines[i]), 0.2, &f));
        rt_job_summary_add(&s, &f);
    }
    assert_int_equal(s.samples, 3);
    assert_true(s.peak_cores == 2.0);
    assert_true(s.cpu_secs > 0.4199 && s.cpu_secs < 0.4201); /* every sample's CPU counts */
}

static void add_cores(struct rt_job_summary *s, unsigned n, double secs, double cores)
{
    for (unsigned i = 0; i < n; i++) {
        struct rt_job_figures f = {.interval_ms = (uint64_t)(secs * 1000), .gates = RT_GATE_TREE,
                                   .cores_used = cores, .utime_secs = cores * secs};
        rt_job_summary_add(s, &f);
    }
}

/* Sustained cores: the highest mean of a block of 5 s. A 20 s phase on 2
 * cores in a job of mean 0.7 reads 2; a spike of one short sample does
 * not; the total is recorded and read back. */
static void test_sustained_cores(void **state)
{
    (void)state;
    struct rt_job_summary s = {0};
    add_cores(&s, 40, 1, 0.5);
    add_cores(&s, 20, 1, 2.0);
    add_cores(&s, 1, 0.2, 4.0); /* a spike */
    add_cores(&s, 9, 1, 0.1);
    assert_true(s.peak_cores == 4.0);
    assert_true(s.sustained_cores == 2.0);
    struct rt_job_summary spike = {0};
    add_cores(&spike, 5, 1, 0.1);
    add_cores(&spike, 1, 0.2, 2.0);
    add_cores(&spike, 5, 1, 0.1);
    assert_true(spike.sustained_cores < 0.3 && spike.peak_cores == 2.0);
    /* Samples longer than a block are blocks of their own. */
    struct rt_job_summary slow = {0};
    add_cores(&slow, 3, 10, 1.0);
    add_cores(&slow, 1, 10, 3.0);
    assert_true(slow.sustained_cores == 3.0);
    struct rt_job j;
    memset(&j, 0, sizeof(j));
    j.state = RT_JOB_FINISHED;
    j.started_at = 1000;
    j.ended_at = 1070.2;
    j.summary = s;
    assert_true(summary_field(&j, "sustained_cores") == 2.0);
    struct json_object *rec = rt_job_summary_to_record(&s);
    struct rt_job_summary back = {0};
    rt_job_summary_from_record(&back, rec, 1);
    json_object_put(rec);
    assert_true(back.sustained_cores == 2.0);
    /* A job shorter than a block shows its average (never below it). */
    memset(&j.summary, 0, sizeof(j.summary));
    add_cores(&j.summary, 3, 1, 1.0);
    j.ended_at = 1003;
    assert_true(j.summary.sustained_cores == 0 && summary_field(&j, "sustained_cores") == 1.0);
}

/* CPU time in clock ticks over a job of a few ms: measured over 0.1 s at
 * least, and never more cores than the host has. */
static void test_avg_cores_within_host(void **state)
{
    (void)state;
    struct rt_job j;
    memset(&j, 0, sizeof(j));
    j.state = RT_JOB_FINISHED;
    j.started_at = 1000.0;
    j.ended_at = 1000.004;
    j.summary.cpu_secs = 0.02;
    assert_true(summary_field(&j, "avg_cores") == 0.2);
    j.summary.cpu_secs = 1000;
    assert_true(summary_field(&j, "avg_cores") == (double)sysconf(_SC_NPROCESSORS_ONLN));
    j.ended_at = 1010.0; /* 0.02 s over 10 s */
    j.summary.cpu_secs = 0.02;
    assert_true(summary_field(&j, "avg_cores") == 0.002);
}

/* The means and peaks the report and right-sizing read: rebuilt from
 * lines, kept in the record across a restart, null for records from before
 * them. */
static void test_means_rebuilt_and_recorded(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "{\"cpu\":{\"process_pss_mib\":100,\"process_gpu_usage\":0.5,\"process_gpu_vram_mib\":1000.0}}",
        "{\"cpu\":{\"process_pss_mib\":300,\"process_gpu_usage\":1.25,\"process_gpu_vram_mib\":3000.5}}",
        "{\"cpu\":{\"process_pss_mib\":201,\"process_gpu_usage\":0.0,\"process_gpu_vram_mib\":0.0}}",
    };
    struct rt_job *j = rt_job_new();
    j->id = 7;
    j->state = RT_JOB_FINISHED;
    for (size_t i = 0; i < 3; i++) {
        struct rt_job_figures f;
        assert_true(rt_figures_from_line(lines[i], strlen(lines[i]), 1.0, &f));
        rt_job_summary_add(&j->summary, &f);
    }
    const double mib = 1048576.0;
    struct json_object *o = rt_job_to_json(j, 0), *s, *v;
    assert_true(json_object_object_get_ex(o, "summary", &s));
    assert_true(json_object_object_get_ex(s, "avg_pss_bytes", &v));
    assert_int_equal(json_object_get_int64(v), (int64_t)(601 * mib / 3 + 0.5));
    assert_true(json_object_object_get_ex(s, "gpu_peak_usage", &v));
    assert_true(json_object_get_double(v) == 1.25);
    assert_true(json_object_object_get_ex(s, "gpu_avg_vram_bytes", &v));
    assert_int_equal(json_object_get_int64(v), (int64_t)(4000.5 * mib / 3 + 0.5));
    json_object_put(o);
    /* Through the record: the same figures. */
    struct json_object *rec = rt_job_to_record(j);
    const char *repaired;
    struct rt_job *back = rt_job_from_record(rec, &repaired);
    assert_non_null(back);
    assert_int_equal(back->summary.unknown, 0);
    assert_true(back->summary.pss_sum_bytes == j->summary.pss_sum_bytes);
    assert_true(back->summary.gpu_peak_usage == 1.25);
    assert_true(back->summary.gpu_vram_sum_bytes == j->summary.gpu_vram_sum_bytes);
    rt_job_free(back);
    /* A record from before the sums: unknown, not zero. */
    struct json_object *totals;
    assert_true(json_object_object_get_ex(rec, "totals", &totals));
    json_object_object_del(totals, "pss_sum_bytes");
    json_object_object_del(totals, "gpu_peak_usage");
    json_object_object_del(totals, "gpu_vram_sum_bytes");
    back = rt_job_from_record(rec, &repaired);
    assert_true(back->summary.unknown & 1ull << rt_fig_total_find("avg_pss_bytes"));
    o = rt_job_to_json(back, 0);
    assert_true(json_object_object_get_ex(o, "summary", &s));
    assert_true(json_object_object_get_ex(s, "avg_pss_bytes", &v) && v == NULL);
    assert_true(json_object_object_get_ex(s, "gpu_peak_usage", &v) && v == NULL);
    json_object_put(o);
    rt_job_free(back);
    json_object_put(rec);
    rt_job_free(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peak_is_the_highest_sample),
        cmocka_unit_test(test_peak_not_below_average),
        cmocka_unit_test(test_rebuilt_from_lines),
        cmocka_unit_test(test_avg_cores_within_host),
        cmocka_unit_test(test_sustained_cores),
        cmocka_unit_test(test_means_rebuilt_and_recorded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
