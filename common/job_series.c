#include "rt/job_series.h"

#include "rt/json.h"
#include "rt/sample.h"
#include "rt/util.h"

#include <math.h>
#include <string.h>

const char *const rt_series_names[RT_SERIES_N] = {
    [RT_SERIES_CORES_JOB] = "job_cores",          [RT_SERIES_CORES_HOST] = "host_cpu_pct",
    [RT_SERIES_MEM_JOB] = "job_memory_bytes",     [RT_SERIES_RSS_JOB] = "job_rss_bytes",
    [RT_SERIES_MEM_HOST] = "host_memory_bytes",   [RT_SERIES_READ_JOB] = "job_read_bps",
    [RT_SERIES_WRITE_JOB] = "job_write_bps",      [RT_SERIES_READ_HOST] = "host_read_bps",
    [RT_SERIES_WRITE_HOST] = "host_write_bps",    [RT_SERIES_SPACE_HOST] = "host_space_used_bytes",
    [RT_SERIES_NET_IN_HOST] = "host_net_in_bps",  [RT_SERIES_NET_OUT_HOST] = "host_net_out_bps",
    [RT_SERIES_GPU_JOB] = "job_gpu_usage",        [RT_SERIES_GPU_HOST] = "host_gpu_usage",
    [RT_SERIES_GPUS_JOB] = "job_gpus_busy",       [RT_SERIES_GPUS_HOST] = "host_gpus_busy",
    [RT_SERIES_VRAM_JOB] = "job_vram_bytes",      [RT_SERIES_VRAM_HOST] = "host_vram_bytes",
};

/* What the series take from the host's values (the order of rt_csv_host). */
struct host {
    double cpu_pct, mem_used_mib, space;
    uint64_t read, write, recv, sent; /* bytes in the span, as rt_sample_disk_read_bytes & co. count them */
    size_t n_disks, n_gpus;
    double gpu, vram, busy;
};

/* Walks the list; *bad once it runs out or a count is not a small whole number. */
static double at(const double *h, size_t n, size_t *i, bool *bad)
{
    if (*i >= n) {
        *bad = true;
        return 0;
    }
    return h[(*i)++];
}

static size_t count_at(const double *h, size_t n, size_t *i, bool *bad)
{
    double v = at(h, n, i, bad);
    if (!(v >= 0 && v <= 1e6 && v == floor(v)))
        *bad = true;
    return *bad ? 0 : (size_t)v;
}

static bool host_parse(const double *h, size_t n, double secs, struct host *o)
{
    memset(o, 0, sizeof(*o));
    size_t i = 3;
    bool bad = false;
    o->cpu_pct = at(h, n, &i, &bad);
    i++; /* free */
    o->mem_used_mib = at(h, n, &i, &bad);
    i += 4; /* buffers, cached, active, inactive */
    o->n_disks = count_at(h, n, &i, &bad);
    for (size_t d = 0; d < o->n_disks && !bad; d++) {
        bool stacked = at(h, n, &i, &bad) != 0;
        uint64_t r = rt_sample_bytes_in(at(h, n, &i, &bad), secs), w = rt_sample_bytes_in(at(h, n, &i, &bad), secs);
        if (!stacked) {
            o->read += r;
            o->write += w;
        }
        size_t mounts = count_at(h, n, &i, &bad);
        for (size_t m = 0; m < mounts && !bad; m++) {
            i++; /* total */
            o->space += at(h, n, &i, &bad); /* used, as df's Used */
            i++; /* available */
        }
    }
    size_t nets = count_at(h, n, &i, &bad);
    for (size_t k = 0; k < nets && !bad; k++) {
        o->recv += rt_sample_bytes_in(at(h, n, &i, &bad), secs);
        o->sent += rt_sample_bytes_in(at(h, n, &i, &bad), secs);
    }
    o->n_gpus = count_at(h, n, &i, &bad);
    for (size_t g = 0; g < o->n_gpus && !bad; g++) {
        double use = at(h, n, &i, &bad);
        o->gpu += use / 100.0;
        o->vram += at(h, n, &i, &bad);
        o->busy += use > 0;
    }
    return !bad && i == n;
}

