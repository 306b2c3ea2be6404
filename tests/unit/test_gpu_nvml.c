/* The NVIDIA path against the fake libnvidia-ml.so.1 (tests/gpu/fake_nvml.c),
 * loaded through the real dlopen path: device fields, per-field degradation,
 * process attribution with real PIDs, energy share, lost and hung devices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../gpu/gpu_test.h"
#include "../gpu/nvml_test.h"
#include "collect/gpu/gpu.h"
#include "collect/gpu/gpu_nvml.h"
#include "system/log.h"
#include "rt/sample_csv.h"
#include "rt/sample_json.h"

#include <math.h>

#define GIB (1024ULL * RT_MIB)

#define UUID0 "GPU-0d5e3c4a-1111-2222-3333-444455556666"
#define UUID1 "GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff"

/* Test processes: job A = a1 + a2 (+ the test itself, on no GPU), x and b
 * belong to nobody / job B. */
static pid_t a1, a2, x, b;

static int setup(void **state)
{
    (void)state;
    a1 = spawn_sleeper();
    a2 = spawn_sleeper();
    x = spawn_sleeper();
    b = spawn_sleeper();
    config_create();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    reap(a1);
    reap(a2);
    reap(x);
    reap(b);
    unlink(config_path);
    return 0;
}

/* Two GPUs: the first with everything, an energy counter and three
 * processes (a2 in both lists); the second without power or energy. */
static void write_two_gpus(const char *extra_dev1)
{
    char buf[4096];
    snprintf(buf, sizeof(buf),
             "driver=550.54.15\n"
             "device\n name=NVIDIA H100 80GB HBM3\n uuid=" UUID0 "\n pci=00000000:17:00.0\n"
             " util=10,30,50,70\n mem_total=85899345920\n mem_used=4294967296\n temp=41\n power_mw=250500\n"
             " clock=1755\n energy_mj=1000000\n energy_step_mj=500\n"
             "process\n pid=%d\n vram=1073741824\n sm=30\n list=compute\n"
             "process\n pid=%d\n vram=536870912\n sm=20\n list=both\n"
             "process\n pid=%d\n vram=1073741824\n sm=50\n list=compute\n"
             "device\n name=NVIDIA A100-SXM4-40GB\n uuid=" UUID1 "\n pci=00000000:65:00.0\n util=25\n"
             " mem_total=42949672960\n mem_used=2147483648\n temp=55\n clock=1410\n ret.power=3\n ret.energy=3\n%s"
             "process\n pid=%d\n vram=268435456\n sm=50\n list=graphics\n"
             "process\n pid=%d\n vram=134217728\n sm=10\n list=compute\n",
             (int)a1, (int)a2, (int)x, extra_dev1 ? extra_dev1 : "", (int)b, (int)a1);
    write_config(buf);
}

static const struct rt_gpu *find_gpu(const struct rt_sample *s, const char *uuid)
{
    for (size_t i = 0; i < s->n_gpus; i++)
        if (strcmp(s->gpus[i].uuid, uuid) == 0)
            return &s->gpus[i];
    return NULL;
}

static const char *detail(const struct rt_gpu *g, const char *key)
{
    for (size_t i = 0; i < g->n_detail; i++)
        if (strcmp(g->detail[i].key, key) == 0)
            return g->detail[i].value;
    return NULL;
}

