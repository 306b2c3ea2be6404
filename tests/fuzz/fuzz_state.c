/* The state loader: a state directory of any files (fuzz_tree.h records:
 * the seeds are real ones, jobs/<id>/job.json, samples, last-id) loaded as
 * at start, through the public entry point (open the directory, load every
 * job), then each job shown as the API shows it and written back as a
 * record. What cannot be read is skipped with a message, never a crash. */
#include "fuzz_tree.h"
#include "jobs/store.h"
#include "system/log.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>

static const char *base;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    rt_log_init(RT_LOG_STDERR, LOG_CRIT);
    base = rt_fuzz_workdir("rt-fuzz-state");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof(dir), "%s/state", base);
    rt_fuzz_tree_apply(dir, data, size);
    struct rt_store s = {.dir_fd = -1, .jobs_fd = -1};
    struct rt_jobs jobs;
    rt_jobs_init(&jobs);
    char err[512];
    if (rt_store_open(&s, dir, true, err, sizeof(err)) == 0) {
        rt_store_load(&s, &jobs);
        for (size_t i = 0; i < jobs.n; i++) {
            json_object_put(rt_job_to_json(jobs.v[i], 1e9));
            json_object_put(rt_job_to_record(jobs.v[i]));
        }
        rt_store_close(&s);
    }
    rt_jobs_free(&jobs);
    rt_fuzz_tree_remove(dir);
    return 0;
}
