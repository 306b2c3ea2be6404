/* The GPU ownership view as a caller may see it (GetGpus, and the Job
 * object's gpu_idle): a process the caller could not see in /proc (hidepid)
 * is shown without pid, user or job, as "hidden"; a job is named only to
 * its owner and administrators. What the device does not give is null. */
#include "gpuuse/gpuuse.h"

#include "proc/access.h"
#include "rt/json.h"
#include "rt/util.h"

#include <string.h>

static void add(struct json_object *o, const char *k, struct json_object *v) { json_object_object_add(o, k, v); }

static struct json_object *opt_u64(bool has, uint64_t v) { return has ? rt_json_u64(v) : NULL; }
static struct json_object *opt_double(bool has, double v, int dec) { return has ? rt_json_double(v, dec) : NULL; }

static bool sees_process(const struct rt_gpuuse_viewer *v, const struct rt_gpuuse_proc *p)
{
    if (v->sees_all_pids)
        return true;
    /* The kernel's check for hidepid: ptrace_may_access, as for /proc/PID/io. */
    struct rt_reader r = {.uid = v->uid, .gid = v->gid};
    return p->has_creds && rt_reader_ids_match(&r, &p->creds) && rt_reader_owns(&r, p->owner_uid, p->owner_gid);
}

static struct json_object *process_json(const struct rt_gpuuse_dev *g, const struct rt_gpuuse_proc *p,
                                        const struct rt_gpuuse_viewer *v)
{
    struct json_object *o = json_object_new_object();
    bool seen = sees_process(v, p);
    bool job = seen && p->job_id && (v->admin || p->job_owner == v->uid);
    add(o, "pid", seen ? json_object_new_int64(p->pid) : NULL);
    add(o, "uid", seen && p->has_creds ? json_object_new_int64(p->creds.uid[0]) : NULL);
    add(o, "hidden", json_object_new_boolean(!seen));
    add(o, "job_id", job ? rt_json_u64(p->job_id) : NULL);
    add(o, "job_name", job ? rt_json_string_or_null(p->job_name) : NULL);
    add(o, "vram_bytes", rt_json_u64(p->vram_bytes));
    add(o, "sm_pct", opt_double(p->has_sm, p->sm_pct, 1));
    add(o, "since", rt_json_double(p->since, 3));
    add(o, "mig_uuid", p->unit >= 0 ? json_object_new_string(g->d.mig[p->unit].uuid) : NULL);
    return o;
}

static struct json_object *gpm_json(const struct rt_gpu_gpm *m)
{
    if (!m->present)
        return NULL;
    struct json_object *o = json_object_new_object();
    add(o, "sm_active_pct", rt_json_double(m->sm_active, 2));
    add(o, "sm_occupancy_pct", rt_json_double(m->sm_occupancy, 2));
    add(o, "tensor_active_pct", rt_json_double(m->tensor_active, 2));
    add(o, "dram_bw_pct", rt_json_double(m->dram_bw, 2));
    return o;
}

/* The current clocks event reasons, by name. */
static struct json_object *reasons_json(const struct rt_gpu_health *h)
{
    static const struct {
        uint64_t bit;
        const char *name;
    } names[] = {{0x1, "idle"}, {0x2, "application_clocks"}, {0x4, "power_cap"}, {0x8, "hw_slowdown"},
                 {0x10, "sync_boost"}, {0x20, "sw_thermal"}, {0x40, "hw_thermal"}, {0x80, "hw_power_brake"},
                 {0x100, "display_clocks"}};
    if (!h->has_reasons)
        return NULL;
    struct json_object *a = json_object_new_array();
    for (size_t i = 0; i < RT_ARRAY_SIZE(names); i++)
        if (h->reasons & names[i].bit)
            json_object_array_add(a, json_object_new_string(names[i].name));
    return a;
}

