/* Where a job's counters start: StartJob of a job in a cgroup made for it
 * (run) is answered before its tracking begins, so its command may have run
 * by then; that cgroup counts from zero. A cgroup the job did not make
 * counts from when its tracking began. The sampler runs on this thread
 * through its test seam, against this host's real cgroups (root only). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cgroup/cgroup.h"
#include "cgroup/hier.h"
#include "cgroup/make.h"
#include "jobs/jobs.h"
#include "jobs/state_dir.h"
#include "proc/procfs.h"
#include "rt/json.h"
#include "rt/util.h"
#include "sampler/sampler.h"
#include "sampler_seam.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define INTERVAL 0.1
#define BURN_USEC 300000

struct daemon {
    struct rt_roots roots;
    struct rt_cg_host cg;
    struct rt_state_dir state;
    struct rt_jobs jobs;
    struct rt_sampler *sampler;
    char state_path[64];
};

static int setup(void **state)
{
    struct daemon *d = rt_xcalloc(1, sizeof(*d));
    *state = d;
    char err[256];
    assert_int_equal(rt_roots_open(&d->roots, NULL, NULL), 0);
    if (geteuid() != 0 || rt_cg_host_open(&d->cg, &d->roots) < 0 || d->cg.mode == RT_CG_MODE_NONE)
        return 0; /* the tests skip */
    snprintf(d->state_path, sizeof(d->state_path), "/tmp/rt-start-XXXXXX");
    assert_non_null(mkdtemp(d->state_path));
    assert_int_equal(rt_state_dir_open(&d->state, d->state_path, true, err, sizeof(err)), 0);
    rt_jobs_init(&d->jobs);
    assert_true(rt_state_dir_load(&d->state, &d->jobs) >= 0);
    struct rt_sampler_opts o = {.interval_secs = INTERVAL, .roots = &d->roots, .cg_host = &d->cg};
    d->sampler = rt_sampler_new(&o, &d->jobs, &d->state);
    return 0;
}

static int teardown(void **state)
{
    struct daemon *d = *state;
    if (d->sampler) {
        rt_sampler_free(d->sampler);
        rt_jobs_free(&d->jobs);
        rt_state_dir_close(&d->state);
        char *cmd = rt_xasprintf("rm -rf '%s'", d->state_path);
        assert_int_equal(system(cmd), 0);
        free(cmd);
        rt_cg_host_close(&d->cg);
    }
    rt_roots_close(&d->roots);
    free(d);
    return 0;
}

/* A child in cgroup `path` that burns BURN_USEC of CPU there and waits to
 * be killed; back once it has burnt it. */
static pid_t burn_in(struct daemon *d, const char *path)
{
    int go[2], done[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(done), 0);
    pid_t parent = getpid(), p = fork();
    if (p == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char c;
        if (getppid() != parent || read(go[0], &c, 1) != 1)
            _exit(1);
        struct rusage ru;
        do
            getrusage(RUSAGE_SELF, &ru);
        while ((ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec <
               BURN_USEC);
        if (write(done[1], "c", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    struct rt_cgroup cg;
    assert_int_equal(rt_cgroup_open_dirs(&cg, &d->cg, path), 0);
    assert_int_equal(rt_cg_attach(&cg, p), 0);
    rt_cgroup_close(&cg);
    char c = 0;
    assert_int_equal(write(go[1], "x", 1), 1);
    assert_int_equal(read(done[0], &c, 1), 1);
    close(go[0]);
    close(go[1]);
    close(done[0]);
    close(done[1]);
    return p;
}

/* The job's CPU seconds after two samples, its process in its cgroup
 * having burnt BURN_USEC before StartJob. */
static double cpu_secs_of_a_start(struct daemon *d, bool made)
{
    char path[64];
    snprintf(path, sizeof(path), "/rt-unit-start-%d-%d", (int)getpid(), made);
    assert_int_equal(rt_cg_make(&d->cg, path), 0);
    pid_t p = burn_in(d, path);
    struct rt_pstat st;
    assert_int_equal(rt_pstat_read(d->roots.proc_fd, p, &st), 0);
    struct rt_job *j = rt_job_new();
    assert_int_equal(rt_state_dir_alloc_id(&d->state, &j->id), 0);
    j->owner_uid = getuid();
    j->pid = p;
    j->starttime = st.starttime;
    j->state = RT_JOB_RUNNING;
    j->started_at = (double)rt_real_ns() / 1e9 - 1;
    j->interval_secs = INTERVAL;
    j->metadata = json_object_new_object();
    j->cgroup = rt_xstrdup(path);
    j->cgroup_made = made;
    rt_jobs_add(&d->jobs, j);
    assert_int_equal(seam_request(d->sampler, RT_SREQ_START, j), 0);
    for (int i = 0; i < 2; i++) {
        usleep((useconds_t)(INTERVAL * 1.5e6));
        seam_tick(d->sampler);
    }
    rt_jobs_lock(&d->jobs);
    struct json_object *rec = rt_job_to_record(j), *totals;
    rt_jobs_unlock(&d->jobs);
    double cpu = -1, samples = 0;
    assert_true(json_object_object_get_ex(rec, "totals", &totals) && rt_json_get_double(totals, "cpu_secs", &cpu));
    assert_true(rt_json_get_double(totals, "samples", &samples) && samples >= 1);
    json_object_put(rec);
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
    assert_int_equal(seam_request(d->sampler, RT_SREQ_STOP, j), 0); /* a cgroup it made goes with it */
    if (!made)
        assert_int_equal(rt_cg_remove(&d->cg, path), 0);
    return cpu;
}

static void test_a_cgroup_made_for_the_job_counts_from_zero(void **state)
{
    struct daemon *d = *state;
    if (!d->sampler)
        skip();
    double cpu = cpu_secs_of_a_start(d, true);
    if (cpu < 0.9 * BURN_USEC / 1e6) /* the kernel's and getrusage's clocks differ a little */
        fail_msg("the CPU its command used before the tracking began is missing: %.3f s", cpu);
}

static void test_a_cgroup_tracked_as_it_is_counts_from_the_start_of_tracking(void **state)
{
    struct daemon *d = *state;
    if (!d->sampler)
        skip();
    double cpu = cpu_secs_of_a_start(d, false);
    if (cpu > 0.05)
        fail_msg("what the cgroup used before it was tracked is counted: %.3f s", cpu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_cgroup_made_for_the_job_counts_from_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_cgroup_tracked_as_it_is_counts_from_the_start_of_tracking, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
