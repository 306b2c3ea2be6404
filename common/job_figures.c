/* Every per-job figure, described once. */
#include "rt/job_figures.h"

#include "rt/json.h"
#include "rt/sample.h"
#include "rt/util.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#define FIG(m) offsetof(struct rt_job_figures, m)
#define SUM(m) offsetof(struct rt_job_summary, m)

/* A sample's figure: its member, gate, unit; its slot in a stored record
 * and the decimals kept there. */
#define SAMPLE(m, t, g, u, s, p) \
    .name = #m, .type = RT_FT_##t, .off = FIG(m), .gate = (g), .unit = RT_UNIT_##u, .slot = (s), .places = (p)
/* Shown in samples: its JSON key (in "cpu"), CSV column, form, decimals. */
#define SHOWN(k, c, f, d) .json = (k), .csv = (c), .show = RT_SHOW_##f, .decimals = (d)
/* In Job.current: key, form, decimals, and its gauge in `metrics`. */
#define NOW(k, f, d) .now = (k), .now_form = RT_NOW_##f, .now_decimals = (d)
#define GAUGE(name, help) .prom_now = (name), .prom_now_help = (help)

/* A sample's figures, in the order of their JSON keys (json-c keeps the
 * order keys are added in, and samples list them sorted). Slots 0 to 2 and
 * 11 of a stored record are its host sample, timestamp, interval and gates;
 * a new figure takes the next free slot (RT_FIG_NUMS). */
enum { CHILDREN, CORES, DISK_READ, DISK_WRITE, GPU_USAGE, GPU_UTILIZED, GPU_VRAM, PSS, RSS, STIME, UTIME, GPU_ENERGY,
       NSAMPLES, NONE = -1 };

const struct rt_fig_sample rt_fig_samples[] = {
    [CHILDREN] = {SAMPLE(child_count, U32, 0, COUNT, 3, 0), SHOWN("process_child_count", 23, INT, 0)},
    [CORES] = {SAMPLE(cores_used, F64, 0, CORES, 4, 4), SHOWN("process_cores_used", 26, DEC, RT_DEC_CORES),
               NOW("cores", VALUE, 4),
               GAUGE("job_cpu_busy_cores", "CPUs the running job kept busy over its last sampling interval.")},
    [DISK_READ] = {SAMPLE(disk_read_bytes, U64, 0, BYTES, 9, 0), SHOWN("process_disk_read_bytes", 28, INT, 0),
                   NOW("disk_read_bytes_per_sec", RATE, 1)},
    [DISK_WRITE] = {SAMPLE(disk_write_bytes, U64, 0, BYTES, 10, 0), SHOWN("process_disk_write_bytes", 29, INT, 0),
                    NOW("disk_write_bytes_per_sec", RATE, 1)},
    [GPU_USAGE] = {SAMPLE(gpu_usage, F64, RT_GATE_GPU, GPUS, 12, 4), SHOWN("process_gpu_usage", 30, DEC, RT_DEC_CORES),
                   NOW("gpu_usage", VALUE, 4),
                   GAUGE("job_gpu_busy_gpus", "GPUs the running job kept busy (1 = one GPU fully busy).")},
    [GPU_UTILIZED] = {SAMPLE(gpu_utilized, U32, RT_GATE_GPU, COUNT, 13, 0), SHOWN("process_gpu_utilized", 32, INT, 0),
                      NOW("gpus_used", VALUE, 0)},
    [GPU_VRAM] = {SAMPLE(gpu_vram_bytes, U64, RT_GATE_GPU, BYTES, 14, 0),
                  SHOWN("process_gpu_vram_mib", 31, MIB_DEC, RT_DEC_MIB), NOW("gpu_vram_bytes", VALUE, 0),
                  GAUGE("job_gpu_memory_used_bytes", "GPU memory (VRAM) the running job's processes hold.")},
    [PSS] = {SAMPLE(pss_bytes, U64, 0, BYTES, 8, 0), SHOWN("process_pss_mib", 27, MIB, 0), NOW("pss_bytes", VALUE, 0),
             GAUGE("job_memory_pss_bytes", "Proportional set size (PSS) of the running job's processes together.")},
    [RSS] = {SAMPLE(rss_bytes, U64, 0, BYTES, 7, 0), SHOWN("process_rss_mib", 0, MIB, 0), NOW("rss_bytes", VALUE, 0),
             GAUGE("job_memory_rss_bytes", "Resident memory (RSS) of the running job's processes together.")},
    [STIME] = {SAMPLE(stime_secs, F64, 0, SECS, 6, 4), SHOWN("process_stime_secs", 25, DEC, RT_DEC_SECS)},
    [UTIME] = {SAMPLE(utime_secs, F64, 0, SECS, 5, 4), SHOWN("process_utime_secs", 24, DEC, RT_DEC_SECS)},
    /* Not in samples: the job's totals and the upload read it. */
    [GPU_ENERGY] = {SAMPLE(gpu_energy_joules, F64, RT_GATE_GPU | RT_GATE_GPU_ENERGY, JOULES, 15, 6)},
};
const size_t rt_fig_nsamples = RT_ARRAY_SIZE(rt_fig_samples);
_Static_assert(RT_ARRAY_SIZE(rt_fig_samples) == NSAMPLES, "a row for each figure");

