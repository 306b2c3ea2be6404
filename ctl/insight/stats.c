#include "insight/stats.h"

#include "rt/json.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(((struct insight_stats *)0)->fig) / sizeof(double) >= 64, "a slot per rt_fig_totals row");

static size_t row_of(const char *key)
{
    int row = rt_fig_total_find(key);
    if (row < 0)
        abort(); /* a key that is not in the table: a bug, caught by any test */
    return (size_t)row;
}

double insight_fig(const struct insight_stats *st, const char *key)
{
    size_t row = row_of(key);
    return st->has_fig[row] ? st->fig[row] : 0;
}

bool insight_has(const struct insight_stats *st, const char *key)
{
    return st->has_fig[row_of(key)];
}

double insight_memory_peak(const struct insight_stats *st)
{
    return insight_has(st, "memory_peak_bytes") ? insight_fig(st, "memory_peak_bytes") : insight_fig(st, "peak_pss_bytes");
}

bool insight_has_gpu(const struct insight_stats *st)
{
    return insight_has(st, "gpu_avg_usage");
}

void insight_set(struct insight_stats *st, const char *key, double v)
{
    size_t row = row_of(key);
    st->fig[row] = v;
    st->has_fig[row] = true;
}

bool insight_stats_from_job(struct json_object *job, struct insight_stats *st)
{
    struct json_object *s = rt_json_get_object(job, "summary");
    rt_json_get_u64(job, "id", &st->id);
    st->duration_secs = 0;
    rt_json_get_double(s, "duration_secs", &st->duration_secs);
    rt_json_get_u64(s, "samples", &st->samples);
    for (size_t i = 0; i < rt_fig_ntotals; i++)
        if (rt_fig_totals[i].stat)
            st->has_fig[i] = rt_fig_summary_get(s, rt_fig_totals[i].key, &st->fig[i]);
    /* What the summary lacks (a record from before its means), the samples
     * have: only for the figures a run has, those of a gate another of its
     * totals shows (its PSS for a process tree, the GPU ones with a GPU
     * backend). */
    uint32_t seen = 0;
    for (size_t i = 0; i < rt_fig_ntotals; i++)
        if (st->has_fig[i] && rt_fig_totals[i].src >= 0)
            seen |= rt_fig_samples[rt_fig_totals[i].src].gate;
    for (size_t i = 0; i < rt_fig_ntotals; i++) {
        const struct rt_fig_total *t = &rt_fig_totals[i];
        bool wanted = t->stat && (t->src < 0 || (rt_fig_samples[t->src].gate & ~seen) == 0);
        if (wanted && !st->has_fig[i])
            return false;
    }
    return true;
}

static void take_max(double *acc, double v)
{
    if (v > *acc)
        *acc = v;
}

void insight_stats_combine(const struct insight_stats *runs, size_t n, struct insight_stats *out)
{
    memset(out, 0, sizeof(*out));
    size_t have[64] = {0};
    for (size_t i = 0; i < n; i++) {
        const struct insight_stats *r = &runs[i];
        out->duration_secs += r->duration_secs / (double)n;
        out->samples += r->samples;
        for (size_t k = 0; k < rt_fig_ntotals; k++) {
            if (!r->has_fig[k])
                continue;
            enum rt_fig_rule rule = rt_fig_totals[k].rule;
            if (rule == RT_RULE_PEAK || rule == RT_RULE_SUM || rule == RT_RULE_SUSTAINED)
                take_max(&out->fig[k], r->fig[k]);
            else
                out->fig[k] += r->fig[k];
            out->has_fig[k] = true;
            have[k]++;
        }
        if (r->has_host) {
            out->has_host = true;
            take_max(&out->net_in_bytes, r->net_in_bytes);
            take_max(&out->net_out_bytes, r->net_out_bytes);
            take_max(&out->space_peak_bytes, r->space_peak_bytes);
        }
    }
    for (size_t k = 0; k < rt_fig_ntotals; k++) {
        enum rt_fig_rule rule = rt_fig_totals[k].rule;
        if (have[k] && rule != RT_RULE_PEAK && rule != RT_RULE_SUM && rule != RT_RULE_SUSTAINED)
            out->fig[k] /= (double)have[k];
    }
}

struct json_object *insight_stats_json(const struct insight_stats *s)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "id", s->id ? json_object_new_int64((int64_t)s->id) : NULL);
    json_object_object_add(o, "duration_secs", rt_json_double(s->duration_secs, 4));
    json_object_object_add(o, "samples", json_object_new_int64((int64_t)s->samples));
    for (size_t k = 0; k < rt_fig_ntotals; k++)
        if (rt_fig_totals[k].stat)
            json_object_object_add(o, rt_fig_totals[k].stat, s->has_fig[k] ? rt_json_double(s->fig[k], 4) : NULL);
#define H(k, v) json_object_object_add(o, k, s->has_host ? rt_json_double(v, 4) : NULL)
    H("host_net_in_bytes", s->net_in_bytes);
    H("host_net_out_bytes", s->net_out_bytes);
    H("host_disk_space_peak_bytes", s->space_peak_bytes);
#undef H
    return o;
}
