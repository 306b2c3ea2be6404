/* Test and developer tool (not installed): what a state directory holds, read
 * the way the daemon reads it (run it while no daemon uses the directory: a
 * load may move old samples files into the store).
 *   rt_store_dump STATE_DIR                  one JSON object: the host timeline and
 *                                            each job's samples and bytes (as retention counts them)
 *   rt_store_dump STATE_DIR --job ID [--csv] the job's samples as GetJobSamples makes them */
#include "jobs/state_dir.h"
#include "jobs/usage.h"
#include "rt/json.h"
#include "rt/sample_csv.h"
#include "rt/util.h"
#include "system/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void summary(struct rt_state_dir *st, struct rt_jobs *jobs)
{
    struct rt_usage u;
    rt_usage_build(&u, st, jobs->v, jobs->n);
    size_t nblocks;
    struct rt_seg_block hot, *b = rt_seglog_blocks(&st->samples.host, &nblocks, &hot);
    free(b);
    struct json_object *o = json_object_new_object(), *host = json_object_new_object(), *js = json_object_new_object();
    json_object_object_add(host, "samples", rt_json_u64(rt_seglog_count(&st->samples.host)));
    json_object_object_add(host, "sealed_blocks", rt_json_u64(nblocks));
    json_object_object_add(host, "bytes", rt_json_u64(rt_seglog_bytes(&st->samples.host)));
    json_object_object_add(o, "host", host);
    for (size_t i = 0; i < jobs->n; i++) {
        struct rt_job *j = jobs->v[i];
        struct json_object *x = json_object_new_object();
        char id[24];
        snprintf(id, sizeof(id), "%" PRIu64, j->id);
        json_object_object_add(x, "samples", rt_json_u64(j->summary.samples));
        json_object_object_add(x, "own_bytes", rt_json_u64(rt_state_dir_job_bytes(j)));
        json_object_object_add(x, "bytes", json_object_new_double(rt_usage_of(&u, i)));
        json_object_object_add(x, "owner_uid", json_object_new_int64(j->owner_uid));
        json_object_object_add(x, "state", json_object_new_string(rt_job_state_name(j->state)));
        json_object_object_add(js, id, x);
    }
    json_object_object_add(o, "jobs", js);
    json_object_object_add(o, "total_bytes", rt_json_u64(u.total));
    puts(rt_json_plain(o));
    json_object_put(o);
    rt_usage_free(&u);
}

static int samples(struct rt_state_dir *st, struct rt_jobs *jobs, uint64_t id, bool csv)
{
    struct rt_job *j = rt_jobs_find(jobs, id);
    if (!j || !j->fig) {
        fprintf(stderr, "no job %" PRIu64 "\n", id);
        return 1;
    }
    if (csv)
        printf("%s\n", RT_CSV_HEADER);
    struct rt_job_view jv = {.id = j->id, .name_json = j->name_json, .pid = j->pid};
    uint64_t next = 0;
    while (next < j->summary.samples) {
        struct rt_buf out = {0};
        uint64_t from = next;
        rt_samples_read(&st->samples, j->fig, &jv, from, j->summary.samples, 10000, 64u << 20, csv, &out, &next);
        if (out.len) /* a page of samples lost to damage holds none */
            fwrite(out.p, 1, out.len, stdout);
        rt_buf_free(&out);
        if (next == from)
            break;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (argc > 2 && (argc < 4 || strcmp(argv[2], "--job") != 0))) {
        fprintf(stderr, "usage: rt_store_dump STATE_DIR [--job ID [--csv]]\n");
        return 2;
    }
    rt_log_init(RT_LOG_STDERR, LOG_WARNING);
    struct rt_state_dir st;
    struct rt_jobs jobs;
    char err[512];
    if (rt_state_dir_open(&st, argv[1], false, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    rt_jobs_init(&jobs);
    int rc = 0;
    if (rt_state_dir_load(&st, &jobs) < 0) {
        rc = 1;
    } else if (argc == 2) {
        summary(&st, &jobs);
    } else {
        uint64_t id;
        rc = rt_parse_u64(argv[3], &id) ? samples(&st, &jobs, id, argc > 4 && strcmp(argv[4], "--csv") == 0) : 2;
    }
    rt_jobs_free(&jobs);
    rt_state_dir_close(&st);
    return rc;
}