static void test_devices_and_host_usage(void **state)
{
    (void)state;
    write_two_gpus(NULL);
    struct rt_gpu_options o = fast_options();
    struct rt_gpu_collector *c = new_collector(&o);
    assert_true(rt_gpu_collector_wait_polls(c, 2, DEADLINE_SECS)); /* past the first, single reading */
    struct rt_sample s;
    rt_sample_init(&s);
    rt_gpu_collect(c, &s);

    assert_true(s.has_gpu_backend);
    assert_int_equal(s.n_gpus, 2);
    const struct rt_gpu *g = &s.gpus[0];
    assert_string_equal(g->uuid, UUID0);
    assert_string_equal(g->name, "NVIDIA H100 80GB HBM3");
    assert_string_equal(g->host_id, "0");
    assert_string_equal(g->vendor, "nvidia");
    assert_string_equal(detail(g, "pci_bus_id"), "00000000:17:00.0");
    assert_string_equal(detail(g, "driver_version"), "550.54.15");
    assert_double_equal(g->utilization_pct, 40.0, 1e-9); /* mean of 4 readings of 10,30,50,70 */
    assert_int_equal(g->vram_total_bytes, 80 * GIB);
    assert_int_equal(g->vram_used_bytes, 4 * GIB);
    assert_double_equal(g->vram_used_pct, 5.0, 1e-9);
    assert_true(g->has_temperature);
    assert_int_equal(g->temperature_celsius, 41);
    assert_true(g->has_power);
    assert_double_equal(g->power_watts, 250.5, 1e-9);
    assert_true(g->has_frequency);
    assert_int_equal(g->frequency_mhz, 1755);
    assert_true(g->has_energy);
    /* 1000 J plus 0.5 J per reading of the counter */
    double steps = (g->energy_joules - 1000.0) / 0.5;
    assert_true(steps >= 1 && fabs(steps - round(steps)) < 1e-6);

    g = &s.gpus[1];
    assert_string_equal(g->uuid, UUID1);
    assert_string_equal(g->host_id, "1");
    assert_double_equal(g->utilization_pct, 25.0, 1e-9);
    assert_int_equal(g->vram_total_bytes, 40 * GIB);
    assert_int_equal(g->vram_used_bytes, 2 * GIB);
    assert_int_equal(g->temperature_celsius, 55);
    assert_false(g->has_power); /* NOT_SUPPORTED: only this field degrades */
    assert_false(g->has_energy);
    assert_true(g->has_frequency);
    assert_int_equal(g->frequency_mhz, 1410);

    /* Host-wide: every process once (a2 is in both lists of GPU 0). */
    assert_true(s.job.gates & RT_GATE_GPU);
    assert_double_equal((double)s.job.gpu_vram_bytes / RT_MIB, 1024 + 512 + 1024 + 256 + 128, 1e-9);
    assert_double_equal(s.job.gpu_usage, (30 + 20 + 50) / 100.0 + (50 + 10) / 100.0, 1e-9);
    assert_int_equal(s.job.gpu_utilized, 2);

    /* The versioned entry points were used (_v2: the fake's _v3 writes 32-byte
     * entries like drivers 535.43-535.86), and the buffers grew on demand. */
    assert_true(fake_counter("libnvidia-ml.so.1", "compute_v2") > 0);
    assert_true(fake_counter("libnvidia-ml.so.1", "graphics_v2") > 0);
    assert_int_equal(fake_counter("libnvidia-ml.so.1", "compute_v3"), 0);
    assert_int_equal(fake_counter("libnvidia-ml.so.1", "compute_v1"), 0);
    assert_true(fake_counter("libnvidia-ml.so.1", "pci_v3") > 0);
    assert_true(fake_counter("libnvidia-ml.so.1", "insufficient_size") > 0);

    /* what the writers make of it */
    struct json_object *root = rt_sample_to_json(&s), *v;
    struct json_object *gpus = json_object_object_get(root, "gpu");
    assert_int_equal(json_object_array_length(gpus), 2);
    struct json_object *g1 = json_object_array_get_idx(gpus, 1);
    assert_true(json_object_object_get_ex(g1, "power_watts", &v) && v == NULL); /* null, not 0 */
    assert_string_equal(json_object_get_string(json_object_object_get(g1, "vendor")), "nvidia");
    assert_int_equal(json_object_get_int64(json_object_object_get(json_object_array_get_idx(gpus, 0),
                                                                   "temperature_celsius")), 41);
    struct json_object *cpu = json_object_object_get(root, "cpu");
    assert_double_equal(json_object_get_double(json_object_object_get(cpu, "process_gpu_vram_mib")), 2944, 1e-9);
    json_object_put(root);
    char row[1024];
    rt_sample_to_csv(&s, row, sizeof(row));
    assert_non_null(strstr(row, ",0.6500,6144.0000,2,")); /* system_gpu_usage, _vram_mib, _utilized */

    rt_sample_free(&s);
    free_collector(c);
}

