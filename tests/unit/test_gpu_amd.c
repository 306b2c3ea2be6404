/* The AMD path against fixture trees (tests/fixtures/gpu/amd): devices from
 * sysfs, job attribution from /proc/PID/fdinfo, a removed device, and the
 * fdinfo parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../gpu/gpu_test.h"
#include "collect/gpu/gpu.h"
#include "collect/gpu/gpu_internal.h"
#include "system/log.h"

#include <sys/stat.h>

#define GIB (1024ULL * RT_MIB)

static struct rt_gpu_collector *current; /* freed by the teardown after a failure */
#define CARD0 "0000:03:00.0"
#define CARD2_UUID "8e5d2a7c3f1b4e09"
#define CARD3 "0000:63:00.0"

static char fixture_sys[PATH_MAX], fixture_proc[PATH_MAX];

/* A writable copy of a fixture tree (symlinks kept). */
static char *copy_tree(const char *src)
{
    char *dir = rt_xstrdup("/tmp/rt-gpu-amd-XXXXXX");
    assert_non_null(mkdtemp(dir));
    char *cmd = rt_xasprintf("cp -a '%s/.' '%s/'", src, dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    return dir;
}

static void remove_tree(char *dir)
{
    char *cmd = rt_xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(dir);
}

/* Rewrite the drm-engine-gfx counter of one fdinfo file. */
static void set_gfx(const char *proc, const char *rel, uint64_t ns)
{
    char path[PATH_MAX], buf[4096], out[4200];
    snprintf(path, sizeof(path), "%s/%s", proc, rel);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *key = strstr(buf, "drm-engine-gfx:");
    assert_non_null(key);
    char *eol = strchr(key, '\n');
    *key = '\0';
    snprintf(out, sizeof(out), "%sdrm-engine-gfx:\t%llu ns%s", buf, (unsigned long long)ns, eol ? eol : "");
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(out, f);
    fclose(f);
}

/* Add an amdgpu client fd to a process of a proc tree copy. */
static void add_client(const char *proc, int pid, int fd, unsigned client, const char *pdev, const char *vram,
                       uint64_t gfx_ns)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%d", proc, pid);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/%d/fd", proc, pid);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/%d/fdinfo", proc, pid);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/%d/fd/%d", proc, pid, fd);
    assert_int_equal(symlink("/dev/dri/renderD129", path), 0);
    snprintf(path, sizeof(path), "%s/%d/fdinfo/%d", proc, pid, fd);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "pos:\t0\nflags:\t02100002\ndrm-driver:\tamdgpu\ndrm-client-id:\t%u\ndrm-pdev:\t%s\n"
               "drm-memory-vram:\t%s\ndrm-engine-gfx:\t%llu ns\n", client, pdev, vram, (unsigned long long)gfx_ns);
    fclose(f);
}

static void remove_fd(const char *proc, int pid, int fd)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%d/fd/%d", proc, pid, fd);
    assert_int_equal(unlink(path), 0);
    snprintf(path, sizeof(path), "%s/%d/fdinfo/%d", proc, pid, fd);
    assert_int_equal(unlink(path), 0);
}

static struct rt_gpu_options amd_options(void)
{
    return (struct rt_gpu_options){.poll_interval_secs = 0.05, .util_samples = 4, .hang_bound_secs = 1.0,
                                   .retry_secs = 0.1, .start_wait_secs = DEADLINE_SECS, .disable_nvml = true};
}

static struct rt_gpu_collector *new_collector(const char *proc, const char *sys)
{
    struct rt_roots r;
    assert_int_equal(rt_roots_open(&r, proc, sys), 0);
    struct rt_gpu_options o = amd_options();
    struct rt_gpu_collector *c = rt_gpu_collector_new(&r, &o);
    rt_roots_close(&r);
    current = c;
    return c;
}

static void free_collector(struct rt_gpu_collector *c)
{
    rt_gpu_collector_free(c);
    current = NULL;
}

