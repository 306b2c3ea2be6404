#include "insight/analysis.h"

#include "ctl.h"
#include "rt/json.h"
#include "rt/util.h"

#include <stdlib.h>
#include <string.h>

#define M(name) RT_VL_INTERFACE "." name

static int64_t job_i64(struct json_object *j, const char *k)
{
    int64_t v = -1;
    rt_json_get_i64(j, k, &v);
    return v;
}

struct json_object *insight_history_jobs(struct rt_vl_client *c, struct json_object *job, unsigned max, int *rc)
{
    struct json_object *out = json_object_new_array();
    const char *name = rt_json_get_string(job, "name");
    *rc = 0;
    int64_t before = job_i64(job, "id");
    /* Newest first, a page at a time: running jobs are skipped here, so a
     * page may give fewer than we asked for. */
    while (name && json_object_array_length(out) < max && before > 0) {
        struct json_object *p = json_object_new_object(), *reply, *rp;
        json_object_object_add(p, "name", json_object_new_string(name));
        json_object_object_add(p, "owner_uid", json_object_new_int64(job_i64(job, "owner_uid")));
        json_object_object_add(p, "before_id", json_object_new_int64(before));
        json_object_object_add(p, "limit", json_object_new_int64(max));
        *rc = ctl_call(c, M("ListJobs"), p, &reply, &rp);
        if (*rc) {
            json_object_put(out);
            return NULL;
        }
        struct json_object *jobs = rt_json_get_array(rp, "jobs");
        for (size_t i = 0; jobs && i < json_object_array_length(jobs) && json_object_array_length(out) < max; i++) {
            struct json_object *j = json_object_array_get_idx(jobs, i);
            const char *state = rt_json_get_string(j, "state");
            bool not_started = false;
            rt_json_get_bool(j, "not_started", &not_started); /* a command that never ran is no run */
            if (state && strcmp(state, "running") != 0 && !not_started)
                json_object_array_add(out, json_object_get(j));
        }
        before = job_i64(rp, "next_before_id");
        json_object_put(reply);
    }
    return out;
}

int insight_analysis_load(struct rt_vl_client *c, struct json_object *job, unsigned history, bool with_charts,
                          struct insight_analysis *a)
{
    memset(a, 0, sizeof(*a));
    int rc = insight_run_load(c, job, with_charts, &a->run);
    if (rc)
        return rc;
    struct json_object *hist = insight_history_jobs(c, job, history, &rc);
    if (!hist)
        return rc;
    size_t n = json_object_array_length(hist);
    a->hist = rt_xcalloc(n ? n : 1, sizeof(*a->hist));
    for (size_t i = 0; i < n && !rc; i++) {
        rc = insight_run_load(c, json_object_array_get_idx(hist, i), false, &a->hist[i]);
        a->nhist = i + 1;
    }
    json_object_put(hist);
    if (rc)
        return rc;
    struct insight_stats *all = rt_xcalloc(n + 1, sizeof(*all));
    all[0] = a->run.st;
    for (size_t i = 0; i < n; i++)
        all[i + 1] = a->hist[i].st;
    insight_stats_combine(all, n + 1, &a->combined);
    free(all);
    insight_recommend(&a->combined, &a->rec);
    return 0;
}

void insight_analysis_free(struct insight_analysis *a)
{
    insight_run_free(&a->run);
    for (size_t i = 0; i < a->nhist; i++)
        insight_run_free(&a->hist[i]);
    free(a->hist);
    memset(a, 0, sizeof(*a));
}

int insight_analysis_fetch(struct ctl *ctl, const char *ref, unsigned history, bool with_charts,
                           struct rt_vl_client *c, struct insight_analysis *a)
{
    memset(a, 0, sizeof(*a));
    int rc = ctl_connect(ctl, c);
    if (rc)
        return rc;
    struct json_object *p = json_object_new_object(), *reply, *rp;
    if ((rc = ctl_job_ref(ctl, p, ref))) {
        json_object_put(p);
        return rc;
    }
    rc = ctl_call(c, M("GetJob"), p, &reply, &rp);
    if (rc)
        return rc;
    rc = insight_analysis_load(c, rt_json_get_object(rp, "job"), history, with_charts, a);
    json_object_put(reply);
    return rc;
}