/* A total: its key, rule and the sample figures it is made of, its member
 * in struct rt_job_summary; then its unit, label and other names. */
#define TOTAL(k, r, s1, s2, t, m) \
    .key = (k), .rule = RT_RULE_##r, .src = (s1), .src2 = (s2), .type = RT_FT_##t, .off = SUM(m)
#define RATE_OF(k, of_) .key = (k), .rule = RT_RULE_PER_SEC, .src = NONE, .src2 = NONE, .of = (of_), .type = RT_FT_F64
/* Its family in `metrics`. */
#define PROM(name, type, help) .prom = (name), .prom_type = (type), .prom_help = (help)
/* Its field in the job-finished record: value x scale with these decimals
 * (-1: an integer), and the field for people (also said in the message). */
#define JOURNAL(f, scale, dec, text) .journal = (f), .journal_scale = (scale), .journal_decimals = (dec), .journal_text = (text)

/* In the statistics of `report` and `recommend`: its name and row title. */
#define STAT(name, title_) .stat = (name), .title = (title_)

/* The totals, in the order Job.summary and the report list them. */
const struct rt_fig_total rt_fig_totals[] = {
    {TOTAL("cpu_secs", SUM, UTIME, STIME, F64, cpu_secs), .decimals = 3, .unit = RT_UNIT_SECS, .label = "CPU",
     PROM("job_cpu_seconds_total", "counter", "CPU time (user and system) the job's processes used."),
     JOURNAL("CPU_USAGE_NSEC", 1e9, -1, "CPU_USAGE")},
    {RATE_OF("avg_cores", "cpu_secs"), .decimals = 4, .unit = RT_UNIT_CORES, .label = "cores on average",
     STAT("cores_mean", "CPU cores, mean")},
    {TOTAL("peak_cores", PEAK, CORES, NONE, F64, peak_cores), .at_least = "avg_cores", .decimals = 4,
     .unit = RT_UNIT_CORES, .label = "cores at peak", STAT("cores_peak", "CPU cores, peak")},
    {TOTAL("peak_children", PEAK, CHILDREN, NONE, U32, peak_children), .unit = RT_UNIT_COUNT,
     .label = "children at peak"},
    {TOTAL("avg_pss_bytes", MEAN, PSS, NONE, F64, pss_sum_bytes), .record = "pss_sum_bytes", .later = true,
     .unit = RT_UNIT_BYTES, .label = "mean PSS", STAT("memory_pss_mean_bytes", "Memory (PSS), mean")},
    {TOTAL("peak_pss_bytes", PEAK, PSS, NONE, U64, peak_pss_bytes), .unit = RT_UNIT_BYTES, .label = "peak PSS",
     STAT("memory_pss_peak_bytes", "Memory (PSS), peak"), JOURNAL("MEMORY_PSS_PEAK_BYTES", 1, -1, "MEMORY_PSS_PEAK")},
    {TOTAL("peak_rss_bytes", PEAK, RSS, NONE, U64, peak_rss_bytes), .unit = RT_UNIT_BYTES, .label = "peak RSS",
     STAT("memory_rss_peak_bytes", "Memory (RSS), peak"),
     PROM("job_memory_rss_peak_bytes", "gauge", "Highest resident memory (RSS) of the job's processes together."),
     JOURNAL("MEMORY_RSS_PEAK_BYTES", 1, -1, "MEMORY_RSS_PEAK")},
    {TOTAL("gpu_avg_usage", TIME_MEAN, GPU_USAGE, NONE, F64, gpu_usage_secs), .record = "gpu_usage_secs",
     .decimals = 4, .unit = RT_UNIT_GPUS, .label = "GPUs on average", STAT("gpu_mean", "GPU use, mean (GPUs)"),
     JOURNAL("GPU_UTILIZATION_AVG_PERCENT", 100, 1, NULL)},
    {TOTAL("gpu_peak_usage", PEAK, GPU_USAGE, NONE, F64, gpu_peak_usage), .decimals = 4, .later = true,
     .unit = RT_UNIT_GPUS, .label = "GPUs at peak", STAT("gpu_peak", "GPU use, peak (GPUs)")},
    {TOTAL("gpu_avg_vram_bytes", MEAN, GPU_VRAM, NONE, F64, gpu_vram_sum_bytes), .record = "gpu_vram_sum_bytes",
     .later = true, .unit = RT_UNIT_BYTES, .label = "mean VRAM", STAT("vram_mean_bytes", "VRAM, mean")},
    {TOTAL("gpu_peak_vram_bytes", PEAK, GPU_VRAM, NONE, U64, gpu_peak_vram_bytes), .unit = RT_UNIT_BYTES,
     .label = "peak VRAM", STAT("vram_peak_bytes", "VRAM, peak"), JOURNAL("GPU_MEM_PEAK_BYTES", 1, -1, NULL)},
    {TOTAL("gpu_energy_joules", SUM, GPU_ENERGY, NONE, F64, gpu_energy_joules), .decimals = 3,
     .unit = RT_UNIT_JOULES, .label = "energy",
     PROM("job_gpu_energy_joules_total", "counter", "The job's share of the energy of the GPUs it used."),
     JOURNAL("GPU_ENERGY_J", 1, 3, NULL)},
    {TOTAL("disk_read_bytes", SUM, DISK_READ, NONE, U64, disk_read_bytes), .unit = RT_UNIT_BYTES, .label = "read",
     STAT("disk_read_bytes", "Disk read by the job"),
     PROM("job_disk_read_bytes_total", "counter", "Bytes the job's processes read from storage."),
     JOURNAL("IO_METRIC_READ_BYTES", 1, -1, "IO_READ")},
    {TOTAL("disk_write_bytes", SUM, DISK_WRITE, NONE, U64, disk_write_bytes), .unit = RT_UNIT_BYTES,
     .label = "written", STAT("disk_write_bytes", "Disk written by the job"),
     PROM("job_disk_written_bytes_total", "counter", "Bytes the job's processes wrote to storage."),
     JOURNAL("IO_METRIC_WRITE_BYTES", 1, -1, "IO_WRITE")},
};
const size_t rt_fig_ntotals = RT_ARRAY_SIZE(rt_fig_totals);
_Static_assert(RT_ARRAY_SIZE(rt_fig_totals) <= 64, "rt_job_summary.unknown has a bit per total");

