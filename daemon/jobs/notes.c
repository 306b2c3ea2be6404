#include "jobs/notes.h"

#include "rt/json.h"
#include "rt/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void rt_notes_rules_from_config(const struct rt_config *c, struct rt_notes_rules *out)
{
    *out = (struct rt_notes_rules){
        .cpu_efficiency_below = c->notes_cpu_efficiency_below,
        .memory_usage_below = c->notes_memory_usage_below,
        .gpu_usage_below = c->notes_gpu_usage_below,
        .throttled_above = c->notes_throttled_above,
        .memory_pressure_above = c->notes_memory_pressure_above,
        .min_duration_secs = c->notes_min_duration_secs,
    };
}

/* What a job's summary says, by key (absent or null: has_* false). */
struct figures {
    double duration, cpu_secs, avg_cores, peak_cores;
    bool has_peak_mem;
    double peak_mem;                 /* what it could not do without, else (older records) the largest RSS */
    bool has_gpu, has_gpu_peak;
    double gpu_avg, gpu_peak;
    bool has_oom, has_throttled, has_pressure;
    double oom_kills, throttled_pct, pressure_pct;
};

static void read_figures(struct json_object *s, struct figures *f)
{
    memset(f, 0, sizeof(*f));
    rt_json_get_double(s, "duration_secs", &f->duration);
    rt_json_get_double(s, "cpu_secs", &f->cpu_secs);
    rt_json_get_double(s, "avg_cores", &f->avg_cores);
    rt_json_get_double(s, "peak_cores", &f->peak_cores);
    f->has_peak_mem = rt_json_get_double(s, "memory_peak_bytes", &f->peak_mem) ||
                      rt_json_get_double(s, "peak_rss_bytes", &f->peak_mem);
    f->has_gpu = rt_json_get_double(s, "gpu_avg_usage", &f->gpu_avg);
    f->has_gpu_peak = rt_json_get_double(s, "gpu_peak_usage", &f->gpu_peak);
    f->has_oom = rt_json_get_double(s, "oom_kills", &f->oom_kills);
    f->has_throttled = rt_json_get_double(s, "throttled_pct", &f->throttled_pct);
    f->has_pressure = rt_json_get_double(rt_json_get_object(s, "pressure"), "memory_some_pct", &f->pressure_pct);
}

static struct json_object *pct(bool known, double used, double asked)
{
    return known && asked > 0 ? rt_json_double(100.0 * used / asked, 1) : NULL;
}

struct json_object *rt_job_efficiency(struct json_object *summary, const struct rt_request *req)
{
    if (rt_request_empty(req))
        return NULL;
    struct figures f;
    read_figures(summary, &f);
    struct json_object *o = json_object_new_object();
    /* seff: CPU time over the cores it held for the whole wall time */
    json_object_object_add(o, "cpu_pct", pct(f.duration > 0, f.cpu_secs, req->cpus * f.duration));
    json_object_object_add(o, "memory_pct", pct(f.has_peak_mem, f.peak_mem, (double)req->memory_bytes));
    json_object_object_add(o, "gpu_pct", pct(f.has_gpu, f.gpu_avg, req->gpus));
    return o;
}

/* ---- what to ask for ---- */

/* Binary sizes as Slurm's --mem and `--request mem=` write them: "6G", "384M". */
static void mem_text(uint64_t bytes, char *buf, size_t size)
{
    if (bytes >= (1ULL << 30) && bytes % (1ULL << 30) == 0)
        snprintf(buf, size, "%lluG", (unsigned long long)(bytes >> 30));
    else
        snprintf(buf, size, "%lluM", (unsigned long long)((bytes + (1ULL << 20) - 1) >> 20));
}