static struct json_object *health_json(const struct rt_gpuuse_dev *g)
{
    const struct rt_gpu_health *h = &g->d.health;
    struct json_object *o = json_object_new_object();
    add(o, "ecc_corrected", opt_u64(h->has_ecc, h->ecc_corrected));
    add(o, "ecc_uncorrected", opt_u64(h->has_ecc, h->ecc_uncorrected));
    add(o, "retired_pages_sbe", opt_u64(h->has_retired, h->retired_sbe));
    add(o, "retired_pages_dbe", opt_u64(h->has_retired, h->retired_dbe));
    add(o, "remapped_rows_corrected", opt_u64(h->has_remapped, h->remapped_corr));
    add(o, "remapped_rows_uncorrected", opt_u64(h->has_remapped, h->remapped_unc));
    add(o, "remap_pending", h->has_remapped ? json_object_new_boolean(h->remap_pending) : NULL);
    add(o, "remap_failure", h->has_remapped ? json_object_new_boolean(h->remap_failure) : NULL);
    add(o, "clocks_held_by", reasons_json(h));
    add(o, "throttled_power_secs", opt_double(h->has_reasons, h->throttle_secs[RT_GPU_THROTTLE_POWER], 1));
    add(o, "throttled_thermal_secs", opt_double(h->has_reasons, h->throttle_secs[RT_GPU_THROTTLE_THERMAL], 1));
    add(o, "throttled_hw_slowdown_secs",
        opt_double(h->has_reasons, h->throttle_secs[RT_GPU_THROTTLE_HW_SLOWDOWN], 1));
    add(o, "xid_errors", opt_u64(h->has_events, h->xids));
    add(o, "last_xid", h->has_events && h->xids ? json_object_new_int64(h->last_xid) : NULL);
    return o;
}

static void idle_fields(struct json_object *o, const struct rt_gpuuse_idle *idle)
{
    add(o, "idle", idle->judged ? json_object_new_boolean(idle->idle) : NULL);
    add(o, "idle_since", idle->idle ? rt_json_double(idle->since, 3) : NULL);
    add(o, "vram_held_bytes", rt_json_u64(idle->vram_held));
}

/* The running jobs the GPU (or instance) was given to, that the caller may see. */
static struct json_object *given_json(const struct rt_gpuuse_snap *s, const char *uuid,
                                      const struct rt_gpuuse_viewer *v)
{
    struct json_object *a = json_object_new_array();
    for (size_t i = 0; i < s->n_given; i++) {
        const struct rt_gpuuse_given *gv = &s->given[i];
        if (strcmp(gv->uuid, uuid) != 0 || (!v->admin && gv->owner != v->uid))
            continue;
        struct json_object *o = json_object_new_object();
        add(o, "job_id", rt_json_u64(gv->job_id));
        add(o, "unused_since", gv->idle ? rt_json_double(gv->since, 3) : NULL);
        json_object_array_add(a, o);
    }
    return a;
}

static struct json_object *mig_json(const struct rt_gpuuse_snap *s, const struct rt_gpuuse_dev *g, size_t m,
                                    const struct rt_gpuuse_viewer *v)
{
    const struct rt_gpu_mig *mi = &g->d.mig[m];
    struct json_object *o = json_object_new_object();
    add(o, "uuid", json_object_new_string(mi->uuid));
    add(o, "gpu_instance_id", json_object_new_int64(mi->gi));
    add(o, "compute_instance_id", mi->ci != RT_GPU_NO_ID ? json_object_new_int64(mi->ci) : NULL);
    add(o, "vram_total_bytes", opt_u64(mi->has_memory, mi->vram_total));
    add(o, "vram_used_bytes", opt_u64(mi->has_memory, mi->vram_used));
    add(o, "gpm", gpm_json(&mi->gpm));
    idle_fields(o, &g->mig_idle[m]);
    add(o, "given_to", given_json(s, mi->uuid, v));
    return o;
}

