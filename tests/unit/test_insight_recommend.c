/* Right-sizing rules (ctl/insight/recommend.c) on the Python tracker's
 * documented cases (round_memory's doctests and test_report.py) and over a
 * history of three runs, and the requests printed for Slurm, Kubernetes and
 * Metaflow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "insight/recommend.h"
#include "insight/stats.h"
#include "rt/request.h"

#include <math.h>

#define MIB 1048576.0

static void test_round_memory_python_cases(void **state)
{
    (void)state;
    /* report.py doctests */
    assert_int_equal(rt_request_round_memory_mib(68), 128);
    assert_int_equal(rt_request_round_memory_mib(896), 1024);
    assert_int_equal(rt_request_round_memory_mib(3863), 4096);
    /* tests/test_report.py */
    assert_int_equal(rt_request_round_memory_mib(12), 128);
    assert_int_equal(rt_request_round_memory_mib(987), 1024);
    assert_int_equal(rt_request_round_memory_mib(1024), 1024);
    assert_int_equal(rt_request_round_memory_mib(1025), 2048);
    /* every step's edges, and whole GiB above 2048 */
    assert_int_equal(rt_request_round_memory_mib(128), 128);
    assert_int_equal(rt_request_round_memory_mib(128.01), 256);
    assert_int_equal(rt_request_round_memory_mib(256), 256);
    assert_int_equal(rt_request_round_memory_mib(257), 512);
    assert_int_equal(rt_request_round_memory_mib(512), 512);
    assert_int_equal(rt_request_round_memory_mib(513), 1024);
    assert_int_equal(rt_request_round_memory_mib(2048), 2048);
    assert_int_equal(rt_request_round_memory_mib(2048.5), 3072);
    assert_int_equal(rt_request_round_memory_mib(4096), 4096);
    assert_int_equal(rt_request_round_memory_mib(4097), 5120);
    assert_int_equal(rt_request_round_memory_mib(100 * 1024 + 1), 101 * 1024);
    /* nothing measured */
    assert_int_equal(rt_request_round_memory_mib(0), 128);
    assert_int_equal(rt_request_round_memory_mib(-5), 128);
    assert_int_equal(rt_request_round_memory_mib(NAN), 128);
}

static void test_round_half_even_like_python(void **state)
{
    (void)state;
    assert_true(rt_round_half_even(0.5) == 0);
    assert_true(rt_round_half_even(1.5) == 2);
    assert_true(rt_round_half_even(2.5) == 2);
    assert_true(rt_round_half_even(3.5) == 4);
    assert_true(rt_round_half_even(0.49) == 0);
    assert_true(rt_round_half_even(0.51) == 1);
    assert_true(rt_round_half_even(2.6) == 3);
}

/* A run as a summary without GPU figures gives it. */
static struct insight_stats run(double cores_mean, double pss_peak_mib)
{
    struct insight_stats s = {.samples = 10, .duration_secs = 10};
    insight_set(&s, "avg_cores", cores_mean);
    insight_set(&s, "peak_cores", cores_mean * 1.5);
    insight_set(&s, "avg_pss_bytes", pss_peak_mib * MIB / 2);
    insight_set(&s, "peak_pss_bytes", pss_peak_mib * MIB);
    insight_set(&s, "peak_rss_bytes", 0);
    insight_set(&s, "disk_read_bytes", 0);
    insight_set(&s, "disk_write_bytes", 0);
    return s;
}

/* Its GPU figures, as a host with a GPU backend gives them. */
static void gpu(struct insight_stats *s, double mean, double peak, double vram_mean, double vram_peak)
{
    insight_set(s, "gpu_avg_usage", mean);
    insight_set(s, "gpu_peak_usage", peak);
    insight_set(s, "gpu_avg_vram_bytes", vram_mean);
    insight_set(s, "gpu_peak_vram_bytes", vram_peak);
}

static void test_single_run(void **state)
{
    (void)state;
    struct insight_rec r;
    struct insight_stats s = run(0.3, 100);
    insight_recommend(&s, &r);
    assert_int_equal(r.cpus, 1); /* at least one CPU */
    assert_int_equal(r.memory_mib, 128); /* 100 x 1.2 = 120 */
    assert_int_equal(r.gpus, 0);
    assert_int_equal(r.vram_mib, 0);
    s = run(2.5, 1000); /* 2.5 rounds to even; 1200 MiB -> 2048 */
    insight_recommend(&s, &r);
    assert_int_equal(r.cpus, 2);
    assert_int_equal(r.memory_mib, 2048);
    s = run(3.5, 3219); /* 3863 MiB with headroom -> 4096 */
    insight_recommend(&s, &r);
    assert_int_equal(r.cpus, 4);
    assert_int_equal(r.memory_mib, 4096);
    /* The Python divides by 1024 once too often (128 MiB for any peak); not here. */
    s = run(1, 20000);
    insight_recommend(&s, &r);
    assert_int_equal(r.memory_mib, 24 * 1024);
}

