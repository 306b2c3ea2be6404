#include "insight/job_data.h"

#include "ctl.h"
#include "rt/json.h"
#include "rt/sample_json.h"

#include <malloc.h>
#include <math.h>
#include <string.h>

#define M(name) RT_VL_INTERFACE "." name

void insight_sample_values(const struct rt_sample *s, double *v)
{
    double dt = rt_sample_interval_secs(s);
    double space = 0, gpu = 0, vram = 0, busy = 0;
    for (size_t i = 0; i < s->n_disks; i++)
        for (size_t m = 0; m < s->disks[i].n_mounts; m++)
            space += (double)s->disks[i].mounts[m].used_bytes; /* as df's Used */
    for (size_t i = 0; i < s->n_gpus; i++) {
        gpu += s->gpus[i].utilization_pct / 100.0;
        vram += (double)s->gpus[i].vram_used_bytes;
        busy += s->gpus[i].utilization_pct > 0;
    }
    const struct rt_job_figures *p = &s->job;
    /* NaN + x is NaN: a series is unknown where its part of the sample is absent. */
    double unknown = s->has_job ? 0 : NAN;
    v[INSIGHT_CORES_JOB] = unknown + p->cores_used;
    v[INSIGHT_CORES_HOST] = s->cpu.utilization_pct;
    /* The job's memory: a tree's PSS, a cgroup's anon + shmem + kernel
     * (a sample from before it: the PSS); a cgroup has no RSS. */
    double tree = p->gates & RT_GATE_TREE ? 0 : NAN;
    v[INSIGHT_MEM_JOB] = unknown + (p->gates & RT_GATE_MEM ? (double)p->mem_bytes : tree + (double)p->pss_bytes);
    v[INSIGHT_RSS_JOB] = unknown + tree + (double)p->rss_bytes;
    v[INSIGHT_MEM_HOST] = (double)s->memory.used_mib * RT_MIB;
    v[INSIGHT_READ_JOB] = dt > 0 ? unknown + (double)p->disk_read_bytes / dt : NAN;
    v[INSIGHT_WRITE_JOB] = dt > 0 ? unknown + (double)p->disk_write_bytes / dt : NAN;
    v[INSIGHT_READ_HOST] = dt > 0 ? (double)rt_sample_disk_read_bytes(s) / dt : NAN;
    v[INSIGHT_WRITE_HOST] = dt > 0 ? (double)rt_sample_disk_write_bytes(s) / dt : NAN;
    v[INSIGHT_SPACE_HOST] = s->n_disks ? space : NAN;
    v[INSIGHT_NET_IN_HOST] = dt > 0 ? (double)rt_sample_net_recv_bytes(s) / dt : NAN;
    v[INSIGHT_NET_OUT_HOST] = dt > 0 ? (double)rt_sample_net_sent_bytes(s) / dt : NAN;
    double gunknown = p->gates & RT_GATE_GPU ? 0 : NAN;
    v[INSIGHT_GPU_JOB] = gunknown + p->gpu_usage;
    v[INSIGHT_GPUS_JOB] = gunknown + p->gpu_utilized;
    v[INSIGHT_VRAM_JOB] = gunknown + (double)p->gpu_vram_bytes;
    double hunknown = s->n_gpus ? 0 : NAN;
    v[INSIGHT_GPU_HOST] = hunknown + gpu;
    v[INSIGHT_GPUS_HOST] = hunknown + busy;
    v[INSIGHT_VRAM_HOST] = hunknown + vram;
}

/* Running sums over the samples. */
struct acc {
    uint64_t n, n_mem, n_gpu;
    double mem_sum, vram_sum, gpu_peak;
    double block_core_secs, block_secs, sustained; /* the daemon's rule (rt_fig_sustained_add) */
    double t;
};

