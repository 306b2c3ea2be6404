/* rt_gpu_collect: copy the pollers' latest snapshot (never waiting on a GPU
 * call) and turn it into the sample's gpu[] and host-wide process GPU fields. */
#include "collect/gpu/gpu_internal.h"

#include "system/log.h"
#include "rt/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copy the snapshot into c->view. A call running past the hang bound hides
 * its device and is reported once, here, since its own thread is stuck. */
static void take_snapshot(struct rt_gpu_collector *c)
{
    struct gpu_shared *sh = c->sh;
    struct hung {
        const struct gpu_slot *slot;
        struct rt_gpu_dev last; /* names only */
        double secs;
    } hung_list[4];
    size_t n_hung = 0;

    pthread_mutex_lock(&sh->mu);
    uint64_t now = rt_mono_ns(); /* under the lock: no busy_since_ns is newer */
    c->has_backend = sh->discovered && sh->has_backend;
    size_t n = sh->discovered ? sh->n_slots : 0;
    if (n > c->n_view) {
        c->view = rt_xrealloc(c->view, n * sizeof(*c->view));
        memset(c->view + c->n_view, 0, (n - c->n_view) * sizeof(*c->view));
        c->n_view = n;
    }
    for (size_t i = 0; i < n; i++) {
        struct gpu_slot *s = &sh->slots[i];
        struct gpu_view *v = &c->view[i];
        bool hung = s->busy_since_ns && now > s->busy_since_ns && now - s->busy_since_ns > sh->hang_ns;
        if (hung && !s->hang_reported && n_hung < RT_ARRAY_SIZE(hung_list)) {
            s->hang_reported = true; /* cleared, with a message, when the call returns */
            if (!s->reported_lost) {
                s->reported_lost = true; /* the next publish says it is back */
                hung_list[n_hung++] = (struct hung){s, s->data, (double)(now - s->busy_since_ns) / 1e9};
            }
        }
        v->vendor = s->vendor;
        v->index = s->index;
        v->visible = s->has_thread && s->valid && !s->lost && !hung;
        if (v->visible) {
            gpu_data_copy(&v->data, &s->data);
            v->data.health.has_events = s->has_events;
            v->data.health.xids = s->xids;
            v->data.health.last_xid = s->last_xid;
        }
    }
    /* XID events since the last tick; beyond the ring's size only counted. */
    uint64_t first = sh->xid_seq > GPU_XID_RING && c->xid_seen < sh->xid_seq - GPU_XID_RING
                         ? sh->xid_seq - GPU_XID_RING : c->xid_seen;
    c->n_xids = 0;
    for (uint64_t q = first; q < sh->xid_seq; q++)
        c->xids[c->n_xids++] = sh->xid_ring[q % GPU_XID_RING];
    c->xid_seen = sh->xid_seq;
    pthread_mutex_unlock(&sh->mu);
    for (size_t i = 0; i < n_hung; i++) {
        char reason[96];
        snprintf(reason, sizeof(reason), "not responding for %.1f s; left out of samples until it answers",
                 hung_list[i].secs);
        gpu_report(hung_list[i].slot, &hung_list[i].last, reason);
    }
}

static void fill_gpu(struct rt_arena *a, const struct gpu_view *v, struct rt_gpu *g)
{
    const struct rt_gpu_dev *d = &v->data;
    g->uuid = rt_arena_strdup(a, d->uuid);
    g->name = rt_arena_strdup(a, d->name);
    g->host_id = rt_arena_strdup(a, d->host_id);
    g->vendor = rt_arena_strdup(a, v->vendor == GPU_NVIDIA ? "nvidia" : "amd");
    g->detail = rt_arena_alloc(a, 2 * sizeof(*g->detail));
    if (v->vendor == GPU_NVIDIA) {
        g->detail[g->n_detail++] = (struct rt_kv){rt_arena_strdup(a, "pci_bus_id"), rt_arena_strdup(a, d->bus_id)};
        g->detail[g->n_detail++] =
            (struct rt_kv){rt_arena_strdup(a, "driver_version"), rt_arena_strdup(a, d->driver_version)};
    } else {
        g->detail[g->n_detail++] = (struct rt_kv){rt_arena_strdup(a, "pci_bus"), rt_arena_strdup(a, d->bus_id)};
    }
    g->utilization_pct = d->util_pct;
    g->vram_total_bytes = d->vram_total;
    g->vram_used_bytes = d->vram_used;
    g->vram_used_pct = d->vram_total ? 100.0 * (double)d->vram_used / (double)d->vram_total : 0;
    g->has_temperature = d->has_temperature;
    g->temperature_celsius = d->temperature_c;
    g->has_power = d->has_power;
    g->power_watts = d->power_w;
    g->has_frequency = d->has_frequency;
    g->frequency_mhz = d->frequency_mhz;
    g->has_energy = d->has_energy;
    g->energy_joules = d->energy_j;
}

/* Host-wide "process" GPU values (rust-port §3.6 system-wide variant): NVIDIA
 * from its process lists, AMD (and NVIDIA without lists) from the device. */
static void host_usage(const struct gpu_view *v, double *usage, uint64_t *vram, uint32_t *utilized)
{
    const struct rt_gpu_dev *d = &v->data;
    if (v->vendor == GPU_NVIDIA && d->has_procs) {
        *vram += d->procs_vram;
        *usage += d->has_proc_util ? d->sm_total / 100.0 : d->util_pct / 100.0;
        *utilized += d->n_procs > 0;
    } else {
        *vram += d->vram_used;
        *usage += d->util_pct / 100.0;
        *utilized += d->vram_used > 0;
    }
}

void rt_gpu_collect(struct rt_gpu_collector *c, struct rt_sample *s)
{
    take_snapshot(c);
    s->has_gpu_backend = c->has_backend;
    s->gpus = NULL;
    s->n_gpus = 0;
    s->job.gates &= ~RT_GATE_GPU;
    if (!c->has_backend)
        return;
    size_t n = 0;
    for (size_t i = 0; i < c->n_view; i++)
        n += c->view[i].visible;
    s->gpus = rt_arena_alloc(&s->arena, n * sizeof(*s->gpus));
    double usage = 0;
    uint64_t vram = 0;
    uint32_t utilized = 0;
    for (size_t i = 0; i < c->n_view; i++) {
        const struct gpu_view *v = &c->view[i];
        if (!v->visible)
            continue;
        fill_gpu(&s->arena, v, &s->gpus[s->n_gpus++]);
        host_usage(v, &usage, &vram, &utilized);
    }
    s->job.gates |= RT_GATE_GPU;
    s->job.gpu_usage = usage;
    s->job.gpu_vram_bytes = vram;
    s->job.gpu_utilized = utilized;
}

bool rt_gpu_has_backend(const struct rt_gpu_collector *c) { return c->has_backend; }

size_t rt_gpu_devices(const struct rt_gpu_collector *c, struct rt_gpu_devref *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n_view && n < max; i++)
        if (c->view[i].visible)
            out[n++] = (struct rt_gpu_devref){c->view[i].vendor == GPU_NVIDIA, c->view[i].index, &c->view[i].data};
    return n;
}

size_t rt_gpu_take_xids(struct rt_gpu_collector *c, struct rt_gpu_xid *out, size_t max)
{
    size_t n = c->n_xids < max ? c->n_xids : max;
    memcpy(out, c->xids, n * sizeof(*out));
    c->n_xids = 0;
    return n;
}