/* After a failed assertion: restore stderr and stop the collector. */
static int test_teardown(void **state)
{
    (void)state;
    capture_cleanup();
    events_cleanup();
    if (current)
        free_collector(current);
    return 0;
}

static const char *detail(const struct rt_gpu *g, const char *key)
{
    for (size_t i = 0; i < g->n_detail; i++)
        if (strcmp(g->detail[i].key, key) == 0)
            return g->detail[i].value;
    return NULL;
}

static void test_devices(void **state)
{
    (void)state;
    struct rt_gpu_collector *c = new_collector(fixture_proc, fixture_sys);
    assert_true(rt_gpu_collector_wait_polls(c, 2, DEADLINE_SECS));
    struct rt_sample s;
    rt_sample_init(&s);
    rt_gpu_collect(c, &s);
    assert_true(s.has_gpu_backend);
    /* card1 is Intel; card0-DP-1 and renderD128 are not devices */
    assert_int_equal(s.n_gpus, 3);

    const struct rt_gpu *g = &s.gpus[0];
    assert_string_equal(g->vendor, "amd");
    assert_string_equal(g->name, "AMD Radeon RX 7900 XTX");
    assert_string_equal(g->uuid, CARD0);
    assert_string_equal(g->host_id, CARD0);
    assert_string_equal(detail(g, "pci_bus"), CARD0);
    assert_double_equal(g->utilization_pct, 37, 1e-9);
    assert_int_equal(g->vram_total_bytes, 24 * GIB);
    assert_int_equal(g->vram_used_bytes, 4 * GIB);
    assert_double_equal(g->vram_used_pct, 100.0 / 6, 1e-9);
    assert_true(g->has_temperature);
    assert_int_equal(g->temperature_celsius, 45);
    assert_true(g->has_power);
    assert_double_equal(g->power_watts, 123.456789, 1e-9); /* power1_average preferred */
    assert_true(g->has_frequency);
    assert_int_equal(g->frequency_mhz, 2100); /* freq1_input preferred over pp_dpm_sclk */
    assert_false(g->has_energy);

    g = &s.gpus[1];
    assert_string_equal(g->name, "AMD GPU 0x74a1");
    assert_string_equal(g->uuid, CARD2_UUID); /* unique_id */
    assert_string_equal(g->host_id, "0000:43:00.0");
    assert_double_equal(g->utilization_pct, 80, 1e-9);
    assert_int_equal(g->vram_total_bytes, 192 * GIB);
    assert_int_equal(g->vram_used_bytes, 64 * GIB);
    assert_int_equal(g->temperature_celsius, 62); /* 61.5 rounded */
    assert_double_equal(g->power_watts, 550, 1e-9); /* power1_input */
    assert_int_equal(g->frequency_mhz, 1400);       /* the '*' level of pp_dpm_sclk */

    g = &s.gpus[2]; /* runtime-suspended: not woken, nothing in use */
    assert_string_equal(g->name, "AMD Radeon PRO W7600");
    assert_string_equal(g->uuid, CARD3);
    assert_double_equal(g->utilization_pct, 0, 1e-12);
    assert_int_equal(g->vram_total_bytes, 17163091968ULL);
    assert_int_equal(g->vram_used_bytes, 0);
    assert_false(g->has_temperature);
    assert_false(g->has_power);
    assert_false(g->has_frequency);

    /* host-wide: device VRAM in use and busy fraction */
    assert_true(s.job.gates & RT_GATE_GPU);
    assert_double_equal((double)s.job.gpu_vram_bytes / RT_MIB, 4 * 1024 + 64 * 1024, 1e-9);
    assert_double_equal(s.job.gpu_usage, 0.37 + 0.80, 1e-9);
    assert_int_equal(s.job.gpu_utilized, 2);
    rt_sample_free(&s);
    free_collector(c);
}