/* For people: "3.9 GiB", "512 MiB". */
static void mem_people(double bytes, char *buf, size_t size)
{
    if (bytes >= 1024.0 * 1024 * 1024)
        snprintf(buf, size, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
    else
        snprintf(buf, size, "%.0f MiB", bytes / (1024.0 * 1024));
}

/* recommend's rule: the peak plus a fifth, rounded up (rt_request_round_memory). */
static uint64_t memory_for(double peak_bytes)
{
    return rt_request_round_memory_mib(peak_bytes / 1048576.0 * 1.2) << 20;
}

static void add_note(struct json_object *notes, const char *id, struct json_object *suggest, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add_note(struct json_object *notes, const char *id, struct json_object *suggest, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    struct json_object *n = json_object_new_object();
    json_object_object_add(n, "id", json_object_new_string(id));
    json_object_object_add(n, "text", json_object_new_string(text));
    if (suggest)
        json_object_object_add(n, "suggest", suggest);
    json_object_array_add(notes, n);
}

static struct json_object *suggest_cpus(double cpus)
{
    struct rt_request r = {.cpus = cpus};
    return rt_request_to_json(&r, NULL);
}

static struct json_object *suggest_memory(uint64_t bytes)
{
    struct rt_request r = {.memory_bytes = bytes};
    return rt_request_to_json(&r, NULL);
}

static const char *plural(double n)
{
    return n == 1 ? "" : "s";
}

struct json_object *rt_job_notes(struct json_object *summary, const struct rt_request *req,
                                 const struct rt_notes_rules *rules)
{
    struct json_object *notes = json_object_new_array();
    struct figures f;
    read_figures(summary, &f);
    char a[32], b[32], m[32];
    bool short_mem = false; /* a rule said the job had too little memory */

    /* Why a job died or crawled: figures of the kernel (cgroup jobs). */
    if (f.has_oom && f.oom_kills >= 1) {
        short_mem = true;
        double need = fmax(f.has_peak_mem ? f.peak_mem : 0, (double)req->memory_bytes);
        uint64_t ask = need > 0 ? memory_for(need * 1.25) : 0;
        mem_text(ask, m, sizeof(m));
        if (req->memory_bytes) {
            mem_people(f.peak_mem, a, sizeof(a));
            mem_people((double)req->memory_bytes, b, sizeof(b));
            add_note(notes, "oom_killed", ask ? suggest_memory(ask) : NULL,
                     "Out of memory: the kernel's OOM killer killed %.0f process%s at the memory limit (peak %s "
                     "of %s asked for). Ask for more memory (mem=%s) or make the job use less.",
                     f.oom_kills, f.oom_kills == 1 ? "" : "es", a, b, m);
        } else {
            add_note(notes, "oom_killed", NULL,
                     "Out of memory: the kernel's OOM killer killed %.0f process%s at the memory limit. Ask for "
                     "more memory or make the job use less.",
                     f.oom_kills, f.oom_kills == 1 ? "" : "es");
        }
    }
    if (rules->memory_pressure_above && f.has_pressure && f.pressure_pct >= rules->memory_pressure_above) {
        short_mem = true;
        uint64_t ask = req->memory_bytes ? memory_for((double)req->memory_bytes * 1.5 / 1.2) : 0;
        mem_text(ask, m, sizeof(m));
        if (ask)
            add_note(notes, "memory_pressure", suggest_memory(ask),
                     "Memory pressure %.0f%%: the job waited for memory %.0f%% of its time, it needed more than "
                     "it had. Ask for more memory (mem=%s) or make the job use less.",
                     f.pressure_pct, f.pressure_pct, m);
        else
            add_note(notes, "memory_pressure", NULL,
                     "Memory pressure %.0f%%: the job waited for memory %.0f%% of its time, it needed more than "
                     "it had. Give it more memory or make it use less.",
                     f.pressure_pct, f.pressure_pct);
    }
    bool throttled = rules->throttled_above && f.has_throttled && f.throttled_pct >= rules->throttled_above;
    if (throttled && req->cpus > 0) {
        double ask = fmax(ceil(f.peak_cores), req->cpus + 1);
        add_note(notes, "cpu_throttled", suggest_cpus(ask),
                 "CPU throttled %.0f%% of the time by its CPU quota: the job wanted more than the %g CPU%s it "
                 "had. Ask for %g (cpus=%g) or run fewer threads.",
                 f.throttled_pct, req->cpus, plural(req->cpus), ask, ask);
    } else if (throttled) {
        add_note(notes, "cpu_throttled", NULL,
                 "CPU throttled %.0f%% of the time by its CPU quota: the job wanted more CPUs than its limit "
                 "gave. Raise the limit or run fewer threads.",
                 f.throttled_pct);
    }

    /* What was asked for and not used: only over a long enough run. */
    if (f.duration < rules->min_duration_secs)
        return notes;
    if (rules->cpu_efficiency_below && req->cpus > 0 && !throttled && f.duration > 0) {
        double eff = 100.0 * f.cpu_secs / (req->cpus * f.duration);
        double ask = fmax(1, rt_round_half_even(f.avg_cores));
        if (eff < rules->cpu_efficiency_below && ask < req->cpus)
            add_note(notes, "cpu_efficiency", suggest_cpus(ask),
                     "CPU efficiency %.0f%%: asked for %g CPU%s, used %.1f on average. Ask for %g (cpus=%g).", eff,
                     req->cpus, plural(req->cpus), f.avg_cores, ask, ask);
    }
    if (rules->memory_usage_below && req->memory_bytes && f.has_peak_mem && !short_mem) {
        double eff = 100.0 * f.peak_mem / (double)req->memory_bytes;
        uint64_t ask = memory_for(f.peak_mem);
        if (eff < rules->memory_usage_below && ask < req->memory_bytes) {
            mem_people((double)req->memory_bytes, a, sizeof(a));
            mem_people(f.peak_mem, b, sizeof(b));
            mem_text(ask, m, sizeof(m));
            add_note(notes, "memory_unused", suggest_memory(ask),
                     "Memory efficiency %.0f%%: asked for %s, the peak was %s. Ask for %s (mem=%s).", eff, a, b, m,
                     m);
        }
    }
    if (rules->gpu_usage_below && req->gpus && f.has_gpu) {
        double eff = 100.0 * f.gpu_avg / req->gpus;
        double ask = f.has_gpu_peak ? fmax(1, rt_round_half_even(f.gpu_peak)) : fmax(1, ceil(f.gpu_avg));
        if (f.gpu_avg < 0.005 && (!f.has_gpu_peak || f.gpu_peak < 0.005)) {
            struct json_object *none = json_object_new_object();
            json_object_object_add(none, "gpus", json_object_new_int(0));
            add_note(notes, "gpu_unused", none,
                     "The GPU%s not used: asked for %u, used none. Ask for none (gpus=0), or check that the "
                     "code runs on the GPU.",
                     req->gpus == 1 ? " was" : "s were", req->gpus);
        } else if (eff < rules->gpu_usage_below && ask < req->gpus) {
            struct rt_request r = {.gpus = (uint32_t)ask};
            add_note(notes, "gpu_efficiency", rt_request_to_json(&r, NULL),
                     "GPU efficiency %.0f%%: asked for %u GPUs, used %.2f on average. Ask for %g (gpus=%g).", eff,
                     req->gpus, f.gpu_avg, ask, ask);
        }
    }
    return notes;
}
