#include "store/figures.h"

#include "rt/json.h"
#include "rt/sample.h"
#include "rt/varlink.h"

#include <math.h>
#include <string.h>

static int64_t scaled(double v, double scale)
{
    double m = round(v * scale);
    return isfinite(m) && fabs(m) < 0x1p62 ? (int64_t)m : 0;
}

double rt_figures_round(double v, int places)
{
    double scale = pow(10, places);
    return (double)scaled(v, scale) / scale;
}

void rt_figures_encode(const struct rt_job_figures *f, uint64_t hseq, uint64_t timestamp_ms, int64_t v[RT_FIG_NUMS])
{
    int64_t x[RT_FIG_NUMS] = {
        (int64_t)hseq,
        (int64_t)timestamp_ms,
        (int64_t)f->interval_ms,
        f->child_count,
        scaled(f->cores_used, 1e4),
        scaled(f->utime_secs, 1e4),
        scaled(f->stime_secs, 1e4),
        (int64_t)f->rss_bytes,
        (int64_t)f->pss_bytes,
        (int64_t)f->disk_read_bytes,
        (int64_t)f->disk_write_bytes,
        (int64_t)f->has_gpu | (int64_t)f->has_gpu_energy << 1,
        scaled(f->gpu_usage, 1e4),
        f->gpu_utilized,
        (int64_t)f->gpu_vram_bytes,
        scaled(f->gpu_energy_joules, 1e6),
    };
    memcpy(v, x, sizeof(x));
}

bool rt_figures_decode(const struct rt_rec *r, struct rt_job_figures *f, uint64_t *hseq, uint64_t *timestamp_ms)
{
    if (r->n != RT_FIG_NUMS || r->tlen != strlen(RT_FIG_TEMPLATE) ||
        memcmp(r->tmpl, RT_FIG_TEMPLATE, r->tlen) != 0)
        return false;
    const int64_t *v = r->v;
    *hseq = (uint64_t)v[0];
    *timestamp_ms = (uint64_t)v[1];
    *f = (struct rt_job_figures){
        .interval_ms = (uint64_t)v[2],
        .child_count = (uint32_t)v[3],
        .cores_used = (double)v[4] / 1e4,
        .utime_secs = (double)v[5] / 1e4,
        .stime_secs = (double)v[6] / 1e4,
        .rss_bytes = (uint64_t)v[7],
        .pss_bytes = (uint64_t)v[8],
        .disk_read_bytes = (uint64_t)v[9],
        .disk_write_bytes = (uint64_t)v[10],
        .has_gpu = v[11] & 1,
        .has_gpu_energy = v[11] & 2,
        .gpu_usage = (double)v[12] / 1e4,
        .gpu_utilized = (uint32_t)v[13],
        .gpu_vram_bytes = (uint64_t)v[14],
        .gpu_energy_joules = (double)v[15] / 1e6,
    };
    return true;
}

bool rt_figures_from_json(struct json_object *o, double interval_secs, struct rt_job_figures *f)
{
    struct json_object *cpu = rt_json_get_object(o, "cpu");
    if (!cpu)
        return false;
    memset(f, 0, sizeof(*f));
    uint64_t kids = 0, rss = 0, pss = 0, used = 0;
    double vram = 0;
    rt_json_get_double(cpu, "process_utime_secs", &f->utime_secs);
    rt_json_get_double(cpu, "process_stime_secs", &f->stime_secs);
    rt_json_get_double(cpu, "process_cores_used", &f->cores_used);
    rt_json_get_u64(cpu, "process_child_count", &kids);
    rt_json_get_u64(cpu, "process_rss_mib", &rss);
    rt_json_get_u64(cpu, "process_pss_mib", &pss);
    rt_json_get_u64(cpu, "process_disk_read_bytes", &f->disk_read_bytes);
    rt_json_get_u64(cpu, "process_disk_write_bytes", &f->disk_write_bytes);
    f->child_count = (uint32_t)kids;
    f->rss_bytes = rss * RT_MIB;
    f->pss_bytes = pss * RT_MIB;
    if (!rt_json_get_u64(o, "actual_interval_ms", &f->interval_ms))
        f->interval_ms = (uint64_t)(interval_secs * 1000);
    if (rt_json_get_double(cpu, "process_gpu_usage", &f->gpu_usage)) {
        f->has_gpu = true;
        rt_json_get_double(cpu, "process_gpu_vram_mib", &vram);
        rt_json_get_u64(cpu, "process_gpu_utilized", &used);
        f->gpu_vram_bytes = vram > 0 ? (uint64_t)llround(vram * (double)RT_MIB) : 0;
        f->gpu_utilized = (uint32_t)used;
    }
    /* At the precision the store keeps. */
    f->cores_used = rt_figures_round(f->cores_used, 4);
    f->utime_secs = rt_figures_round(f->utime_secs, 4);
    f->stime_secs = rt_figures_round(f->stime_secs, 4);
    f->gpu_usage = rt_figures_round(f->gpu_usage, 4);
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
