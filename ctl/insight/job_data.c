#include "insight/job_data.h"

#include "ctl.h"
#include "rt/json.h"
#include "rt/sample_csv.h"
#include "rt/sample_json.h"

#include <malloc.h>
#include <math.h>
#include <string.h>

#define M(name) RT_VL_INTERFACE "." name

/* Waits for a reply this long: the daemon reads the whole run for it. */
#define SERIES_TIMEOUT_MS 300000

/* The series from the daemon (GetJobSeries). 0, an RT_EXIT_* code after
 * saying why, or -1 where the daemon is from before the method. */
static int from_series(struct rt_vl_client *c, struct insight_run *r, struct rt_series_run *run)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "id", rt_json_u64(r->st.id));
    /* A running job has more samples by now: the statistics stop where its
     * summary did, so both describe the same samples. */
    json_object_object_add(p, "limit", rt_json_u64(r->st.samples));
    json_object_object_add(p, "points", json_object_new_int(run->charts ? INSIGHT_MAX_POINTS : 0));
    struct json_object *reply = NULL;
    int e = rt_vl_client_send(c, M("GetJobSeries"), p, 0);
    if (e >= 0)
        e = rt_vl_client_recv(c, &reply, SERIES_TIMEOUT_MS);
    if (e < 0) {
        CTL_ERR("lost the connection to the daemon: %s", strerror(-e));
        return RT_EXIT_UNREACHABLE;
    }
    const char *err = rt_vl_reply_error(reply);
    int rc = 0;
    if (err)
        rc = strcmp(err, "org.varlink.service.MethodNotFound") == 0 ? -1 : ctl_report_error(reply);
    else if (!rt_series_from_json(rt_vl_reply_params(reply), run)) {
        CTL_ERR("the daemon's series of job %llu are not readable", (unsigned long long)r->st.id);
        rc = RT_EXIT_FAILURE;
    }
    json_object_put(reply);
    return rc;
}

/* One page of samples; false when the run has all it wanted. */
static bool add_page(struct insight_run *r, struct rt_series_run *run, struct json_object *arr, double interval)
{
    struct rt_sample s;
    struct rt_csv_host h = {0};
    rt_sample_init(&s);
    for (size_t i = 0; arr && i < json_object_array_length(arr) && run->n < r->st.samples; i++) {
        char err[128];
        rt_sample_reset(&s);
        s.nominal_interval_secs = interval;
        if (rt_sample_from_json(json_object_array_get_idx(arr, i), &s, err, sizeof(err)) == 0) {
            rt_csv_host_from_sample(&s, &h);
            rt_series_add(run, h.v, h.n, rt_sample_interval_secs(&s), s.has_job, &s.job);
        }
    }
    rt_csv_host_free(&h);
    rt_sample_free(&s);
    return run->n < r->st.samples;
}

/* The same from every sample (GetJobSamples), for a daemon from before
 * GetJobSeries. */
static int from_samples(struct rt_vl_client *c, struct insight_run *r, struct rt_series_run *run)
{
    if (run->charts)
        rt_buckets_init(run->charts, RT_SERIES_N, INSIGHT_MAX_POINTS, r->st.samples);
    double interval = 1;
    rt_json_get_double(r->job, "interval_secs", &interval);
    /* Each page is a tree of thousands of small json-c objects, freed
     * before the next large read: with fastbins glibc consolidates them on
     * every large allocation (a fifth of the time of a day's report). */
    mallopt(M_MXFAST, 0);
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "id", json_object_new_int64((int64_t)r->st.id));
    if (rt_vl_client_send(c, M("GetJobSamples"), p, RT_VL_MORE) < 0) {
        CTL_ERR("lost the connection to the daemon");
        return RT_EXIT_UNREACHABLE;
    }
    bool want = true, more = true;
    while (more) {
        struct json_object *reply = NULL;
        int e = rt_vl_client_recv(c, &reply, 30000);
        if (e < 0) {
            CTL_ERR("lost the connection to the daemon: %s", strerror(-e));
            return RT_EXIT_UNREACHABLE;
        }
        if (rt_vl_reply_error(reply)) {
            int rc = ctl_report_error(reply);
            json_object_put(reply);
            return rc;
        }
        /* Read the stream to its end even when we have enough: the
         * connection is used again afterwards. */
        if (want)
            want = add_page(r, run, rt_json_get_array(rt_vl_reply_params(reply), "samples"), interval);
        more = rt_vl_reply_continues(reply);
        json_object_put(reply);
    }
    return 0;
}

int insight_run_load(struct rt_vl_client *c, struct json_object *job, bool with_charts, struct insight_run *r)
{
    memset(r, 0, sizeof(*r));
    r->job = json_object_get(job);
    bool complete = insight_stats_from_job(job, &r->st);
    r->with_charts = with_charts;
    if (!r->st.samples || (complete && !with_charts)) {
        if (with_charts)
            rt_buckets_init(&r->charts, RT_SERIES_N, INSIGHT_MAX_POINTS, 0);
        return 0;
    }
    r->st.has_host = true;
    struct rt_series_run run = {.charts = with_charts ? &r->charts : NULL};
    rt_json_get_double(job, "started_at", &run.t);
    int rc = from_series(c, r, &run);
    if (rc < 0)
        rc = from_samples(c, r, &run);
    if (rc)
        return rc;
    struct insight_stats *st = &r->st;
    st->net_in_bytes += run.net_in_bytes;
    st->net_out_bytes += run.net_out_bytes;
    st->space_peak_bytes = fmax(st->space_peak_bytes, run.space_peak_bytes);
    r->host_has_gpus = run.host_gpus;
    if (!complete) { /* a daemon or a job record from before the summary's means */
        insight_set(st, "avg_pss_bytes", run.n_mem ? run.mem_sum / (double)run.n_mem : 0);
        if (!insight_has(st, "sustained_cores"))
            insight_set(st, "sustained_cores", fmax(run.sustained, insight_fig(st, "avg_cores")));
        if (insight_has_gpu(st)) {
            insight_set(st, "gpu_avg_vram_bytes", run.n_gpu ? run.vram_sum / (double)run.n_gpu : 0);
            insight_set(st, "gpu_peak_usage", run.gpu_peak);
        }
    }
    return 0;
}

void insight_run_free(struct insight_run *r)
{
    json_object_put(r->job);
    if (r->with_charts)
        rt_buckets_free(&r->charts);
    memset(r, 0, sizeof(*r));
}