static void collect_and_use(struct rt_gpu_collector *c, struct rt_sample *s, struct rt_gpu_job *j,
                            const int32_t *pids, size_t n, struct rt_process_gpu *out)
{
    rt_sample_reset(s);
    rt_gpu_collect(c, s);
    rt_gpu_job_usage(c, j, pids, n, 1.0, out);
}

static void test_job_usage_and_energy(void **state)
{
    (void)state;
    write_two_gpus(NULL);
    struct rt_gpu_options o = fast_options();
    struct rt_gpu_collector *c = new_collector(&o);
    struct rt_sample s;
    rt_sample_init(&s);
    struct rt_gpu_job *ja = rt_gpu_job_new(), *jb = rt_gpu_job_new();
    int32_t job_a[] = {getpid(), a2, a1}, job_b[] = {b};
    struct rt_process_gpu pa, pb;

    collect_and_use(c, &s, ja, job_a, 3, &pa);
    double e_first = find_gpu(&s, UUID0)->energy_joules;
    rt_gpu_job_usage(c, jb, job_b, 1, 1.0, &pb);
    /* Job A: a1 + a2 on GPU 0 (a2 once), a1 on GPU 1. */
    assert_true(pa.present);
    assert_double_equal(pa.vram_mib, 1024 + 512 + 128, 1e-9);
    assert_double_equal(pa.usage, 0.5 + 0.1, 1e-9);
    assert_int_equal(pa.utilized, 2);
    assert_true(pb.present);
    assert_double_equal(pb.vram_mib, 256, 1e-9);
    assert_double_equal(pb.usage, 0.5, 1e-9);
    assert_int_equal(pb.utilized, 1);
    struct rt_gpu_job *empty = rt_gpu_job_new(); /* a job whose processes are all gone */
    struct rt_process_gpu pe;
    rt_gpu_job_usage(c, empty, NULL, 0, 1.0, &pe);
    assert_true(pe.present);
    assert_int_equal(pe.utilized, 0);
    assert_double_equal(pe.vram_mib, 0, 1e-12);
    rt_gpu_job_free(empty);

    for (int i = 0; i < 2; i++) {
        assert_true(rt_gpu_collector_wait_polls(c, 2, DEADLINE_SECS));
        collect_and_use(c, &s, ja, job_a, 3, &pa);
        rt_gpu_job_usage(c, jb, job_b, 1, 1.0, &pb);
    }
    double e_last = find_gpu(&s, UUID0)->energy_joules;
    assert_true(e_last > e_first);

    struct rt_gpu_job_summary sum;
    rt_gpu_job_summary(ja, &sum);
    assert_true(sum.present);
    assert_int_equal(sum.samples, 3);
    assert_int_equal(sum.peak_vram_bytes, (1024 + 512 + 128) * RT_MIB);
    assert_double_equal(sum.avg_usage, 0.6, 1e-9);
    assert_double_equal(sum.max_usage, 0.6, 1e-9);
    assert_int_equal(sum.n_gpus, 2);
    assert_string_equal(sum.gpu_uuids[0], UUID0);
    assert_string_equal(sum.gpu_uuids[1], UUID1);
    /* GPU 0 ran 100 % SM over its processes, 50 of them job A's: half of its
     * energy. GPU 1 has no energy counter and no power reading. */
    assert_true(sum.has_energy);
    assert_double_equal(sum.energy_joules, 0.5 * (e_last - e_first), 1e-6);

    rt_gpu_job_summary(jb, &sum);
    assert_int_equal(sum.peak_vram_bytes, 256 * RT_MIB);
    assert_int_equal(sum.n_gpus, 1);
    assert_string_equal(sum.gpu_uuids[0], UUID1);
    assert_false(sum.has_energy);
    assert_double_equal(sum.energy_joules, 0, 1e-12);

    rt_gpu_job_free(ja);
    rt_gpu_job_free(jb);
    rt_sample_free(&s);
    free_collector(c);
}

/* Without an energy counter the job's share comes from power integrated by
 * the poller: bounded by power x elapsed time. */