static void test_job_usage_from_fdinfo(void **state)
{
    (void)state;
    char *proc = copy_tree(fixture_proc);
    struct rt_gpu_collector *c = new_collector(proc, fixture_sys);
    struct rt_sample s;
    rt_sample_init(&s);
    rt_gpu_collect(c, &s);
    struct rt_gpu_job *ja = rt_gpu_job_new(), *jb = rt_gpu_job_new(), *jc = rt_gpu_job_new();
    int32_t job_a[] = {1001, 1000, 1000}, job_b[] = {1002}, job_c[] = {1003, 424242};
    struct rt_process_gpu p;

    /* client 7 reached through three fds in two processes counts once */
    rt_gpu_job_usage(c, ja, job_a, 3, 1.0, &p);
    double t0 = mono_secs();
    assert_true(p.present);
    assert_double_equal(p.vram_mib, 1024 + 2048, 1e-9);
    assert_double_equal(p.usage, 0, 1e-12); /* first sighting: baseline only */
    assert_int_equal(p.utilized, 2);

    rt_gpu_job_usage(c, jb, job_b, 1, 1.0, &p);
    assert_double_equal(p.vram_mib, 512, 1e-9);
    assert_int_equal(p.utilized, 1);
    struct rt_gpu_job *empty = rt_gpu_job_new();
    rt_gpu_job_usage(c, empty, NULL, 0, 1.0, &p);
    assert_true(p.present);
    assert_int_equal(p.utilized, 0);
    rt_gpu_job_free(empty);
    rt_gpu_job_usage(c, jc, job_c, 2, 1.0, &p); /* an idle client, a PID that does not exist */
    assert_true(p.present);
    assert_double_equal(p.vram_mib, 0, 1e-12);
    assert_int_equal(p.utilized, 0);

    /* one second later: client 7 ran 0.25 s of gfx, client 9 0.5 s */
    set_gfx(proc, "1000/fdinfo/3", 1250000000);
    set_gfx(proc, "1000/fdinfo/4", 1250000000);
    set_gfx(proc, "1001/fdinfo/3", 1250000000);
    set_gfx(proc, "1000/fdinfo/6", 5500000000);
    assert_true(rt_gpu_collector_wait_polls(c, 2, DEADLINE_SECS));
    rt_sample_reset(&s);
    rt_gpu_collect(c, &s);
    rt_gpu_job_usage(c, ja, job_a, 3, 1.0, &p);
    double elapsed = mono_secs() - t0;
    assert_double_equal(p.usage, 0.25 + 0.5, 1e-9);
    assert_double_equal(p.vram_mib, 1024 + 2048, 1e-9);
    assert_int_equal(p.utilized, 2);

    struct rt_gpu_job_summary sum;
    rt_gpu_job_summary(ja, &sum);
    assert_int_equal(sum.samples, 2);
    assert_int_equal(sum.peak_vram_bytes, 3 * GIB);
    assert_double_equal(sum.avg_usage, 0.375, 1e-9);
    assert_double_equal(sum.max_usage, 0.75, 1e-9);
    assert_int_equal(sum.n_gpus, 2);
    assert_string_equal(sum.gpu_uuids[0], CARD0);
    assert_string_equal(sum.gpu_uuids[1], CARD2_UUID);
    /* No energy counter: power integrated by the poller, split by the job's
     * share of each device's busy time (0.25/0.37 and 0.5/0.8). */
    assert_true(sum.has_energy);
    assert_true(sum.energy_joules > 0);
    double bound = (123.456789 * 0.25 / 0.37 + 550 * 0.5 / 0.8) * (elapsed + 0.2);
    assert_true(sum.energy_joules <= bound);

    rt_gpu_job_summary(jc, &sum);
    assert_true(sum.present);
    assert_int_equal(sum.n_gpus, 0);
    assert_false(sum.has_energy);

    rt_gpu_job_free(ja);
    rt_gpu_job_free(jb);
    rt_gpu_job_free(jc);
    rt_sample_free(&s);
    free_collector(c);
    remove_tree(proc);
}

/* Clients closing, appearing in a new process, and on a new fd of a known
 * process (found by a later full rescan). A client that appears after the
 * job's first call was opened since, so all its engine time counts. */