static void values(const struct host *h, double dt, bool has_job, const struct rt_job_figures *p, double *v)
{
    /* NaN + x is NaN: a series is unknown where its part of the sample is absent. */
    double unknown = has_job ? 0 : NAN;
    v[RT_SERIES_CORES_JOB] = unknown + p->cores_used;
    v[RT_SERIES_CORES_HOST] = h->cpu_pct;
    /* The job's memory: a tree's PSS, a cgroup's anon + shmem + kernel
     * (a sample from before it: the PSS); a cgroup has no RSS. */
    double tree = p->gates & RT_GATE_TREE ? 0 : NAN;
    v[RT_SERIES_MEM_JOB] = unknown + (p->gates & RT_GATE_MEM ? (double)p->mem_bytes : tree + (double)p->pss_bytes);
    v[RT_SERIES_RSS_JOB] = unknown + tree + (double)p->rss_bytes;
    v[RT_SERIES_MEM_HOST] = h->mem_used_mib * RT_MIB;
    v[RT_SERIES_READ_JOB] = dt > 0 ? unknown + (double)p->disk_read_bytes / dt : NAN;
    v[RT_SERIES_WRITE_JOB] = dt > 0 ? unknown + (double)p->disk_write_bytes / dt : NAN;
    v[RT_SERIES_READ_HOST] = dt > 0 ? (double)h->read / dt : NAN;
    v[RT_SERIES_WRITE_HOST] = dt > 0 ? (double)h->write / dt : NAN;
    v[RT_SERIES_SPACE_HOST] = h->n_disks ? h->space : NAN;
    v[RT_SERIES_NET_IN_HOST] = dt > 0 ? (double)h->recv / dt : NAN;
    v[RT_SERIES_NET_OUT_HOST] = dt > 0 ? (double)h->sent / dt : NAN;
    double gunknown = p->gates & RT_GATE_GPU ? 0 : NAN;
    v[RT_SERIES_GPU_JOB] = gunknown + p->gpu_usage;
    v[RT_SERIES_GPUS_JOB] = gunknown + p->gpu_utilized;
    v[RT_SERIES_VRAM_JOB] = gunknown + (double)p->gpu_vram_bytes;
    double hunknown = h->n_gpus ? 0 : NAN;
    v[RT_SERIES_GPU_HOST] = hunknown + h->gpu;
    v[RT_SERIES_GPUS_HOST] = hunknown + h->busy;
    v[RT_SERIES_VRAM_HOST] = hunknown + h->vram;
}

bool rt_series_add(struct rt_series_run *r, const double *host, size_t nhost, double secs, bool has_job,
                   const struct rt_job_figures *f)
{
    struct host h;
    if (!host_parse(host, nhost, secs, &h))
        return false;
    double v[RT_SERIES_N];
    values(&h, secs, has_job, f, v);
    r->t += secs;
    if (!isnan(v[RT_SERIES_CORES_JOB]))
        rt_fig_sustained_add(&r->block_core_secs, &r->block_secs, &r->sustained, v[RT_SERIES_CORES_JOB], secs);
    if (r->charts)
        rt_buckets_add(r->charts, r->n, r->t, v);
    r->n++;
    if (!isnan(v[RT_SERIES_MEM_JOB])) {
        r->mem_sum += v[RT_SERIES_MEM_JOB];
        r->n_mem++;
    }
    if (!isnan(v[RT_SERIES_GPU_JOB])) {
        r->vram_sum += v[RT_SERIES_VRAM_JOB];
        r->n_gpu++;
        if (v[RT_SERIES_GPU_JOB] > r->gpu_peak)
            r->gpu_peak = v[RT_SERIES_GPU_JOB];
    }
    r->net_in_bytes += (double)h.recv;
    r->net_out_bytes += (double)h.sent;
    if (v[RT_SERIES_SPACE_HOST] > r->space_peak_bytes)
        r->space_peak_bytes = v[RT_SERIES_SPACE_HOST];
    r->host_gpus |= h.n_gpus > 0;
    return true;
}

/* ---- the wire ---- */

static struct json_object *num(double v)
{
    return isfinite(v) ? json_object_new_double(v) : NULL; /* json-c writes %.17g: exact */
}

