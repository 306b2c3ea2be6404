/* A job's totals across a restart of the daemon: the sampler (run on this
 * thread through its test seam) tracks a real process that used CPU, memory
 * and a GPU of the fake NVML; its record is saved, loaded into a new
 * registry (the totals come back exactly) and the job is resumed with the
 * process off the GPU: CPU, memory, I/O and GPU totals go on from where they
 * were instead of starting again from the new collector's state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../gpu/gpu_test.h"
#include "jobs/jobs.h"
#include "jobs/state_dir.h"
#include "proc/procfs.h"
#include "rt/json.h"
#include "rt/sample.h"
#include "sampler/sampler.h"
#include "sampler_seam.h"

#include <sys/resource.h>

#define GIB (1024ULL * RT_MIB)
#define INTERVAL 0.1

static char config_path[64], state_dir[64], lib[512];
static pid_t worker = -1;

/* Touches 24 MiB, says 'm', burns 0.2 s of CPU, says 'c' (on a pipe), then
 * waits to be killed. */
static int worker_says;

static pid_t spawn_worker(void)
{
    pid_t parent = getpid();
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t p = fork();
    if (p == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(0);
        size_t n = 24 * RT_MIB;
        volatile char *m = malloc(n);
        for (size_t i = 0; i < n; i += 4096)
            m[i] = 1;
        if (write(fds[1], "m", 1) != 1)
            _exit(1);
        usleep(300000);
        struct rusage ru;
        do
            getrusage(RUSAGE_SELF, &ru);
        while (ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec < 200000);
        if (write(fds[1], "c", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(fds[1]);
    worker_says = fds[0];
    return p;
}

static void wait_worker(char what)
{
    char c = 0;
    assert_int_equal(read(worker_says, &c, 1), 1);
    assert_int_equal(c, what);
}

static void write_config(bool on_gpu)
{
    FILE *f = fopen(config_path, "w");
    assert_non_null(f);
    fprintf(f, "device\n name=NVIDIA H100 80GB HBM3\n uuid=GPU-0d5e3c4a-1111-2222-3333-444455556666\n"
               " pci=00000000:17:00.0\n util=30\n mem_total=85899345920\n mem_used=4294967296\n"
               " power_mw=250000\n energy_mj=1000000\n energy_step_mj=500\n");
    if (on_gpu)
        fprintf(f, "process\n pid=%d\n vram=%llu\n sm=30\n list=compute\n", (int)worker, (unsigned long long)(2 * GIB));
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    const char *dir = getenv("RT_FAKE_NVML_DIR");
    assert_non_null(dir);
    snprintf(lib, sizeof(lib), "%s/libnvidia-ml.so.1", dir);
    snprintf(config_path, sizeof(config_path), "/tmp/rt-fake-nvml-XXXXXX");
    int fd = mkstemp(config_path);
    close(fd);
    setenv("FAKE_NVML_CONFIG", config_path, 1);
    snprintf(state_dir, sizeof(state_dir), "/tmp/rt-resume-XXXXXX");
    assert_non_null(mkdtemp(state_dir));
    worker = spawn_worker();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    reap(worker);
    close(worker_says);
    unlink(config_path);
    char *cmd = rt_xasprintf("rm -rf '%s'", state_dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    return 0;
}

struct daemon {
    struct rt_roots roots;
    struct rt_state_dir state;
    struct rt_jobs jobs;
    struct rt_sampler *sampler;
};

static void daemon_start(struct daemon *d)
{
    char err[256];
    assert_int_equal(rt_roots_open(&d->roots, NULL, NULL), 0);
    assert_int_equal(rt_state_dir_open(&d->state, state_dir, true, err, sizeof(err)), 0);
    rt_jobs_init(&d->jobs);
    assert_true(rt_state_dir_load(&d->state, &d->jobs) >= 0);
    struct rt_sampler_opts o = {.interval_secs = INTERVAL, .roots = &d->roots, .with_pss = true, .nvml_library = lib};
    d->sampler = rt_sampler_new(&o, &d->jobs, &d->state);
}

static void daemon_stop(struct daemon *d)
{
    rt_sampler_free(d->sampler);
    rt_jobs_free(&d->jobs);
    rt_state_dir_close(&d->state);
    rt_roots_close(&d->roots);
}

static void request(struct daemon *d, enum rt_sreq_type type, struct rt_job *j)
{
    assert_int_equal(seam_request(d->sampler, type, j), 0);
}

/* Ticks spaced so that the GPU poller (every INTERVAL) has read again. */
static void ticks(struct daemon *d, int n)
{
    for (int i = 0; i < n; i++) {
        usleep((useconds_t)(INTERVAL * 2.5e6));
        seam_tick(d->sampler);
    }
}

static struct json_object *view(struct daemon *d, uint64_t id, const char *part)
{
    rt_jobs_lock(&d->jobs);
    struct rt_job *j = rt_jobs_find(&d->jobs, id);
    assert_non_null(j);
    struct json_object *rec = rt_job_to_record(j), *o = NULL;
    rt_jobs_unlock(&d->jobs);
    assert_true(json_object_object_get_ex(rec, part, &o));
    json_object_get(o);
    json_object_put(rec);
    return o;
}

static double num(struct json_object *o, const char *k)
{
    double v = -1;
    assert_true(rt_json_get_double(o, k, &v));
    return v;
}

static void test_totals_go_on_across_a_restart(void **state)
{
    (void)state;
    struct daemon d;
    write_config(true);
    daemon_start(&d);
    wait_worker('m');
    struct rt_pstat st;
    assert_int_equal(rt_pstat_read(d.roots.proc_fd, worker, &st), 0);
    struct rt_job *j = rt_job_new();
    assert_int_equal(rt_state_dir_alloc_id(&d.state, &j->id), 0);
    j->owner_uid = getuid();
    j->pid = worker;
    j->starttime = st.starttime;
    j->state = RT_JOB_RUNNING;
    j->started_at = (double)rt_real_ns() / 1e9;
    j->interval_secs = INTERVAL;
    j->metadata = json_object_new_object();
    uint64_t id = j->id;
    rt_jobs_add(&d.jobs, j);
    request(&d, RT_SREQ_START, j);
    ticks(&d, 2);
    wait_worker('c'); /* its CPU time is all in the samples to come */
    ticks(&d, 6);

    struct json_object *before = view(&d, id, "totals"), *shown = view(&d, id, "summary");
    assert_true(num(before, "samples") == 8);
    assert_true(num(before, "peak_rss_bytes") >= 24.0 * RT_MIB);
    assert_true(num(before, "cpu_secs") >= 0.2);
    assert_true(num(shown, "gpu_peak_vram_bytes") == 2.0 * GIB);
    assert_true(num(shown, "gpu_avg_usage") > 0.29 && num(shown, "gpu_avg_usage") < 0.31);
    assert_true(num(shown, "gpu_energy_joules") > 0);
    double energy = num(shown, "gpu_energy_joules"), avg = num(shown, "gpu_avg_usage");
    json_object_put(shown);
    daemon_stop(&d); /* saves the record of the running job */

    /* The record comes back exactly. */
    write_config(false);
    daemon_start(&d);
    struct json_object *loaded = view(&d, id, "totals");
    if (!json_object_equal(before, loaded))
        fail_msg("totals before: %s\nloaded: %s", rt_json_plain(before), rt_json_plain(loaded));
    json_object_put(loaded);

    /* Resumed with the process off the GPU: nothing starts again from zero. */
    rt_jobs_lock(&d.jobs);
    j = rt_jobs_find(&d.jobs, id);
    rt_jobs_unlock(&d.jobs);
    request(&d, RT_SREQ_RESUME, j);
    ticks(&d, 3);
    struct json_object *after = view(&d, id, "totals");
    shown = view(&d, id, "summary");
    assert_true(num(after, "samples") == 11);
    assert_true(num(after, "cpu_secs") == num(before, "cpu_secs"));
    assert_true(num(after, "peak_rss_bytes") == num(before, "peak_rss_bytes"));
    /* Other processes map and unmap the libraries the worker shares: its
     * PSS may grow, and the peak only ever goes up. */
    assert_true(num(after, "peak_pss_bytes") >= num(before, "peak_pss_bytes"));
    assert_true(num(after, "disk_read_bytes") == num(before, "disk_read_bytes"));
    assert_true(num(after, "disk_write_bytes") == num(before, "disk_write_bytes"));
    assert_true(num(shown, "gpu_peak_vram_bytes") == 2.0 * GIB);
    assert_true(num(shown, "gpu_energy_joules") >= energy);
    /* Three samples without GPU use after eight at 0.3, time-weighted. */
    assert_true(num(shown, "gpu_avg_usage") > 0.5 * avg && num(shown, "gpu_avg_usage") < avg);
    struct json_object *gpus_before, *gpus_after;
    assert_true(json_object_object_get_ex(before, "gpus", &gpus_before));
    assert_true(json_object_object_get_ex(after, "gpus", &gpus_after));
    assert_true(json_object_equal(gpus_before, gpus_after));
    json_object_put(shown);
    json_object_put(after);
    json_object_put(before);
    daemon_stop(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_totals_go_on_across_a_restart, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