static void test_energy_from_power(void **state)
{
    (void)state;
    char buf[512];
    snprintf(buf, sizeof(buf),
             "device\n name=NVIDIA T4\n uuid=GPU-t4\n pci=00000000:3b:00.0\n util=50\n mem_total=16106127360\n"
             " mem_used=1073741824\n power_mw=100000\n ret.energy=3\n"
             "process\n pid=%d\n vram=1073741824\n sm=40\n", (int)a1);
    write_config(buf);
    struct rt_gpu_options o = fast_options();
    struct rt_gpu_collector *c = new_collector(&o);
    struct rt_sample s;
    rt_sample_init(&s);
    struct rt_gpu_job *j = rt_gpu_job_new();
    int32_t pids[] = {a1};
    struct rt_process_gpu p;
    collect_and_use(c, &s, j, pids, 1, &p);
    double t0 = mono_secs();
    assert_false(s.gpus[0].has_energy);
    for (int i = 0; i < 3; i++) {
        assert_true(rt_gpu_collector_wait_polls(c, 2, DEADLINE_SECS));
        collect_and_use(c, &s, j, pids, 1, &p);
    }
    double elapsed = mono_secs() - t0;
    struct rt_gpu_job_summary sum;
    rt_gpu_job_summary(j, &sum);
    assert_true(sum.has_energy);
    /* the only process: share 1; 100 W over the polls between the calls */
    assert_true(sum.energy_joules > 0);
    assert_true(sum.energy_joules <= 100.0 * (elapsed + 2 * o.poll_interval_secs) + 1e-9);
    rt_gpu_job_free(j);
    rt_sample_free(&s);
    free_collector(c);
}

static bool only_gpu0(const struct rt_sample *s) { return s->n_gpus == 1 && strcmp(s->gpus[0].uuid, UUID0) == 0; }
static bool both_gpus(const struct rt_sample *s) { return s->n_gpus == 2; }
static bool no_gpus(const struct rt_sample *s) { return s->n_gpus == 0; }
static bool one_gpu(const struct rt_sample *s) { return s->n_gpus == 1; }

static void test_lost_device_left_out_and_back(void **state)
{
    (void)state;
    write_two_gpus(NULL);
    events_start();
    struct rt_gpu_options o = fast_options();
    struct rt_gpu_collector *c = new_collector(&o);
    struct rt_sample s;
    rt_sample_init(&s);

    fake_control("fake_nvml_set_lost", 1, 1);
    assert_true(collect_until(c, &s, only_gpu0));
    struct rt_gpu_job *j = rt_gpu_job_new();
    int32_t pids[] = {b};
    struct rt_process_gpu p;
    rt_gpu_job_usage(c, j, pids, 1, 1.0, &p);
    assert_true(p.present); /* the backend is still there, the device is not */
    assert_int_equal(p.utilized, 0);
    assert_double_equal(p.vram_mib, 0, 1e-12);
    assert_double_equal((double)s.job.gpu_vram_bytes / RT_MIB, 1024 + 512 + 1024, 1e-9);
    /* retries keep failing without a message each time */
    for (int i = 0; i < 30; i++) {
        sleep_ms(20);
        rt_sample_reset(&s);
        rt_gpu_collect(c, &s);
        assert_true(only_gpu0(&s));
    }
    fake_control("fake_nvml_set_lost", 1, 0);
    assert_true(collect_until(c, &s, both_gpus));
    /* One GPU-lost record, and "appeared" at the start and when it is back
     * (said by its thread just after the sampler sees it). */
    assert_true(events_until("MESSAGE_ID=" RT_MSGID_GPU_APPEARED " MESSAGE=GPU 1 appeared", 2));
    char *ev = events_text();
    assert_int_equal(count_str(ev, "MESSAGE_ID=" RT_MSGID_GPU_LOST " MESSAGE=GPU 1 lost: nvidia NVIDIA A100-SXM4-40GB (" UUID1
                                   "): GPU is lost; left out of samples"),
                     1);
    assert_int_equal(count_str(ev, "MESSAGE_ID=" RT_MSGID_GPU_LOST), 1);
    assert_int_equal(count_str(ev, "MESSAGE_ID=" RT_MSGID_GPU_APPEARED " MESSAGE=GPU 1 appeared: nvidia NVIDIA A100-SXM4-40GB (" UUID1 ")"), 2);
    assert_int_equal(count_str(ev, "MESSAGE_ID=" RT_MSGID_GPU_APPEARED " MESSAGE=GPU 0 appeared: nvidia NVIDIA H100 80GB HBM3 (" UUID0 ")"), 1);
    free(ev);
    events_cleanup();
    rt_gpu_job_free(j);
    rt_sample_free(&s);
    free_collector(c);
}

