/* GetJobSeries: a job's samples as `report` charts and counts them
 * (rt/job_series.h), made here from the store without a sample's JSON, so
 * that what moves is what is drawn: about `points` values a series, and
 * the run's figures exactly. */
#include "api/call.h"
#include "api/job_access.h"
#include "api/methods.h"
#include "daemon.h"
#include "rt/job_series.h"
#include "rt/json.h"
#include "rt/util.h"
#include "store/samples.h"

#define POINTS_DEFAULT 1000
#define POINTS_MAX 10000

/* A stored sample's figures as its JSON shows them (bytes shown as MiB are
 * whole MiB), which is what a client reading the samples would add up. */
static void shown(const struct rt_job_figures *f, struct rt_job_figures *out)
{
    *out = *f;
    for (size_t i = 0; i < rt_fig_nsamples; i++) {
        const struct rt_fig_sample *r = &rt_fig_samples[i];
        double v;
        if (r->json && rt_fig_sample_value(f, i, &v))
            rt_fig_set(out, r->type, r->off, rt_fig_shown(r, v));
    }
}

static void add(void *ctx, const struct rt_sample_parts *p)
{
    struct rt_job_figures f;
    if (p->shown)
        f = p->f;
    else
        shown(&p->f, &f);
    rt_series_add(ctx, p->host, p->nhost, p->secs, p->has_job, &f);
}

static void m_get_job_series(struct rt_call *c)
{
    int64_t points = rt_call_int(c, "points", POINTS_DEFAULT), limit = rt_call_int(c, "limit", INT64_MAX);
    struct rt_daemon *d = rt_call_daemon(c);
    struct rt_job *j = rt_api_lookup_job(c);
    if (!j)
        return;
    uint64_t id = j->id, end = j->summary.samples;
    double interval = j->interval_secs;
    /* The start as the Job object shows it: bucket times are what a client
     * adding up the samples' spans from there would get. */
    struct json_object *start = rt_json_double(j->started_at, 3);
    struct rt_series_run run = {.t = json_object_get_double(start)};
    json_object_put(start);
    struct rt_figlog *fl = rt_figlog_ref(j->fig);
    rt_jobs_unlock(&d->jobs);
    if ((uint64_t)limit < end) /* a running job: the samples its summary counted when asked */
        end = (uint64_t)limit;
    struct rt_buckets b;
    if (points > 0) {
        rt_buckets_init(&b, RT_SERIES_N, (size_t)points, end);
        run.charts = &b;
    }
    if (fl)
        rt_samples_each(&d->state.samples, fl, id, interval, end, add, &run);
    rt_figlog_unref(fl);
    struct json_object *p = json_object_new_object();
    rt_series_to_json(&run, p);
    if (run.charts)
        rt_buckets_free(&b);
    rt_call_reply(c, p);
}

static const struct rt_method methods[] = {
    {.name = "GetJobSeries", .fn = m_get_job_series,
     .params = {RT_API_JOB_PARAMS, {.name = "points", .type = RT_P_INT, RT_RANGE(0, POINTS_MAX)},
                {.name = "limit", .type = RT_P_INT, RT_RANGE(0, INT64_MAX)}}},
};

const struct rt_method_table rt_series_methods = {RT_VL_INTERFACE, methods, RT_ARRAY_SIZE(methods)};