static void test_clients_over_time(void **state)
{
    (void)state;
    char *proc = copy_tree(fixture_proc);
    struct rt_gpu_collector *c = new_collector(proc, fixture_sys);
    struct rt_sample s;
    rt_sample_init(&s);
    rt_gpu_collect(c, &s);
    struct rt_gpu_job *j = rt_gpu_job_new();
    int32_t pids[] = {1000, 1001, 1004};
    struct rt_process_gpu p;
    rt_gpu_job_usage(c, j, pids, 2, 1.0, &p);
    assert_double_equal(p.vram_mib, 1024 + 2048, 1e-9);

    remove_fd(proc, 1000, 6); /* client 9 closed */
    rt_gpu_job_usage(c, j, pids, 2, 1.0, &p);
    assert_double_equal(p.vram_mib, 1024, 1e-9);
    assert_int_equal(p.utilized, 1);
    assert_double_equal(p.usage, 0, 1e-12);

    add_client(proc, 1004, 3, 13, "0000:43:00.0", "262144 KiB", 300000000); /* a new process */
    rt_gpu_job_usage(c, j, pids, 3, 1.0, &p);
    assert_double_equal(p.vram_mib, 1024 + 256, 1e-9);
    assert_double_equal(p.usage, 0.3, 1e-9);
    assert_int_equal(p.utilized, 2);
    rt_gpu_job_usage(c, j, pids, 3, 1.0, &p);
    assert_double_equal(p.usage, 0, 1e-12); /* no new engine time */

    add_client(proc, 1000, 8, 21, "0000:03:00.0", "128 MiB", 100000000); /* a new fd of a known process */
    int calls = 0;
    do {
        rt_gpu_job_usage(c, j, pids, 3, 1.0, &p);
    } while (p.vram_mib < 1024 + 256 + 128 && ++calls < 100);
    assert_true(calls <= 61);
    assert_double_equal(p.vram_mib, 1024 + 256 + 128, 1e-9);
    assert_double_equal(p.usage, 0.1, 1e-9);

    rt_gpu_job_free(j);
    rt_sample_free(&s);
    free_collector(c);
    remove_tree(proc);
}

static bool two_gpus(const struct rt_sample *s) { return s->n_gpus == 2; }
static bool three_gpus(const struct rt_sample *s) { return s->n_gpus == 3; }

static bool collect_until(struct rt_gpu_collector *c, struct rt_sample *s, bool (*pred)(const struct rt_sample *))
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

static const struct rt_gpu_proc *proc_of(const struct rt_gpu_dev *d, int32_t pid)
{
    for (size_t i = 0; i < d->n_procs; i++)
        if (d->procs[i].pid == pid)
            return &d->procs[i];
    return NULL;
}

/* Every process on a card, tracked or not: the clients debugfs lists, read
 * through their fdinfo (sys/kernel/debug/dri: card0 by its minor, card2 by
 * its PCI address in a newer kernel's layout with a name column). */