/* A device that starts failing after 20 polls and never recovers. */
static void test_fails_mid_run(void **state)
{
    (void)state;
    write_config("device\n name=NVIDIA L4\n uuid=GPU-l4\n pci=00000000:01:00.0\n util=5\n"
                 " mem_total=24159191040\n mem_used=0\n lost_after=20\n");
    events_start();
    struct rt_gpu_options o = fast_options();
    struct rt_gpu_collector *c = new_collector(&o);
    struct rt_sample s;
    rt_sample_init(&s);
    rt_gpu_collect(c, &s);
    assert_int_equal(s.n_gpus, 1); /* the first poll worked */
    assert_true(collect_until(c, &s, no_gpus));
    assert_true(s.has_gpu_backend);
    assert_true(s.job.gates & RT_GATE_GPU);
    assert_int_equal(s.job.gpu_utilized, 0);
    sleep_ms(500); /* several retries */
    rt_sample_reset(&s);
    rt_gpu_collect(c, &s);
    assert_int_equal(s.n_gpus, 0);
    char *ev = events_text();
    assert_int_equal(count_str(ev, "MESSAGE_ID=" RT_MSGID_GPU_LOST " MESSAGE=GPU 0 lost: nvidia NVIDIA L4 (GPU-l4): "), 1);
    assert_int_equal(count_str(ev, "MESSAGE_ID=" RT_MSGID_GPU_LOST), 1); /* not once per retry */
    free(ev);
    events_cleanup();
    rt_sample_free(&s);
    free_collector(c);
}

static void test_hung_call_never_blocks_sampler(void **state)
{
    (void)state;
    write_two_gpus(NULL);
    events_start();
    struct rt_gpu_options o = fast_options();
    struct rt_gpu_collector *c = new_collector(&o);
    struct rt_sample s;
    rt_sample_init(&s);
    /* Both seen first: a hang in GPU 1's first poll (a busy machine starts
     * its thread late) would lose a device nobody saw, with no name. */
    assert_true(collect_until(c, &s, both_gpus));
    capture_start();
    fake_control("fake_nvml_set_hang", 1, 4000);
    double worst = 0, end = mono_secs() + DEADLINE_SECS;
    bool hidden = false;
    while (!hidden && mono_secs() < end) {
        double t = mono_secs();
        rt_sample_reset(&s);
        rt_gpu_collect(c, &s);
        if (mono_secs() - t > worst)
            worst = mono_secs() - t;
        hidden = only_gpu0(&s);
        sleep_ms(10);
    }
    assert_true(hidden);
    assert_true(worst < 0.5); /* copies a snapshot, never waits for the device */
    assert_true(collect_until(c, &s, both_gpus));
    /* Its thread logs that it answers, then says it appeared: both after
     * the sampler sees it again. */
    assert_true(events_until("MESSAGE_ID=" RT_MSGID_GPU_APPEARED " MESSAGE=GPU 1 appeared", 2));
    char *log = capture_end();
    assert_int_equal(count_str(log, "NVIDIA GPU 1 (" UUID1 ") answers again"), 1);
    free(log);
    char *ev = events_text();
    assert_int_equal(count_str(ev, "MESSAGE_ID=" RT_MSGID_GPU_LOST " MESSAGE=GPU 1 lost: nvidia NVIDIA A100-SXM4-40GB (" UUID1
                                   "): not responding for "),
                     1);
    assert_int_equal(count_str(ev, "MESSAGE_ID=" RT_MSGID_GPU_APPEARED " MESSAGE=GPU 1 appeared"), 2);
    free(ev);
    events_cleanup();
    rt_sample_free(&s);
    free_collector(c);
}

