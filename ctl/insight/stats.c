#include "insight/stats.h"

#include "rt/json.h"

#include <string.h>

static double num(struct json_object *o, const char *k)
{
    double v = 0;
    rt_json_get_double(o, k, &v);
    return v;
}

bool insight_stats_from_job(struct json_object *job, struct insight_stats *st)
{
    struct json_object *s = rt_json_get_object(job, "summary");
    rt_json_get_u64(job, "id", &st->id);
    st->duration_secs = num(s, "duration_secs");
    rt_json_get_u64(s, "samples", &st->samples);
    st->cores_mean = num(s, "avg_cores");
    st->cores_peak = num(s, "peak_cores");
    st->mem_peak_bytes = num(s, "peak_pss_bytes");
    st->rss_peak_bytes = num(s, "peak_rss_bytes");
    st->disk_read_bytes = num(s, "disk_read_bytes");
    st->disk_write_bytes = num(s, "disk_write_bytes");
    st->has_gpu = rt_json_get_double(s, "gpu_avg_usage", &st->gpu_mean);
    st->vram_peak_bytes = num(s, "gpu_peak_vram_bytes");
    bool known = rt_json_get_double(s, "avg_pss_bytes", &st->mem_mean_bytes);
    if (st->has_gpu)
        known = rt_json_get_double(s, "gpu_peak_usage", &st->gpu_peak) &&
                rt_json_get_double(s, "gpu_avg_vram_bytes", &st->vram_mean_bytes) && known;
    return known;
}

static void take_max(double *acc, double v)
{
    if (v > *acc)
        *acc = v;
}

void insight_stats_combine(const struct insight_stats *runs, size_t n, struct insight_stats *out)
{
    memset(out, 0, sizeof(*out));
    size_t ngpu = 0;
    for (size_t i = 0; i < n; i++) {
        const struct insight_stats *r = &runs[i];
        out->duration_secs += r->duration_secs / (double)n;
        out->samples += r->samples;
        out->cores_mean += r->cores_mean / (double)n;
        out->mem_mean_bytes += r->mem_mean_bytes / (double)n;
        take_max(&out->cores_peak, r->cores_peak);
        take_max(&out->mem_peak_bytes, r->mem_peak_bytes);
        take_max(&out->rss_peak_bytes, r->rss_peak_bytes);
        take_max(&out->disk_read_bytes, r->disk_read_bytes);
        take_max(&out->disk_write_bytes, r->disk_write_bytes);
        if (r->has_host) {
            out->has_host = true;
            take_max(&out->net_in_bytes, r->net_in_bytes);
            take_max(&out->net_out_bytes, r->net_out_bytes);
            take_max(&out->space_peak_bytes, r->space_peak_bytes);
        }
        if (r->has_gpu) {
            ngpu++;
            out->has_gpu = true;
            out->gpu_mean += r->gpu_mean;
            out->vram_mean_bytes += r->vram_mean_bytes;
            take_max(&out->gpu_peak, r->gpu_peak);
            take_max(&out->vram_peak_bytes, r->vram_peak_bytes);
        }
    }
    if (ngpu) {
        out->gpu_mean /= (double)ngpu;
        out->vram_mean_bytes /= (double)ngpu;
    }
}

struct json_object *insight_stats_json(const struct insight_stats *s)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "id", s->id ? json_object_new_int64((int64_t)s->id) : NULL);
#define D(k, v) json_object_object_add(o, k, rt_json_double(v, 4))
#define G(k, v) json_object_object_add(o, k, s->has_gpu ? rt_json_double(v, 4) : NULL)
#define H(k, v) json_object_object_add(o, k, s->has_host ? rt_json_double(v, 4) : NULL)
    D("duration_secs", s->duration_secs);
    json_object_object_add(o, "samples", json_object_new_int64((int64_t)s->samples));
    D("cores_mean", s->cores_mean);
    D("cores_peak", s->cores_peak);
    D("memory_pss_mean_bytes", s->mem_mean_bytes);
    D("memory_pss_peak_bytes", s->mem_peak_bytes);
    D("memory_rss_peak_bytes", s->rss_peak_bytes);
    G("gpu_mean", s->gpu_mean);
    G("gpu_peak", s->gpu_peak);
    G("vram_mean_bytes", s->vram_mean_bytes);
    G("vram_peak_bytes", s->vram_peak_bytes);
    D("disk_read_bytes", s->disk_read_bytes);
    D("disk_write_bytes", s->disk_write_bytes);
    H("host_net_in_bytes", s->net_in_bytes);
    H("host_net_out_bytes", s->net_out_bytes);
    H("host_disk_space_peak_bytes", s->space_peak_bytes);
#undef D
#undef G
#undef H
    return o;
}