static void add_sample(struct insight_run *r, struct acc *a, struct rt_sample *s)
{
    double v[INSIGHT_SERIES];
    insight_sample_values(s, v);
    double span = rt_sample_interval_secs(s);
    a->t += span;
    if (!isnan(v[INSIGHT_CORES_JOB]))
        rt_fig_sustained_add(&a->block_core_secs, &a->block_secs, &a->sustained, v[INSIGHT_CORES_JOB], span);
    if (r->with_charts)
        insight_buckets_add(&r->charts, a->n, a->t, v);
    a->n++;
    struct insight_stats *st = &r->st;
    if (!isnan(v[INSIGHT_MEM_JOB])) {
        a->mem_sum += v[INSIGHT_MEM_JOB];
        a->n_mem++;
    }
    if (!isnan(v[INSIGHT_GPU_JOB])) {
        a->vram_sum += v[INSIGHT_VRAM_JOB];
        a->n_gpu++;
        if (v[INSIGHT_GPU_JOB] > a->gpu_peak)
            a->gpu_peak = v[INSIGHT_GPU_JOB];
    }
    st->net_in_bytes += (double)rt_sample_net_recv_bytes(s);
    st->net_out_bytes += (double)rt_sample_net_sent_bytes(s);
    if (v[INSIGHT_SPACE_HOST] > st->space_peak_bytes)
        st->space_peak_bytes = v[INSIGHT_SPACE_HOST];
    if (s->n_gpus)
        r->host_has_gpus = true;
}

/* One page of samples; false when the run has all it wanted. */
static bool add_page(struct insight_run *r, struct acc *a, struct json_object *arr, double interval)
{
    struct rt_sample s;
    rt_sample_init(&s);
    for (size_t i = 0; arr && i < json_object_array_length(arr) && a->n < r->st.samples; i++) {
        char err[128];
        rt_sample_reset(&s);
        s.nominal_interval_secs = interval;
        if (rt_sample_from_json(json_object_array_get_idx(arr, i), &s, err, sizeof(err)) == 0)
            add_sample(r, a, &s);
    }
    rt_sample_free(&s);
    return a->n < r->st.samples;
}

int insight_run_load(struct rt_vl_client *c, struct json_object *job, bool with_charts, struct insight_run *r)
{
    memset(r, 0, sizeof(*r));
    r->job = json_object_get(job);
    bool complete = insight_stats_from_job(job, &r->st);
    r->with_charts = with_charts;
    if (with_charts)
        insight_buckets_init(&r->charts, INSIGHT_SERIES, INSIGHT_MAX_POINTS, r->st.samples);
    double interval = 1;
    rt_json_get_double(job, "interval_secs", &interval);
    struct acc a = {0};
    rt_json_get_double(job, "started_at", &a.t);
    if (!r->st.samples || (complete && !with_charts))
        return 0;
    r->st.has_host = true;
    /* Each page is a tree of thousands of small json-c objects, freed
     * before the next large read: with fastbins glibc consolidates them on
     * every large allocation (a fifth of the time of a day's report). */
    mallopt(M_MXFAST, 0);
    /* A running job has more samples by now: the statistics stop where its
     * summary did, so both describe the same samples. */
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "id", json_object_new_int64((int64_t)r->st.id));
    if (rt_vl_client_send(c, M("GetJobSamples"), p, RT_VL_MORE) < 0) {
        CTL_ERR("lost the connection to the daemon");
        return RT_EXIT_UNREACHABLE;
    }
    int rc = 0;
    bool want = true, more = true;
    while (more) {
        struct json_object *reply = NULL;
        int e = rt_vl_client_recv(c, &reply, 30000);
        if (e < 0) {
            CTL_ERR("lost the connection to the daemon: %s", strerror(-e));
            return RT_EXIT_UNREACHABLE;
        }
        if (rt_vl_reply_error(reply)) {
            rc = ctl_report_error(reply);
            json_object_put(reply);
            return rc;
        }
        /* Read the stream to its end even when we have enough: the
         * connection is used again afterwards. */
        if (want)
            want = add_page(r, &a, rt_json_get_array(rt_vl_reply_params(reply), "samples"), interval);
        more = rt_vl_reply_continues(reply);
        json_object_put(reply);
    }
    if (!complete) { /* a daemon or a job record from before the summary's means */
        insight_set(&r->st, "avg_pss_bytes", a.n_mem ? a.mem_sum / (double)a.n_mem : 0);
        if (!insight_has(&r->st, "sustained_cores"))
            insight_set(&r->st, "sustained_cores", fmax(a.sustained, insight_fig(&r->st, "avg_cores")));
        if (insight_has_gpu(&r->st)) {
            insight_set(&r->st, "gpu_avg_vram_bytes", a.n_gpu ? a.vram_sum / (double)a.n_gpu : 0);
            insight_set(&r->st, "gpu_peak_usage", a.gpu_peak);
        }
    }
    return rc;
}

void insight_run_free(struct insight_run *r)
{
    json_object_put(r->job);
    if (r->with_charts)
        insight_buckets_free(&r->charts);
    memset(r, 0, sizeof(*r));
}