static void test_init_failure_is_no_gpu(void **state)
{
    (void)state;
    write_config("init=9\ndevice\n name=ghost\n");
    capture_start();
    struct rt_gpu_options o = fast_options();
    struct rt_gpu_collector *c = new_collector(&o);
    struct rt_sample s;
    rt_sample_init(&s);
    for (int i = 0; i < 3; i++) {
        rt_sample_reset(&s);
        rt_gpu_collect(c, &s);
    }
    assert_false(s.has_gpu_backend);
    assert_int_equal(s.n_gpus, 0);
    assert_null(s.gpus);
    assert_false(s.job.gates & RT_GATE_GPU);
    struct rt_gpu_job *j = rt_gpu_job_new();
    int32_t pids[] = {a1};
    struct rt_process_gpu p;
    rt_gpu_job_usage(c, j, pids, 1, 1.0, &p);
    assert_false(p.present);
    struct rt_gpu_job_summary sum;
    rt_gpu_job_summary(j, &sum);
    assert_false(sum.present);
    rt_gpu_job_free(j);
    rt_sample_free(&s);
    free_collector(c);
    char *log = capture_end();
    assert_string_equal(log, ""); /* Driver Not Loaded is an ordinary GPU-less host */
    free(log);
}

/* nvmlInit hanging: rt_gpu_collector_new returns at its bound, the backend
 * appears once init completes. */
static void test_init_hang_bounded(void **state)
{
    (void)state;
    write_config("init_hang_ms=3000\ndevice\n name=slow\n uuid=GPU-slow\n util=1\n");
    struct rt_gpu_options o = fast_options();
    o.start_wait_secs = 0.2;
    double t = mono_secs();
    struct rt_gpu_collector *c = new_collector(&o);
    assert_true(mono_secs() - t < 2.5);
    struct rt_sample s;
    rt_sample_init(&s);
    rt_gpu_collect(c, &s);
    assert_false(s.has_gpu_backend);
    assert_true(collect_until(c, &s, one_gpu));
    assert_true(s.has_gpu_backend);
    assert_string_equal(s.gpus[0].uuid, "GPU-slow");
    rt_sample_free(&s);
    free_collector(c);
}

/* An old driver: only the plain entry points (v1 process struct, v1 PCI). */
static void test_old_driver_fallbacks(void **state)
{
    (void)state;
    const char *old = getenv("RT_FAKE_NVML_OLD");
    assert_non_null(old);
    write_two_gpus(NULL);
    struct rt_gpu_options o = fast_options();
    o.nvml_library = old;
    struct rt_gpu_collector *c = new_collector(&o);
    assert_true(rt_gpu_collector_wait_polls(c, 1, DEADLINE_SECS));
    struct rt_sample s;
    rt_sample_init(&s);
    rt_gpu_collect(c, &s);
    assert_int_equal(s.n_gpus, 2);
    assert_string_equal(detail(&s.gpus[0], "pci_bus_id"), "0000:17:00.0"); /* legacy 16-byte field */
    assert_double_equal((double)s.job.gpu_vram_bytes / RT_MIB, 1024 + 512 + 1024 + 256 + 128, 1e-9);
    struct rt_gpu_job *j = rt_gpu_job_new();
    int32_t pids[] = {a1, a2};
    struct rt_process_gpu p;
    rt_gpu_job_usage(c, j, pids, 2, 1.0, &p);
    assert_double_equal(p.vram_mib, 1024 + 512 + 128, 1e-9);
    assert_int_equal(p.utilized, 2);
    assert_true(fake_counter(old, "compute_v1") > 0);
    assert_true(fake_counter(old, "graphics_v1") > 0);
    assert_true(fake_counter(old, "pci_v1") > 0);
    rt_gpu_job_free(j);
    rt_sample_free(&s);
    free_collector(c);
}

/* Freeing the collector while a device call hangs returns at its bound; the
 * stuck thread cleans up (nvmlShutdown) when the call returns. Runs last. */