const char *const rt_fig_gate_keys[RT_NGATES] = {"has_gpu", "has_gpu_energy"};
const char *const rt_fig_gate_secs_keys[RT_NGATES] = {"gpu_secs", NULL};

int rt_fig_sample_find(const char *name)
{
    for (size_t i = 0; i < rt_fig_nsamples; i++)
        if (strcmp(rt_fig_samples[i].name, name) == 0)
            return (int)i;
    return -1;
}

int rt_fig_total_find(const char *key)
{
    for (size_t i = 0; i < rt_fig_ntotals; i++)
        if (strcmp(rt_fig_totals[i].key, key) == 0)
            return (int)i;
    return -1;
}

double rt_fig_get(const void *base, enum rt_fig_type type, size_t off)
{
    const char *p = (const char *)base + off;
    switch (type) {
    case RT_FT_U32: return *(const uint32_t *)(const void *)p;
    case RT_FT_U64: return (double)*(const uint64_t *)(const void *)p;
    case RT_FT_F64: return *(const double *)(const void *)p;
    }
    return 0;
}

void rt_fig_set(void *base, enum rt_fig_type type, size_t off, double v)
{
    char *p = (char *)base + off;
    /* A damaged store may hold anything: integers stay in their range. */
    switch (type) {
    case RT_FT_U32: *(uint32_t *)(void *)p = v > 0 ? (v < 0x1p32 ? (uint32_t)v : UINT32_MAX) : 0; break;
    case RT_FT_U64: *(uint64_t *)(void *)p = v > 0 ? (v < 0x1p64 ? (uint64_t)v : UINT64_MAX) : 0; break;
    case RT_FT_F64: *(double *)(void *)p = v; break;
    }
}

bool rt_fig_sample_value(const struct rt_job_figures *f, size_t row, double *v)
{
    const struct rt_fig_sample *r = &rt_fig_samples[row];
    *v = rt_fig_get(f, r->type, r->off);
    return (f->gates & r->gate) == r->gate;
}

bool rt_fig_sample_in(const struct rt_job_figures *f, bool has_job, size_t row, double *v)
{
    return rt_fig_sample_value(f, row, v) && (has_job || rt_fig_samples[row].gate);
}

double rt_fig_shown(const struct rt_fig_sample *row, double v)
{
    switch (row->show) {
    case RT_SHOW_INT: return v;
    case RT_SHOW_DEC: return rt_round_dec(v, row->decimals);
    case RT_SHOW_MIB: return floor(v / (double)RT_MIB) * (double)RT_MIB;
    case RT_SHOW_MIB_DEC: return rt_round_dec(v / (double)RT_MIB, row->decimals) * (double)RT_MIB;
    }
    return v;
}