/* A sustained phase is never under-provisioned: the job ran 20 s on
 * 2 cores (mean 0.56, peak 1.95); the mean alone would halve that phase's
 * speed. The Python rule's result stays visible; 0.1 above a whole number
 * is forgiven. */
static void test_a_sustained_phase_asks_for_its_cores(void **state)
{
    (void)state;
    struct insight_rec r;
    char why[256];
    struct insight_stats s = run(0.56, 100);
    insight_set(&s, "sustained_cores", 1.95);
    insight_recommend(&s, &r);
    assert_int_equal(r.cpus, 2);
    assert_int_equal(r.cpus_python, 1);
    insight_rec_cpu_why(&r, why, sizeof(why));
    assert_string_equal(why, "its busiest stretch held 1.95 cores; the mean, 0.56 cores, would give 1 vCPU "
                             "(the Python tracker's rule)");
    insight_set(&s, "sustained_cores", 2.05);
    insight_recommend(&s, &r);
    assert_int_equal(r.cpus, 2);
    insight_set(&s, "sustained_cores", 1.05); /* about one core: the rules agree */
    insight_recommend(&s, &r);
    assert_int_equal(r.cpus, 1);
    insight_rec_cpu_why(&r, why, sizeof(why));
    assert_string_equal(why, "");
    s = run(3.4, 100); /* the mean asks for more than a phase: the Python rule */
    insight_set(&s, "sustained_cores", 2.5);
    insight_recommend(&s, &r);
    assert_int_equal(r.cpus, 3);
    /* Runs combined: the largest phase of any. */
    struct insight_stats runs[2] = {run(0.5, 100), run(0.6, 100)}, c;
    insight_set(&runs[0], "sustained_cores", 3.2);
    insight_set(&runs[1], "sustained_cores", 0.7);
    insight_stats_combine(runs, 2, &c);
    insight_recommend(&c, &r);
    assert_true(insight_fig(&c, "sustained_cores") == 3.2);
    assert_int_equal(r.cpus, 4);
}

static void test_gpus(void **state)
{
    (void)state;
    struct insight_rec r;
    struct insight_stats s = run(1, 500);
    gpu(&s, 0, 0, 0, 0); /* a GPU backend, but the job used none */
    insight_recommend(&s, &r);
    assert_int_equal(r.gpus, 0);
    assert_int_equal(r.vram_mib, 0);
    gpu(&s, 0.1, 0.3, 0, 3000 * MIB); /* used a little: one GPU */
    insight_recommend(&s, &r);
    assert_int_equal(r.gpus, 1);
    assert_int_equal(r.vram_mib, 4096); /* 3600 */
    gpu(&s, 0.1, 1.6, 0, 900 * MIB); /* 1080 */
    insight_recommend(&s, &r);
    assert_int_equal(r.gpus, 2);
    assert_int_equal(r.vram_mib, 2048);
    gpu(&s, 0.1, 2.5, 0, 900 * MIB);
    insight_recommend(&s, &r);
    assert_int_equal(r.gpus, 2);
}