static void test_free_while_hung(void **state)
{
    (void)state;
    write_two_gpus(NULL);
    struct rt_gpu_options o = fast_options();
    struct rt_gpu_collector *c = new_collector(&o);
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD); /* keep it loaded to read counters */
    assert_non_null(h);
    unsigned long (*counter)(const char *) = (unsigned long (*)(const char *))dlsym(h, "fake_nvml_counter");
    struct rt_sample s;
    rt_sample_init(&s);
    fake_control("fake_nvml_set_hang", 1, 5000);
    capture_start();
    assert_true(collect_until(c, &s, only_gpu0));
    double t = mono_secs();
    free_collector(c);
    assert_true(mono_secs() - t < 4.0);
    double end = mono_secs() + DEADLINE_SECS;
    while (counter("shutdown") == 0 && mono_secs() < end)
        sleep_ms(20);
    assert_int_equal(counter("shutdown"), 1);
    free(capture_end());
    rt_sample_free(&s);
    dlclose(h);
}

/* A GPU whose driver may be slow to give energy and MIG mode (extra:
 * slow.*, ret.*), with an energy counter of base_j that grows by step_j a
 * call, and a power reading. */
static void write_slow_gpu(const char *extra, unsigned power_w, unsigned step_j, unsigned base_j)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "device\n name=NVIDIA H200\n uuid=GPU-slow\n pci=00000000:18:00.0\n util=50\n mem_total=150754820096\n"
             " mem_used=1073741824\n power_mw=%u\n energy_mj=%u000\n energy_step_mj=%u\n mig_capable=1\n mig=0\n%s"
             "process\n pid=%d\n vram=1073741824\n sm=50\n",
             power_w * 1000, base_j, step_j * 1000, extra, (int)a1);
    write_config(buf);
}

/* The energy published after the next poll, never less than before. */
static double next_energy(struct rt_gpu_collector *c, struct rt_sample *s, double before)
{
    assert_true(rt_gpu_collector_wait_polls(c, 1, DEADLINE_SECS));
    rt_sample_reset(s);
    rt_gpu_collect(c, s);
    const struct rt_gpu *g = find_gpu(s, "GPU-slow");
    assert_non_null(g);
    assert_true(g->has_energy);
    assert_true(g->energy_joules >= before);
    return g->energy_joules;
}

static unsigned long calls(const char *name) { return fake_counter("libnvidia-ml.so.1", name); }

/* A driver slow to give a figure that changes slowly (an H200 took 3-15 ms
 * for the energy counter, 0.3 ms for MIG mode: docs/performance.md) is
 * asked for it every 10th poll. Energy is the last reading plus power x time
 * since, also while the counter fails, and never goes back, unless the
 * counter itself does. A driver that answers fast again is asked every
 * poll. */
static void test_slow_queries_spaced(void **state)
{
    (void)state;
    const char *slow = " slow.energy=400\n slow.mig=400\n";
    write_slow_gpu(slow, 0, 50, 1000); /* no power: between readings, energy stays at the last */
    struct rt_gpu_options o = fast_options();
    struct rt_gpu_collector *c = new_collector(&o);
    struct rt_sample s;
    rt_sample_init(&s);
    assert_true(rt_gpu_collector_wait_polls(c, 1, DEADLINE_SECS));
    unsigned long energy0 = calls("energy"), mig0 = calls("mig_mode");
    double t0 = mono_secs(), e = 0;
    for (int i = 0; i < 40; i++) {
        e = next_energy(c, &s, e);
        double n = (e - 1000.0) / 50.0; /* a reading of the counter, exactly */
        assert_double_equal(n, round(n), 1e-9);
        assert_true(n >= 1 && n <= (double)calls("energy"));
    }
    /* 40 polls or more: a reading every 10, no more often than 10 polls' time allows */
    double most = (mono_secs() - t0) / (GPU_SPACED_POLLS * o.poll_interval_secs) + 2;
    assert_true(calls("energy") - energy0 >= 3 && calls("energy") - energy0 <= most);
    assert_true(calls("mig_mode") - mig0 >= 3 && calls("mig_mode") - mig0 <= most);

    /* 100 W, the counter failing, then standing still: energy grows by power, and a
     * reading below the estimate does not take it back */
    double counter = e;
    t0 = mono_secs();
    write_slow_gpu(" slow.energy=400\n slow.mig=400\n ret.energy=999\n", 100, 0, 1000);
    for (int i = 0; i < 15; i++)
        e = next_energy(c, &s, e);
    assert_true(e > counter);
    write_slow_gpu(slow, 100, 0, 1000);
    for (int i = 0; i < 25; i++)
        e = next_energy(c, &s, e);
    assert_true(e <= counter + 100.0 * (mono_secs() - t0 + 0.5));

    /* fast again, and a counter 1000 J lower (a driver reload): taken as it is */
    write_slow_gpu("", 0, 0, 0);
    assert_true(rt_gpu_collector_wait_polls(c, GPU_SPACED_POLLS + 1, DEADLINE_SECS));
    energy0 = calls("energy");
    mig0 = calls("mig_mode");
    assert_true(rt_gpu_collector_wait_polls(c, 10, DEADLINE_SECS));
    assert_true(calls("energy") - energy0 >= 8);
    assert_true(calls("mig_mode") - mig0 >= 8);
    double back = next_energy(c, &s, 0);
    assert_true(back <= e - 1000.0 + 1e-6);
    assert_double_equal(back / 50.0, round(back / 50.0), 1e-9);
    rt_sample_free(&s);
    free_collector(c);
}

