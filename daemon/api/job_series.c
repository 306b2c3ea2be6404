/* GetJobSeries: a job's samples as `report` charts and counts them
 * (rt/job_series.h), made here from the store without a sample's JSON, so
 * that what moves is what is drawn: about `points` values a series, and
 * the run's figures exactly. */
#include "api/call.h"
#include "api/job_access.h"
#include "api/methods.h"
#include "api/stream.h"
#include "api/transport.h"
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

/* The samples read at a time: a long job's are read in steps, and the
 * loop serves other clients between them (a day at 1 s is 22 steps). */
#define STEP 4096

struct series_call {
    struct rt_stream base;
    uint64_t id, next, end;
    double interval;
    struct rt_figlog *fl;
    struct rt_buckets b;
    struct rt_series_run run;
};

static void series_release(struct rt_stream *st)
{
    struct series_call *s = (struct series_call *)st;
    rt_figlog_unref(s->fl);
    if (s->run.charts)
        rt_buckets_free(&s->b);
}

/* One step; the reply after the last. */
static void series_pump(struct rt_server *srv, struct rt_conn *conn)
{
    struct series_call *s = (struct series_call *)conn->stream;
    uint64_t to = s->end - s->next > STEP ? s->next + STEP : s->end;
    if (s->fl)
        rt_samples_each(&rt_server_daemon(srv)->state.samples, s->fl, s->id, s->interval, s->next, to, add, &s->run);
    s->next = to;
    if (s->next < s->end)
        return; /* pumped again once the loop has served the others */
    struct json_object *p = json_object_new_object();
    rt_series_to_json(&s->run, p);
    rt_conn_reply(srv, conn, p, false);
    rt_conn_done(srv, conn);
}

static bool series_wants_output(const struct rt_stream *st)
{
    (void)st;
    return true;
}

static const struct rt_stream_ops series_ops = {
    .pump = series_pump, .wants_output = series_wants_output, .release = series_release};

static void m_get_job_series(struct rt_call *c)
{
    int64_t points = rt_call_int(c, "points", POINTS_DEFAULT), limit = rt_call_int(c, "limit", INT64_MAX);
    struct rt_daemon *d = rt_call_daemon(c);
    struct rt_job *j = rt_api_lookup_job(c);
    if (!j)
        return;
    struct series_call *s = rt_xcalloc(1, sizeof(*s));
    s->base.ops = &series_ops;
    s->id = j->id;
    s->end = j->summary.samples;
    s->interval = j->interval_secs;
    /* The start as the Job object shows it: bucket times are what a client
     * adding up the samples' spans from there would get. */
    struct json_object *start = rt_json_double(j->started_at, 3);
    s->run.t = json_object_get_double(start);
    json_object_put(start);
    s->fl = rt_figlog_ref(j->fig);
    rt_jobs_unlock(&d->jobs);
    if ((uint64_t)limit < s->end) /* a running job: the samples its summary counted when asked */
        s->end = (uint64_t)limit;
    if (points > 0) {
        rt_buckets_init(&s->b, RT_SERIES_N, (size_t)points, s->end);
        s->run.charts = &s->b;
    }
    rt_conn_stream(c->conn, &s->base);
    series_pump(c->srv, c->conn);
}

static const struct rt_method methods[] = {
    {.name = "GetJobSeries", .fn = m_get_job_series,
     .params = {RT_API_JOB_PARAMS, {.name = "points", .type = RT_P_INT, RT_RANGE(0, POINTS_MAX)},
                {.name = "limit", .type = RT_P_INT, RT_RANGE(0, INT64_MAX)}}},
};

const struct rt_method_table rt_series_methods = {RT_VL_INTERFACE, methods, RT_ARRAY_SIZE(methods)};
