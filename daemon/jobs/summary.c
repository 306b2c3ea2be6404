#include "jobs/summary.h"

#include "rt/json.h"
#include "rt/sample.h"

#include <math.h>
#include <string.h>

void rt_job_summary_add(struct rt_job_summary *s, const struct rt_job_figures *f)
{
    double span = (double)f->interval_ms / 1000;
    s->samples++;
    s->gates |= f->gates;
    for (int g = 0; g < RT_NGATES; g++)
        if (f->gates & 1u << g)
            s->gate_secs[g] += span;
    for (size_t i = 0; i < rt_fig_ntotals; i++) {
        const struct rt_fig_total *t = &rt_fig_totals[i];
        double v = 0, v2 = 0;
        bool has = t->rule != RT_RULE_PER_SEC && rt_fig_sample_value(f, (size_t)t->src, &v);
        bool has2 = t->src2 >= 0 && rt_fig_sample_value(f, (size_t)t->src2, &v2);
        if (!has && !has2)
            continue;
        v = t->rule == RT_RULE_PEAK ? fmax(v, v2) : v + v2;
        double now = rt_fig_get(s, t->type, t->off);
        switch (t->rule) {
        case RT_RULE_SUM: now += v; break;
        case RT_RULE_PEAK: now = fmax(now, v); break;
        /* Means of what the samples show (PSS in whole MiB, VRAM to 4
         * places of MiB). */
        case RT_RULE_MEAN: now += rt_fig_shown(&rt_fig_samples[t->src], v); break;
        case RT_RULE_TIME_MEAN: now += v * span; break;
        case RT_RULE_SUSTAINED: rt_fig_sustained_add(&s->block_core_secs, &s->block_secs, &now, v, span); break;
        case RT_RULE_PER_SEC: break;
        }
        rt_fig_set(s, t->type, t->off, now);
    }
}

void rt_job_summary_note_peak(struct rt_job_summary *s, const char *key, uint32_t gate, double v)
{
    int row = rt_fig_total_find(key);
    if (row < 0)
        return;
    const struct rt_fig_total *t = &rt_fig_totals[row];
    rt_fig_set(s, t->type, t->off, fmax(rt_fig_get(s, t->type, t->off), v));
    s->gates |= gate;
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

static struct json_object *value_json(const struct rt_fig_total *t, double v)
{
    if (t->type == RT_FT_F64 && t->rule != RT_RULE_MEAN)
        return rt_json_double(v, t->decimals);
    return t->type == RT_FT_U32 ? json_object_new_int64((int64_t)v) : rt_json_u64(rt_fig_u64(v));
}

struct json_object *rt_job_summary_json(const struct rt_job_summary *s, double duration_secs)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "duration_secs", rt_json_double(duration_secs, 3));
    json_object_object_add(o, "samples", rt_json_u64(s->samples));
    for (size_t i = 0; i < rt_fig_ntotals; i++) {
        double v;
        bool known = rt_fig_total_value(s, i, duration_secs, &v);
        rt_fig_summary_put(o, rt_fig_totals[i].key, known ? value_json(&rt_fig_totals[i], v) : NULL);
    }
    bool gpu = s->gates & RT_GATE_GPU;
    json_object_object_add(o, "gpus", gpu ? (s->gpus ? json_object_get(s->gpus) : json_object_new_array()) : NULL);
    return o;
}

static struct json_object *record_json(enum rt_fig_type type, double v)
{
    switch (type) {
    case RT_FT_U32: return json_object_new_int64((int64_t)v);
    case RT_FT_U64: return rt_json_u64(rt_fig_u64(v));
    case RT_FT_F64: return json_object_new_double(v);
    }
    return NULL;
}

struct json_object *rt_job_summary_to_record(const struct rt_job_summary *s)
{
    struct json_object *t = json_object_new_object();
    json_object_object_add(t, "samples", rt_json_u64(s->samples));
    for (int g = 0; g < RT_NGATES; g++) {
        json_object_object_add(t, rt_fig_gates[g].record, json_object_new_boolean(s->gates >> g & 1));
        if (rt_fig_gates[g].secs_record)
            json_object_object_add(t, rt_fig_gates[g].secs_record, json_object_new_double(s->gate_secs[g]));
    }
    for (size_t i = 0; i < rt_fig_ntotals; i++) {
        const struct rt_fig_total *r = &rt_fig_totals[i];
        if (r->rule == RT_RULE_PER_SEC || (s->unknown >> i & 1))
            continue;
        double v = rt_fig_get(s, r->type, r->off);
        json_object_object_add(t, r->record ? r->record : r->key, record_json(r->type, v));
        if (r->rule == RT_RULE_TIME_MEAN) { /* the mean too, as records before the weights had it */
            double secs = rt_fig_gate_secs(s, rt_fig_samples[r->src].gate);
            json_object_object_add(t, r->key, json_object_new_double(secs > 0 ? v / secs : 0));
        }
    }
    json_object_object_add(t, "gpus", s->gpus ? json_object_get(s->gpus) : NULL);
    return t;
}

static bool record_get(struct json_object *t, const char *key, enum rt_fig_type type, double *v)
{
    if (type == RT_FT_F64)
        return rt_json_get_double(t, key, v);
    uint64_t u;
    if (!rt_json_get_u64(t, key, &u))
        return false;
    *v = (double)u;
    return true;
}

void rt_job_summary_from_record(struct rt_job_summary *s, struct json_object *t, double interval_secs)
{
    rt_json_get_u64(t, "samples", &s->samples);
    bool secs_known[RT_NGATES] = {false};
    for (int g = 0; g < RT_NGATES; g++) {
        bool on = rt_fig_gates[g].implied;
        rt_json_get_bool(t, rt_fig_gates[g].record, &on);
        s->gates = (s->gates & ~(1u << g)) | (uint32_t)on << g;
        if (rt_fig_gates[g].secs_record)
            secs_known[g] = rt_json_get_double(t, rt_fig_gates[g].secs_record, &s->gate_secs[g]);
    }
    s->unknown = 0;
    for (size_t i = 0; i < rt_fig_ntotals; i++) {
        const struct rt_fig_total *r = &rt_fig_totals[i];
        if (r->rule == RT_RULE_PER_SEC)
            continue;
        double v;
        bool found = record_get(t, r->record ? r->record : r->key, r->type, &v);
        int g = r->rule == RT_RULE_TIME_MEAN ? __builtin_ctz(rt_fig_samples[r->src].gate) : 0;
        if (found && (r->rule != RT_RULE_TIME_MEAN || secs_known[g])) {
            rt_fig_set(s, r->type, r->off, v);
        } else if (r->rule == RT_RULE_TIME_MEAN) {
            /* A record from before the weights were kept: its mean, every
             * sample as long as the interval. */
            double avg = 0;
            rt_json_get_double(t, r->key, &avg);
            s->gate_secs[g] = s->gates >> g & 1 ? (double)s->samples * interval_secs : 0;
            secs_known[g] = true;
            rt_fig_set(s, r->type, r->off, avg * s->gate_secs[g]);
        } else if (r->later && s->samples) {
            s->unknown |= 1ull << i;
        }
    }
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