static void test_processes_from_debugfs(void **state)
{
    (void)state;
    char *proc = copy_tree(fixture_proc);
    struct rt_gpu_collector *c = new_collector(proc, fixture_sys);
    assert_true(rt_gpu_collector_wait_polls(c, 2, DEADLINE_SECS));
    struct rt_sample s;
    rt_sample_init(&s);
    rt_gpu_collect(c, &s);
    struct rt_gpu_devref refs[4];
    assert_int_equal(rt_gpu_devices(c, refs, 4), 3);
    const struct rt_gpu_dev *d0 = refs[0].d, *d2 = refs[1].d, *d3 = refs[2].d;
    assert_false(refs[0].nvidia);
    assert_true(d0->has_procs);
    /* 1001 shares client 7 with 1000 (it counts once, for 1000) and holds no other */
    assert_int_equal(d0->n_procs, 2);
    const struct rt_gpu_proc *p = proc_of(d0, 1000);
    assert_non_null(p);
    assert_int_equal(p->vram_bytes, GIB);
    assert_true(p->has_sm);
    assert_double_equal(p->sm_pct, 0, 1e-12); /* its counter stood still */
    assert_int_equal(p->gi, RT_GPU_NO_ID);
    assert_int_equal(proc_of(d0, 1002)->vram_bytes, 512 * RT_MIB);
    assert_null(proc_of(d0, 1001));
    assert_int_equal(d0->procs_vram, GIB + 512 * RT_MIB);
    assert_true(d2->has_procs);
    assert_int_equal(d2->n_procs, 1);
    assert_int_equal(d2->procs[0].pid, 1000);
    assert_int_equal(d2->procs[0].vram_bytes, 2 * GIB);
    assert_false(d3->has_procs); /* suspended: not read (nor woken) */

    /* client 7 ran far more than a poll's time: its use is capped at 100 % */
    set_gfx(proc, "1000/fdinfo/3", 900000000000ULL);
    set_gfx(proc, "1000/fdinfo/4", 900000000000ULL);
    set_gfx(proc, "1001/fdinfo/3", 900000000000ULL);
    /* the poll that sees the jump says so (the next ones see none) */
    bool busy = false;
    for (double end = mono_secs() + DEADLINE_SECS; !busy && mono_secs() < end; sleep_ms(5)) {
        rt_sample_reset(&s);
        rt_gpu_collect(c, &s);
        assert_int_equal(rt_gpu_devices(c, refs, 4), 3);
        p = proc_of(refs[0].d, 1000);
        busy = p->sm_pct == 100;
        assert_true(busy || p->sm_pct == 0);
        assert_double_equal(proc_of(refs[0].d, 1002)->sm_pct, 0, 1e-12);
    }
    assert_true(busy);
    rt_sample_free(&s);
    free_collector(c);
    remove_tree(proc);
}

static void test_removed_device(void **state)
{
    (void)state;
    char *sys = copy_tree(fixture_sys);
    events_start();
    struct rt_gpu_collector *c = new_collector(fixture_proc, sys);
    struct rt_sample s;
    rt_sample_init(&s);
    capture_start();
    char *vendor = rt_xasprintf("%s/devices/pci0000:40/0000:43:00.0/vendor", sys);
    assert_int_equal(unlink(vendor), 0);
    assert_true(collect_until(c, &s, two_gpus));
    assert_string_equal(s.gpus[0].uuid, CARD0);
    assert_string_equal(s.gpus[1].uuid, CARD3);
    /* the job's client on the removed device no longer counts */
    struct rt_gpu_job *j = rt_gpu_job_new();
    int32_t pids[] = {1000};
    struct rt_process_gpu p;
    rt_gpu_job_usage(c, j, pids, 1, 1.0, &p);
    assert_double_equal(p.vram_mib, 1024, 1e-9);
    assert_int_equal(p.utilized, 1);
    FILE *f = fopen(vendor, "w");
    assert_non_null(f);
    fputs("0x1002\n", f);
    fclose(f);
    assert_true(collect_until(c, &s, three_gpus));
    /* said by its thread just after the sampler sees it */
    assert_true(events_until("MESSAGE_ID=" RT_MSGID_GPU_APPEARED " MESSAGE=GPU 2 appeared: amd ", 2));
    free(capture_end());
    char *ev = events_text();
    assert_int_equal(count_str(ev, "MESSAGE_ID=" RT_MSGID_GPU_LOST " MESSAGE=GPU 2 lost: amd "), 1);
    assert_int_equal(count_str(ev, "(" CARD2_UUID "): device removed; left out of samples"), 1);
    assert_int_equal(count_str(ev, "MESSAGE_ID=" RT_MSGID_GPU_APPEARED " MESSAGE=GPU 2 appeared: amd "), 2);
    free(ev);
    events_cleanup();
    free(vendor);
    rt_gpu_job_free(j);
    rt_sample_free(&s);
    free_collector(c);
    remove_tree(sys);
}