static const struct rt_gpu_dev *only_device(struct rt_gpu_collector *c, struct rt_sample *s)
{
    rt_sample_reset(s);
    rt_gpu_collect(c, s);
    static struct rt_gpu_devref ref;
    assert_int_equal(rt_gpu_devices(c, &ref, 1), 1);
    return ref.d;
}

/* A GPU with no process on it and whose every reading since the last poll
 * was 0 % has nothing to attribute: the driver is not asked for process
 * shares (milliseconds on an H200). A process listed there is asked for even
 * at 0 %: its kernels may have run between the readings. */
static void test_idle_gpu_not_asked_for_process_shares(void **state)
{
    (void)state;
    const char *idle = "device\n name=NVIDIA H200\n uuid=GPU-idle\n util=0\n mem_total=150754820096\n"
                       " mem_used=0\n";
    write_config(idle);
    struct rt_gpu_options o = fast_options();
    struct rt_gpu_collector *c = new_collector(&o);
    struct rt_sample s;
    rt_sample_init(&s);
    assert_true(rt_gpu_collector_wait_polls(c, 1, DEADLINE_SECS));
    unsigned long asked = calls("proc_util");
    assert_true(rt_gpu_collector_wait_polls(c, 5, DEADLINE_SECS));
    const struct rt_gpu_dev *d = only_device(c, &s);
    assert_true(d->has_proc_util);
    assert_int_equal(d->n_procs, 0);
    assert_int_equal(calls("proc_util"), asked);

    char buf[512];
    snprintf(buf, sizeof(buf), "%s process\n pid=%d\n vram=1073741824\n sm=5\n", idle, (int)a1);
    write_config(buf);
    for (double end = mono_secs() + DEADLINE_SECS;; sleep_ms(10)) {
        d = only_device(c, &s);
        if (d->n_procs == 1 && d->procs[0].sm_pct == 5)
            break;
        assert_true(mono_secs() < end);
    }
    assert_true(calls("proc_util") > asked);
    rt_sample_free(&s);
    free_collector(c);
}

int main(void)
{
    rt_log_init(RT_LOG_STDERR, LOG_INFO);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_devices_and_host_usage, test_teardown),
        cmocka_unit_test_teardown(test_job_usage_and_energy, test_teardown),
        cmocka_unit_test_teardown(test_energy_from_power, test_teardown),
        cmocka_unit_test_teardown(test_lost_device_left_out_and_back, test_teardown),
        cmocka_unit_test_teardown(test_fails_mid_run, test_teardown),
        cmocka_unit_test_teardown(test_hung_call_never_blocks_sampler, test_teardown),
        cmocka_unit_test_teardown(test_init_failure_is_no_gpu, test_teardown),
        cmocka_unit_test_teardown(test_init_hang_bounded, test_teardown),
        cmocka_unit_test_teardown(test_free_while_hung, test_teardown),
        cmocka_unit_test_teardown(test_old_driver_fallbacks, test_teardown),
        cmocka_unit_test_teardown(test_slow_queries_spaced, test_teardown),
        cmocka_unit_test_teardown(test_idle_gpu_not_asked_for_process_shares, test_teardown),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
