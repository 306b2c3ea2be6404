#include "jobs/summary.h"

#include "rt/json.h"
#include "rt/sample.h"

#include <string.h>

void rt_job_summary_note_cores(struct rt_job_summary *s, double cores)
{
    if (cores > s->peak_cores)
        s->peak_cores = cores;
}

void rt_job_summary_add(struct rt_job_summary *s, const struct rt_job_figures *f)
{
    double span = (double)f->interval_ms / 1000;
    s->samples++;
    s->cpu_secs += f->utime_secs + f->stime_secs;
    rt_job_summary_note_cores(s, f->cores_used);
    if (f->child_count > s->peak_children)
        s->peak_children = f->child_count;
    if (f->rss_bytes > s->peak_rss_bytes)
        s->peak_rss_bytes = f->rss_bytes;
    if (f->pss_bytes > s->peak_pss_bytes)
        s->peak_pss_bytes = f->pss_bytes;
    /* Means of what the samples show (whole MiB; VRAM to 4 places of MiB). */
    s->pss_sum_bytes += (double)(f->pss_bytes / RT_MIB * RT_MIB);
    s->disk_read_bytes += f->disk_read_bytes;
    s->disk_write_bytes += f->disk_write_bytes;
    if (!f->has_gpu)
        return;
    s->has_gpu = true;
    s->gpu_usage_secs += f->gpu_usage * span;
    s->gpu_secs += span;
    if (f->gpu_vram_bytes > s->gpu_peak_vram_bytes)
        s->gpu_peak_vram_bytes = f->gpu_vram_bytes;
    if (f->gpu_usage > s->gpu_peak_usage)
        s->gpu_peak_usage = f->gpu_usage;
    s->gpu_vram_sum_bytes += rt_round_dec((double)f->gpu_vram_bytes / (double)RT_MIB, RT_DEC_MIB) * (double)RT_MIB;
    if (f->has_gpu_energy) {
        s->has_gpu_energy = true;
        s->gpu_energy_joules += f->gpu_energy_joules;
    }
}

bool rt_job_summary_note_gpus(struct rt_job_summary *s, const char *const *uuids, size_t n)
{
    bool grew = false;
    for (size_t i = 0; i < n; i++) {
        bool known = false;
        for (size_t k = 0; s->gpus && k < json_object_array_length(s->gpus) && !known; k++)
            known = strcmp(json_object_get_string(json_object_array_get_idx(s->gpus, k)), uuids[i]) == 0;
        if (known)
            continue;
        if (!s->gpus)
            s->gpus = json_object_new_array();
        json_object_array_add(s->gpus, json_object_new_string(uuids[i]));
        grew = true;
    }
    return grew;
}

double rt_job_summary_gpu_avg(const struct rt_job_summary *s)
{
    return s->gpu_secs > 0 ? s->gpu_usage_secs / s->gpu_secs : 0;
}

static void add(struct json_object *o, const char *k, struct json_object *v)
{
    json_object_object_add(o, k, v);
}

struct json_object *rt_job_summary_to_record(const struct rt_job_summary *s)
{
    struct json_object *t = json_object_new_object();
    add(t, "samples", rt_json_u64(s->samples));
    add(t, "cpu_secs", json_object_new_double(s->cpu_secs));
    add(t, "peak_cores", json_object_new_double(s->peak_cores));
    add(t, "peak_children", json_object_new_int64(s->peak_children));
    add(t, "peak_rss_bytes", rt_json_u64(s->peak_rss_bytes));
    add(t, "peak_pss_bytes", rt_json_u64(s->peak_pss_bytes));
    add(t, "disk_read_bytes", rt_json_u64(s->disk_read_bytes));
    add(t, "disk_write_bytes", rt_json_u64(s->disk_write_bytes));
    add(t, "has_gpu", json_object_new_boolean(s->has_gpu));
    add(t, "gpu_usage_secs", json_object_new_double(s->gpu_usage_secs));
    add(t, "gpu_secs", json_object_new_double(s->gpu_secs));
    add(t, "gpu_avg_usage", json_object_new_double(rt_job_summary_gpu_avg(s))); /* for readers of old records */
    add(t, "gpu_peak_vram_bytes", rt_json_u64(s->gpu_peak_vram_bytes));
    add(t, "has_gpu_energy", json_object_new_boolean(s->has_gpu_energy));
    add(t, "gpu_energy_joules", json_object_new_double(s->gpu_energy_joules));
    add(t, "gpus", s->gpus ? json_object_get(s->gpus) : NULL);
    if (s->means_known) {
        add(t, "pss_sum_bytes", json_object_new_double(s->pss_sum_bytes));
        add(t, "gpu_peak_usage", json_object_new_double(s->gpu_peak_usage));
        add(t, "gpu_vram_sum_bytes", json_object_new_double(s->gpu_vram_sum_bytes));
    }
    return t;
}

void rt_job_summary_from_record(struct rt_job_summary *s, struct json_object *t, double interval_secs)
{
    uint64_t u;
    rt_json_get_u64(t, "samples", &s->samples);
    rt_json_get_double(t, "cpu_secs", &s->cpu_secs);
    rt_json_get_double(t, "peak_cores", &s->peak_cores);
    if (rt_json_get_u64(t, "peak_children", &u))
        s->peak_children = (uint32_t)u;
    rt_json_get_u64(t, "peak_rss_bytes", &s->peak_rss_bytes);
    rt_json_get_u64(t, "peak_pss_bytes", &s->peak_pss_bytes);
    rt_json_get_u64(t, "disk_read_bytes", &s->disk_read_bytes);
    rt_json_get_u64(t, "disk_write_bytes", &s->disk_write_bytes);
    rt_json_get_bool(t, "has_gpu", &s->has_gpu);
    if (!rt_json_get_double(t, "gpu_secs", &s->gpu_secs) ||
        !rt_json_get_double(t, "gpu_usage_secs", &s->gpu_usage_secs)) {
        /* Records from before the weights were kept: every sample as long
         * as the interval. */
        double avg = 0;
        rt_json_get_double(t, "gpu_avg_usage", &avg);
        s->gpu_secs = s->has_gpu ? (double)s->samples * interval_secs : 0;
        s->gpu_usage_secs = avg * s->gpu_secs;
    }
    rt_json_get_u64(t, "gpu_peak_vram_bytes", &s->gpu_peak_vram_bytes);
    rt_json_get_bool(t, "has_gpu_energy", &s->has_gpu_energy);
    rt_json_get_double(t, "gpu_energy_joules", &s->gpu_energy_joules);
    s->means_known = rt_json_get_double(t, "pss_sum_bytes", &s->pss_sum_bytes) || !s->samples;
    rt_json_get_double(t, "gpu_peak_usage", &s->gpu_peak_usage);
    rt_json_get_double(t, "gpu_vram_sum_bytes", &s->gpu_vram_sum_bytes);
    struct json_object *g = rt_json_get_array(t, "gpus");
    json_object_put(s->gpus);
    s->gpus = NULL;
    for (size_t i = 0; g && i < json_object_array_length(g); i++) {
        const char *uuid = json_object_get_string(json_object_array_get_idx(g, i));
        if (json_object_is_type(json_object_array_get_idx(g, i), json_type_string))
            rt_job_summary_note_gpus(s, &uuid, 1);
    }
}

void rt_job_summary_free(struct rt_job_summary *s)
{
    json_object_put(s->gpus);
    s->gpus = NULL;
}