struct json_object *rt_fig_sample_json(const struct rt_fig_sample *row, double v)
{
    switch (row->show) {
    case RT_SHOW_INT: return row->type == RT_FT_U64 ? rt_json_u64((uint64_t)v) : json_object_new_int64((int64_t)v);
    case RT_SHOW_DEC: return rt_json_double(v, row->decimals);
    case RT_SHOW_MIB: return rt_json_u64((uint64_t)v / RT_MIB);
    case RT_SHOW_MIB_DEC: return rt_json_double(v / (double)RT_MIB, row->decimals);
    }
    return NULL;
}

size_t rt_fig_sample_text(const struct rt_fig_sample *row, double v, char buf[64])
{
    switch (row->show) {
    case RT_SHOW_INT: break;
    case RT_SHOW_DEC: return rt_json_format_double(v, row->decimals, buf);
    case RT_SHOW_MIB: v = floor(v / (double)RT_MIB); break;
    case RT_SHOW_MIB_DEC: return rt_json_format_double(v / (double)RT_MIB, row->decimals, buf);
    }
    size_t n = rt_fmt_u64(buf, (uint64_t)v);
    buf[n] = '\0';
    return n;
}

bool rt_fig_sample_parse(const struct rt_fig_sample *row, struct json_object *cpu, double *v)
{
    if (!row->json)
        return false;
    uint64_t u;
    switch (row->show) {
    case RT_SHOW_INT:
        if (!rt_json_get_u64(cpu, row->json, &u))
            return false;
        *v = (double)u;
        return true;
    case RT_SHOW_DEC: return rt_json_get_double(cpu, row->json, v);
    case RT_SHOW_MIB:
        if (!rt_json_get_u64(cpu, row->json, &u))
            return false;
        *v = (double)(u * RT_MIB);
        return true;
    case RT_SHOW_MIB_DEC:
        if (!rt_json_get_double(cpu, row->json, v))
            return false;
        *v = *v > 0 ? (double)llround(*v * (double)RT_MIB) : 0;
        return true;
    }
    return false;
}

bool rt_job_figures_from_json(struct json_object *cpu, struct rt_job_figures *f)
{
    memset(f, 0, sizeof(*f));
    bool has_job = false;
    /* A gate is on where the sample shows its figures. */
    for (size_t i = 0; i < rt_fig_nsamples; i++) {
        struct json_object *x;
        const struct rt_fig_sample *r = &rt_fig_samples[i];
        if (r->json && json_object_object_get_ex(cpu, r->json, &x) && x) {
            f->gates |= r->gate;
            has_job |= !r->gate;
        }
    }
    for (size_t i = 0; i < rt_fig_nsamples; i++) {
        const struct rt_fig_sample *r = &rt_fig_samples[i];
        double v;
        if ((f->gates & r->gate) == r->gate && rt_fig_sample_parse(r, cpu, &v))
            rt_fig_set(f, r->type, r->off, v);
    }
    return has_job;
}

double rt_fig_gate_secs(const struct rt_job_summary *s, uint32_t gate)
{
    return gate ? s->gate_secs[__builtin_ctz(gate)] : 0;
}

/* Online CPUs, read once: sysconf reads sysfs on every call, and a job's
 * JSON is made under the jobs lock (ListJobs: once per job). */
static double online_cpus(void)
{
    static _Atomic long n;
    long v = n;
    if (!v)
        n = v = sysconf(_SC_NPROCESSORS_ONLN);
    return (double)v;
}

bool rt_fig_total_value(const struct rt_job_summary *s, size_t row, double duration_secs, double *v)
{
    const struct rt_fig_total *t = &rt_fig_totals[row];
    if (t->rule == RT_RULE_PER_SEC) {
        rt_fig_total_value(s, (size_t)rt_fig_total_find(t->of), duration_secs, v);
        /* CPU time comes in clock ticks: a job of a few ms could show more
         * cores than the host has. */
        *v /= fmax(duration_secs, RT_CORES_MIN_SPAN_SECS);
        double ncpu = online_cpus();
        if (t->unit == RT_UNIT_CORES && ncpu >= 1 && *v > ncpu)
            *v = ncpu;
        return true;
    }
    uint32_t gate = rt_fig_samples[t->src].gate;
    if ((s->gates & gate) != gate || (s->unknown >> row & 1))
        return false;
    *v = rt_fig_get(s, t->type, t->off);
    if (t->rule == RT_RULE_MEAN)
        *v = (double)llround(*v / (double)(s->samples ? s->samples : 1));
    else if (t->rule == RT_RULE_TIME_MEAN)
        *v = rt_fig_gate_secs(s, gate) > 0 ? *v / rt_fig_gate_secs(s, gate) : 0;
    double floor;
    if (t->at_least && rt_fig_total_value(s, (size_t)rt_fig_total_find(t->at_least), duration_secs, &floor))
        *v = fmax(*v, floor);
    return true;
}