static struct json_object *gpu_json(const struct rt_gpuuse_snap *s, const struct rt_gpuuse_dev *g,
                                    const struct rt_gpuuse_viewer *v)
{
    const struct rt_gpu_dev *d = &g->d;
    struct json_object *o = json_object_new_object();
    add(o, "index", json_object_new_int64(g->index));
    add(o, "uuid", json_object_new_string(d->uuid));
    add(o, "name", json_object_new_string(d->name));
    add(o, "vendor", json_object_new_string(g->nvidia ? "nvidia" : "amd"));
    add(o, "pci_bus_id", d->bus_id[0] ? json_object_new_string(d->bus_id) : NULL);
    add(o, "utilization_pct", opt_double(d->has_util, d->util_pct, 1));
    add(o, "vram_total_bytes", rt_json_u64(d->vram_total));
    add(o, "vram_used_bytes", rt_json_u64(d->vram_used));
    add(o, "temperature_celsius", d->has_temperature ? json_object_new_int64(d->temperature_c) : NULL);
    add(o, "power_watts", opt_double(d->has_power, d->power_w, 1));
    add(o, "clock_mhz", d->has_frequency ? json_object_new_int64(d->frequency_mhz) : NULL);
    add(o, "energy_joules", opt_double(d->has_energy, d->energy_j, 3));
    if (d->mig_enabled) {
        add(o, "idle", NULL);
        add(o, "idle_since", NULL);
        add(o, "vram_held_bytes", NULL);
    } else {
        idle_fields(o, &g->idle);
    }
    add(o, "busy_but_stalled", g->has_stalled ? json_object_new_boolean(g->stalled) : NULL);
    add(o, "gpm", gpm_json(&d->gpm));
    add(o, "health", health_json(g));
    struct json_object *mig = NULL;
    if (d->mig_enabled) {
        mig = json_object_new_array();
        for (size_t m = 0; m < d->n_mig; m++)
            json_object_array_add(mig, mig_json(s, g, m, v));
    }
    add(o, "mig", mig);
    add(o, "given_to", d->mig_enabled ? json_object_new_array() : given_json(s, d->uuid, v));
    struct json_object *procs = NULL;
    if (d->has_procs) {
        procs = json_object_new_array();
        for (size_t k = 0; k < g->n_procs; k++)
            json_object_array_add(procs, process_json(g, &g->procs[k], v));
    }
    add(o, "processes", procs);
    return o;
}

struct json_object *rt_gpuuse_json(const struct rt_gpuuse_snap *s, const struct rt_gpuuse_viewer *v)
{
    struct json_object *a = json_object_new_array();
    for (size_t i = 0; s && i < s->n; i++)
        json_object_array_add(a, gpu_json(s, &s->devs[i], v));
    return a;
}

static void push_idle(struct json_object *a, const char *kind, const char *uuid, unsigned index, double since)
{
    struct json_object *o = json_object_new_object();
    add(o, "kind", json_object_new_string(kind));
    add(o, "uuid", json_object_new_string(uuid));
    add(o, "index", json_object_new_int64(index));
    add(o, "since", rt_json_double(since, 3));
    json_object_array_add(a, o);
}

static bool job_on(const struct rt_gpuuse_dev *g, int unit, uint64_t job_id)
{
    for (size_t k = 0; k < g->n_procs; k++)
        if (g->procs[k].job_id == job_id && g->procs[k].unit == unit)
            return true;
    return false;
}

/* The job's idle units, pushed into a when it is not NULL; their count. */
static uint32_t job_idle(const struct rt_gpuuse_snap *s, uint64_t job_id, struct json_object *a)
{
    uint32_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct rt_gpuuse_dev *g = &s->devs[i];
        if (!g->d.mig_enabled && g->idle.idle && job_on(g, -1, job_id) && ++n && a)
            push_idle(a, "held", g->d.uuid, g->index, g->idle.since);
        for (size_t m = 0; g->d.mig_enabled && m < g->d.n_mig; m++)
            if (g->mig_idle[m].idle && job_on(g, (int)m, job_id) && ++n && a)
                push_idle(a, "held", g->d.mig[m].uuid, g->index, g->mig_idle[m].since);
    }
    for (size_t i = 0; i < s->n_given; i++) {
        const struct rt_gpuuse_given *gv = &s->given[i];
        if (gv->job_id != job_id || !gv->idle || !++n || !a)
            continue;
        unsigned index = 0;
        for (size_t k = 0; k < s->n; k++) {
            const struct rt_gpu_dev *d = &s->devs[k].d;
            bool match = strcmp(d->uuid, gv->uuid) == 0;
            for (size_t m = 0; d->mig_enabled && m < d->n_mig; m++)
                match |= strcmp(d->mig[m].uuid, gv->uuid) == 0;
            if (match)
                index = s->devs[k].index;
        }
        push_idle(a, "unused", gv->uuid, index, gv->since);
    }
    return n;
}

uint32_t rt_gpuuse_job_idle_count(const struct rt_gpuuse_snap *s, uint64_t job_id)
{
    return s && s->has_backend ? job_idle(s, job_id, NULL) : 0;
}

struct json_object *rt_gpuuse_job_idle_json(const struct rt_gpuuse_snap *s, uint64_t job_id)
{
    if (!s || !s->has_backend)
        return NULL;
    struct json_object *a = json_object_new_array();
    job_idle(s, job_id, a);
    return a;
}
