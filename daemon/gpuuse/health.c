/* GPU health seen from the jobs: each XID error of a tick is said in the
 * journal once per job with a process on that GPU (on that MIG instance,
 * when NVML names it), or once without a job. A GPU that fell off the bus
 * (XID 79) is no longer in this tick's view: the previous tick's says who
 * was on it. */
#include "gpuuse/internal.h"

#include "rt/util.h"
#include "system/events.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define XIDS_PER_TICK 64

static void say_xid(const struct rt_gpuuse_dev *g, const struct rt_gpu_xid *x)
{
    struct rt_event_gpu e = {.index = g->index, .vendor = "nvidia", .name = g->d.name, .uuid = g->d.uuid,
                             .memory_total_bytes = g->d.vram_total};
    uint64_t said[16];
    size_t n_said = 0;
    for (size_t k = 0; k < g->n_procs; k++) {
        const struct rt_gpuuse_proc *p = &g->procs[k];
        if (!p->job_id || (x->gi != RT_GPU_NO_ID && p->unit >= 0 && g->d.mig[p->unit].gi != x->gi))
            continue;
        bool dup = false;
        for (size_t i = 0; i < n_said; i++)
            dup |= said[i] == p->job_id;
        if (dup || n_said == RT_ARRAY_SIZE(said))
            continue;
        said[n_said++] = p->job_id;
        char id[24];
        snprintf(id, sizeof(id), "%" PRIu64, p->job_id);
        struct rt_event_job j = {.id = id, .name = p->job_name, .owner_uid = p->job_owner};
        rt_event_gpu_xid(&(struct rt_event_gpu_xid){.gpu = &e, .xid = x->xid, .job = &j});
    }
    if (!n_said)
        rt_event_gpu_xid(&(struct rt_event_gpu_xid){.gpu = &e, .xid = x->xid});
}

static const struct rt_gpuuse_dev *find(const struct rt_gpuuse_snap *s, const char *uuid)
{
    for (size_t k = 0; s && k < s->n; k++)
        if (s->devs[k].nvidia && strcmp(s->devs[k].d.uuid, uuid) == 0)
            return &s->devs[k];
    return NULL;
}

void gpuuse_xids(struct rt_gpuuse *u, struct rt_gpu_collector *c, const struct rt_gpuuse_snap *s)
{
    struct rt_gpu_xid xids[XIDS_PER_TICK];
    size_t n = rt_gpu_take_xids(c, xids, RT_ARRAY_SIZE(xids));
    for (size_t i = 0; i < n; i++) {
        const struct rt_gpuuse_dev *g = find(s, xids[i].uuid);
        if (!g)
            g = find(u->snap, xids[i].uuid); /* the sampler's own: no lock needed to read it */
        if (g) {
            say_xid(g, &xids[i]);
            continue;
        }
        struct rt_event_gpu e = {.index = xids[i].index, .vendor = "nvidia", .name = "", .uuid = xids[i].uuid};
        rt_event_gpu_xid(&(struct rt_event_gpu_xid){.gpu = &e, .xid = xids[i].xid});
    }
}
