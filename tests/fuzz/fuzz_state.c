/* The state loader: a state directory of any files (fuzz_tree.h records:
 * the seeds are real ones, of a daemon from before the sample store --
 * jobs/<id>/job.json, samples.jsonl, last-id: what the store migrates --
 * and of the store -- host/, jobs/<id>/fig-*, metadata.json) loaded as at
 * start, through the public entry point (open the directory, load every
 * job), then each job shown as the API shows it, its samples read as JSON
 * and as CSV as GetJobSamples reads them, and its record written back.
 * What cannot be read is skipped with a message, never a crash; what is
 * read is never anything but whole samples. The tree may hold FIFOs and
 * symbolic links (out of it, dangling, looping): none may block the load
 * (the fuzzer's timeout) or be followed (nothing of the file outside the
 * tree may show). */
#include "fuzz_tree.h"
#include "jobs/state_dir.h"
#include "store/samples.h"
#include "system/log.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

static const char *base;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    rt_log_init(RT_LOG_STDERR, LOG_CRIT);
    base = rt_fuzz_workdir("rt-fuzz-state");
    rt_fuzz_outside();
    return 0;
}

/* A job's samples, by pages as GetJobSamples reads them: each JSON line
 * must parse. */
static void read_samples(struct rt_state_dir *s, const struct rt_job *j, bool csv)
{
    if (!j->fig)
        return;
    struct rt_job_view jv = {.id = j->id, .name_json = j->name_json, .pid = j->pid};
    struct rt_buf out = {0};
    uint64_t at = 0, next;
    for (int pages = 0; pages < 64; pages++) {
        out.len = 0;
        size_t n = rt_samples_read(&s->samples, j->fig, &jv, at, UINT64_MAX, 7, 1u << 20, csv, &out, &next);
        if (!csv && out.len) {
            const char *p = (const char *)out.p, *end = p + out.len;
            while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                if (!nl)
                    abort(); /* a partial sample */
                struct json_tokener *tok = json_tokener_new();
                struct json_object *o = json_tokener_parse_ex(tok, p, (int)(nl - p));
                if (!o || json_tokener_get_parse_end(tok) != (size_t)(nl - p) ||
                    !json_object_is_type(o, json_type_object))
                    abort(); /* garbage forwarded */
                json_object_put(o);
                json_tokener_free(tok);
                p = nl + 1;
            }
        }
        if (next <= at || (n == 0 && next == at))
            break;
        at = next;
    }
    rt_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof(dir), "%s/state", base);
    rt_fuzz_tree_apply(dir, data, size, true);
    struct rt_state_dir s = {.dir_fd = -1, .jobs_fd = -1};
    struct rt_jobs jobs;
    rt_jobs_init(&jobs);
    char err[512];
    if (rt_state_dir_open(&s, dir, true, err, sizeof(err)) == 0) {
        rt_state_dir_load(&s, &jobs);
        for (size_t i = 0; i < jobs.n; i++) {
            struct json_object *shown = rt_job_to_json(jobs.v[i], 1e9);
            struct json_object *md = rt_state_dir_read_metadata(&s, jobs.v[i]->id);
            if (strstr(json_object_to_json_string(shown), RT_FUZZ_OUTSIDE_MARK) ||
                (md && strstr(json_object_to_json_string(md), RT_FUZZ_OUTSIDE_MARK)))
                abort(); /* a link out of the state directory was followed */
            json_object_put(md);
            json_object_put(shown);
            read_samples(&s, jobs.v[i], false);
            read_samples(&s, jobs.v[i], true);
            json_object_put(rt_job_to_record(jobs.v[i]));
        }
        rt_state_dir_close(&s);
    }
    rt_jobs_free(&jobs);
    rt_fuzz_tree_remove(dir);
    return 0;
}