/* A tree without any DRM class (this machine's /sys has none): no backend. */
static void test_no_drm_class(void **state)
{
    (void)state;
    char *sys = copy_tree(fixture_sys);
    char *cmd = rt_xasprintf("rm -rf '%s/class'", sys);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    struct rt_gpu_collector *c = new_collector(fixture_proc, sys);
    struct rt_sample s;
    rt_sample_init(&s);
    rt_gpu_collect(c, &s);
    assert_false(s.has_gpu_backend);
    assert_int_equal(s.n_gpus, 0);
    assert_false(s.job.gates & RT_GATE_GPU);
    rt_sample_free(&s);
    free_collector(c);
    remove_tree(sys);
}

static void test_parse_fdinfo(void **state)
{
    (void)state;
    struct gpu_amd_fdinfo fi;
    assert_true(gpu_amd_parse_fdinfo("drm-driver:\tamdgpu\ndrm-client-id:\t42\ndrm-pdev:\t0000:c3:00.0\n"
                                     "drm-memory-vram:\t2 MiB\ndrm-engine-gfx:\t17 ns\n", &fi));
    assert_int_equal(fi.client_id, 42);
    assert_string_equal(fi.pdev, "0000:c3:00.0");
    assert_true(fi.has_vram);
    assert_int_equal(fi.vram_bytes, 2 * RT_MIB);
    assert_true(fi.has_gfx);
    assert_int_equal(fi.gfx_ns, 17);
    assert_int_equal(fi.gfx_capacity, 1);

    /* no unit means bytes; newer kernels' drm-resident-vram when the legacy key is gone */
    assert_true(gpu_amd_parse_fdinfo("drm-driver: amdgpu\ndrm-client-id: 1\ndrm-pdev: 0000:03:00.0\n"
                                     "drm-resident-vram: 4096\ndrm-engine-capacity-gfx: 2\n", &fi));
    assert_int_equal(fi.vram_bytes, 4096);
    assert_int_equal(fi.gfx_capacity, 2);
    assert_false(fi.has_gfx);

    /* other drivers, missing keys and garbage are not amdgpu clients */
    assert_false(gpu_amd_parse_fdinfo("drm-driver:\ti915\ndrm-client-id:\t3\ndrm-pdev:\t0000:00:02.0\n", &fi));
    assert_false(gpu_amd_parse_fdinfo("drm-driver:\tamdgpu\ndrm-pdev:\t0000:03:00.0\n", &fi));
    assert_false(gpu_amd_parse_fdinfo("drm-driver:\tamdgpu\ndrm-client-id:\tx\ndrm-pdev:\t0000:03:00.0\n", &fi));
    assert_false(gpu_amd_parse_fdinfo("", &fi));
    assert_false(gpu_amd_parse_fdinfo("pos:\t0\nflags:\t02\n", &fi));
    /* bad numbers and units are ignored, not guessed */
    assert_true(gpu_amd_parse_fdinfo("drm-driver:amdgpu\ndrm-client-id:5\ndrm-pdev:0000:03:00.0\n"
                                     "drm-memory-vram: 12 parsecs\ndrm-engine-gfx: -3 ns\n", &fi));
    assert_false(fi.has_vram);
    assert_false(fi.has_gfx);
    char longline[1024];
    memset(longline, 'a', sizeof(longline) - 1);
    longline[sizeof(longline) - 1] = '\0';
    assert_false(gpu_amd_parse_fdinfo(longline, &fi));
}

int main(void)
{
    rt_log_init(RT_LOG_STDERR, LOG_INFO);
    const char *fx = getenv("RT_FIXTURES");
    if (!fx)
        return 1;
    snprintf(fixture_sys, sizeof(fixture_sys), "%s/gpu/amd/sys", fx);
    snprintf(fixture_proc, sizeof(fixture_proc), "%s/gpu/amd/proc", fx);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_devices, test_teardown),
        cmocka_unit_test_teardown(test_job_usage_from_fdinfo, test_teardown),
        cmocka_unit_test_teardown(test_clients_over_time, test_teardown),
        cmocka_unit_test_teardown(test_processes_from_debugfs, test_teardown),
        cmocka_unit_test_teardown(test_removed_device, test_teardown),
        cmocka_unit_test_teardown(test_no_drm_class, test_teardown),
        cmocka_unit_test_teardown(test_parse_fdinfo, test_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
