#include "store/figures.h"

#include "rt/json.h"
#include "rt/varlink.h"

#include <math.h>
#include <string.h>

enum { HSEQ, TIMESTAMP, INTERVAL, GATES = 11 };

/* 10^places, exact (pow() was most of a stored figure's decoding). */
static double pow10_of(int places)
{
    static const double p[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
    return places >= 0 && places < (int)(sizeof(p) / sizeof(p[0])) ? p[places] : pow(10, places);
}

static int64_t scaled(double v, double scale)
{
    double m = round(v * scale);
    return isfinite(m) && fabs(m) < 0x1p62 ? (int64_t)m : 0;
}

double rt_figures_round(double v, int places)
{
    double scale = pow10_of(places);
    return (double)scaled(v, scale) / scale;
}

void rt_figures_encode(const struct rt_job_figures *f, uint64_t hseq, uint64_t timestamp_ms, int64_t v[RT_FIG_NUMS])
{
    memset(v, 0, RT_FIG_NUMS * sizeof(*v));
    v[HSEQ] = (int64_t)hseq;
    v[TIMESTAMP] = (int64_t)timestamp_ms;
    v[INTERVAL] = (int64_t)f->interval_ms;
    v[GATES] = f->gates;
    for (size_t i = 0; i < rt_fig_nsamples; i++) {
        const struct rt_fig_sample *r = &rt_fig_samples[i];
        double x = rt_fig_get(f, r->type, r->off);
        v[r->slot] = r->type == RT_FT_F64 ? scaled(x, pow10_of(r->places)) : (int64_t)rt_fig_u64(x);
    }
}

bool rt_figures_decode(const struct rt_rec *r, struct rt_job_figures *f, uint64_t *hseq, uint64_t *timestamp_ms)
{
    bool first = r->tlen == strlen(RT_FIG_TEMPLATE_FIRST) && memcmp(r->tmpl, RT_FIG_TEMPLATE_FIRST, r->tlen) == 0;
    if (r->n < RT_FIG_NUMS_MIN ||
        (!first && (r->tlen != strlen(RT_FIG_TEMPLATE) || memcmp(r->tmpl, RT_FIG_TEMPLATE, r->tlen) != 0)))
        return false;
    const int64_t *v = r->v;
    *hseq = (uint64_t)v[HSEQ];
    *timestamp_ms = (uint64_t)v[TIMESTAMP];
    memset(f, 0, sizeof(*f));
    f->interval_ms = (uint64_t)v[INTERVAL];
    f->gates = (uint32_t)v[GATES] | (first ? RT_GATES_FIRST_RECORDS : 0);
    for (size_t i = 0; i < rt_fig_nsamples; i++) {
        const struct rt_fig_sample *s = &rt_fig_samples[i];
        if (s->slot >= r->n)
            continue;
        int64_t x = v[s->slot];
        rt_fig_set(f, s->type, s->off, s->type == RT_FT_F64 ? (double)x / pow10_of(s->places) : (double)(uint64_t)x);
    }
    return true;
}

bool rt_figures_from_json(struct json_object *o, double interval_secs, struct rt_job_figures *f)
{
    struct json_object *cpu = rt_json_get_object(o, "cpu");
    if (!cpu)
        return false;
    rt_job_figures_from_json(cpu, f);
    if (!rt_json_get_u64(o, "actual_interval_ms", &f->interval_ms))
        f->interval_ms = (uint64_t)(interval_secs * 1000);
    /* At the precision the store keeps. */
    for (size_t i = 0; i < rt_fig_nsamples; i++) {
        const struct rt_fig_sample *r = &rt_fig_samples[i];
        if (r->type == RT_FT_F64)
            rt_fig_set(f, r->type, r->off, rt_figures_round(rt_fig_get(f, r->type, r->off), r->places));
    }
    return true;
}

bool rt_figures_from_line(const char *line, size_t len, double interval_secs, struct rt_job_figures *f)
{
    char err[128];
    struct json_object *o = rt_vl_parse(line, len, err, sizeof(err));
    bool ok = rt_figures_from_json(o, interval_secs, f);
    json_object_put(o);
    return ok;
}