static const struct {
    const char *key;
    size_t off;
} sums[] = {
    {"mem_sum", offsetof(struct rt_series_run, mem_sum)},
    {"vram_sum", offsetof(struct rt_series_run, vram_sum)},
    {"gpu_peak", offsetof(struct rt_series_run, gpu_peak)},
    {"sustained_cores", offsetof(struct rt_series_run, sustained)},
    {"net_in_bytes", offsetof(struct rt_series_run, net_in_bytes)},
    {"net_out_bytes", offsetof(struct rt_series_run, net_out_bytes)},
    {"space_peak_bytes", offsetof(struct rt_series_run, space_peak_bytes)},
};

void rt_series_to_json(const struct rt_series_run *r, struct json_object *params)
{
    json_object_object_add(params, "samples", rt_json_u64(r->n));
    const struct rt_buckets *b = r->charts;
    if (b) {
        struct json_object *time = json_object_new_array_ext((int)b->n), *series = json_object_new_object();
        for (size_t i = 0; i < b->n; i++) {
            double t;
            json_object_array_add(time, rt_bucket_time(b, i, &t) ? num(t) : NULL);
        }
        for (size_t k = 0; k < b->nseries; k++) {
            struct json_object *s = json_object_new_object(), *a[3];
            for (int j = 0; j < 3; j++)
                a[j] = json_object_new_array_ext((int)b->n);
            for (size_t i = 0; i < b->n; i++) {
                double v[3];
                bool known = rt_bucket_value(b, i, k, &v[0], &v[1], &v[2]);
                for (int j = 0; j < 3; j++)
                    json_object_array_add(a[j], known ? num(v[j]) : NULL);
            }
            json_object_object_add(s, "lo", a[0]);
            json_object_object_add(s, "mean", a[1]);
            json_object_object_add(s, "hi", a[2]);
            json_object_object_add(series, rt_series_names[k], s);
        }
        json_object_object_add(params, "time", time);
        json_object_object_add(params, "series", series);
    }
    struct json_object *t = json_object_new_object();
    json_object_object_add(t, "mem_samples", rt_json_u64(r->n_mem));
    json_object_object_add(t, "gpu_samples", rt_json_u64(r->n_gpu));
    for (size_t i = 0; i < RT_ARRAY_SIZE(sums); i++)
        json_object_object_add(t, sums[i].key, num(*(const double *)(const void *)((const char *)r + sums[i].off)));
    json_object_object_add(t, "host_gpus", json_object_new_boolean(r->host_gpus));
    json_object_object_add(params, "totals", t);
}

static bool get_num(struct json_object *a, size_t i, double *v)
{
    struct json_object *x = json_object_array_get_idx(a, i);
    if (!json_object_is_type(x, json_type_double) && !json_object_is_type(x, json_type_int))
        return false;
    *v = json_object_get_double(x);
    return true;
}

bool rt_series_from_json(struct json_object *params, struct rt_series_run *r)
{
    struct json_object *t = rt_json_get_object(params, "totals");
    if (!rt_json_get_u64(params, "samples", &r->n) || !t || !rt_json_get_u64(t, "mem_samples", &r->n_mem) ||
        !rt_json_get_u64(t, "gpu_samples", &r->n_gpu) || !rt_json_get_bool(t, "host_gpus", &r->host_gpus))
        return false;
    for (size_t i = 0; i < RT_ARRAY_SIZE(sums); i++)
        rt_json_get_double(t, sums[i].key, (double *)(void *)((char *)r + sums[i].off));
    struct rt_buckets *b = r->charts;
    if (!b)
        return true;
    struct json_object *time = rt_json_get_array(params, "time"), *series = rt_json_get_object(params, "series");
    if (!time || !series)
        return false;
    size_t n = json_object_array_length(time);
    rt_buckets_init(b, RT_SERIES_N, n, n);
    for (size_t i = 0; i < n; i++)
        if (get_num(time, i, &b->t_sum[i]))
            b->t_count[i] = 1;
    for (size_t k = 0; k < RT_SERIES_N; k++) {
        struct json_object *s = rt_json_get_object(series, rt_series_names[k]);
        struct json_object *lo = rt_json_get_array(s, "lo"), *mean = rt_json_get_array(s, "mean"),
                           *hi = rt_json_get_array(s, "hi");
        for (size_t i = 0; lo && mean && hi && i < n; i++) {
            size_t c = i * RT_SERIES_N + k;
            if (get_num(lo, i, &b->lo[c]) && get_num(mean, i, &b->sum[c]) && get_num(hi, i, &b->hi[c]))
                b->count[c] = 1;
        }
    }
    return true;
}