static void test_history_of_three_runs(void **state)
{
    (void)state;
    struct insight_stats runs[3] = {run(1.2, 800), run(2.0, 1500), run(3.1, 1200)};
    runs[0].id = 9;
    runs[0].duration_secs = 30;
    insight_set(&runs[0], "disk_read_bytes", 5e6);
    runs[0].has_host = true; /* the run whose samples were read */
    runs[0].net_in_bytes = 6e6;
    runs[1].net_in_bytes = 7e6; /* not known: not taken */
    insight_set(&runs[2], "peak_rss_bytes", 2000 * MIB);
    /* Two runs on a GPU host, one without a GPU backend. */
    gpu(&runs[0], 0.4, 0.9, 1000 * MIB, 1400 * MIB);
    gpu(&runs[1], 0.8, 1.6, 2000 * MIB, 2500 * MIB);
    struct insight_stats c;
    insight_stats_combine(runs, 3, &c);
    assert_int_equal(c.id, 0);
    assert_true(fabs(insight_fig(&c, "avg_cores") - 2.1) < 1e-9);        /* mean of means */
    assert_true(fabs(insight_fig(&c, "peak_cores") - 3.1 * 1.5) < 1e-9); /* max of peaks */
    assert_true(fabs(insight_fig(&c, "peak_pss_bytes") - 1500 * MIB) < 1e-3);
    assert_true(fabs(insight_fig(&c, "avg_pss_bytes") - (800 + 1500 + 1200) / 3.0 / 2 * MIB) < 1e-3);
    assert_true(fabs(c.duration_secs - (30 + 10 + 10) / 3.0) < 1e-9);
    assert_true(insight_fig(&c, "disk_read_bytes") == 5e6); /* totals: the largest */
    assert_true(c.has_host && c.net_in_bytes == 6e6);
    assert_true(insight_fig(&c, "peak_rss_bytes") == 2000 * MIB);
    assert_int_equal(c.samples, 30);
    assert_true(insight_has(&c, "gpu_avg_usage"));
    assert_true(fabs(insight_fig(&c, "gpu_avg_usage") - 0.6) < 1e-9); /* over the runs with a GPU backend */
    assert_true(fabs(insight_fig(&c, "gpu_avg_vram_bytes") - 1500 * MIB) < 1e-3);
    assert_true(insight_fig(&c, "gpu_peak_usage") == 1.6 && insight_fig(&c, "gpu_peak_vram_bytes") == 2500 * MIB);
    struct insight_rec r;
    insight_recommend(&c, &r);
    assert_int_equal(r.cpus, 2);          /* round(2.1) */
    assert_int_equal(r.memory_mib, 2048); /* 1500 x 1.2 = 1800 */
    assert_int_equal(r.gpus, 2);          /* round(1.6) */
    assert_int_equal(r.vram_mib, 3072);   /* 2500 x 1.2 = 3000 */
    /* One run alone is itself. */
    insight_stats_combine(runs, 1, &c);
    assert_true(insight_fig(&c, "avg_cores") == 1.2 && insight_fig(&c, "peak_pss_bytes") == 800 * MIB &&
                insight_fig(&c, "gpu_peak_usage") == 0.9);
}

static void test_requests(void **state)
{
    (void)state;
    char buf[512];
    struct insight_rec r = {.cpus = 2, .memory_mib = 1024};
    insight_rec_people(&r, buf, sizeof(buf));
    assert_string_equal(buf, "2 vCPUs, 1024 MiB memory");
    insight_rec_slurm(&r, buf, sizeof(buf));
    assert_string_equal(buf, "--cpus-per-task=2 --mem=1024M");
    insight_rec_metaflow(&r, buf, sizeof(buf));
    assert_string_equal(buf, "@resources(cpu=2, memory=1024)");
    insight_rec_kubernetes(&r, "", buf, sizeof(buf));
    assert_string_equal(buf, "resources:\n  requests:\n    cpu: \"2\"\n    memory: 1024Mi\n");
    r = (struct insight_rec){.cpus = 1, .memory_mib = 5120, .gpus = 1, .vram_mib = 4096, .cpus_python = 1};
    insight_rec_people(&r, buf, sizeof(buf));
    assert_string_equal(buf, "1 vCPU, 5120 MiB memory, 1 GPU with 4096 MiB VRAM");
    insight_rec_slurm(&r, buf, sizeof(buf));
    assert_string_equal(buf, "--cpus-per-task=1 --mem=5120M --gres=gpu:1");
    insight_rec_metaflow(&r, buf, sizeof(buf));
    assert_string_equal(buf, "@resources(cpu=1, memory=5120, gpu=1)");
    insight_rec_kubernetes(&r, "  ", buf, sizeof(buf));
    assert_string_equal(buf, "  resources:\n    requests:\n      cpu: \"1\"\n      memory: 5120Mi\n"
                             "      nvidia.com/gpu: 1\n    limits:\n      nvidia.com/gpu: 1\n");
    struct json_object *o = insight_rec_json(&r);
    assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                        "{\"cpus\":1,\"cpus_python\":1,\"memory_mib\":5120,\"gpus\":1,\"vram_mib\":4096,"
                        "\"slurm\":\"--cpus-per-task=1 --mem=5120M --gres=gpu:1\",\"kubernetes\":{\"requests\":"
                        "{\"cpu\":\"1\",\"memory\":\"5120Mi\",\"nvidia.com/gpu\":1},\"limits\":{\"nvidia.com/gpu\":1}},"
                        "\"metaflow\":\"@resources(cpu=1, memory=5120, gpu=1)\"}");
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_memory_python_cases),
        cmocka_unit_test(test_round_half_even_like_python),
        cmocka_unit_test(test_single_run),
        cmocka_unit_test(test_a_sustained_phase_asks_for_its_cores),
        cmocka_unit_test(test_gpus),
        cmocka_unit_test(test_history_of_three_runs),
        cmocka_unit_test(test_requests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
