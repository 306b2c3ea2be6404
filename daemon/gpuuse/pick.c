/* run --gpus N: the N least busy GPUs of the latest snapshot. A GPU with MIG
 * on offers its instances instead (each is a device to CUDA). Free ones
 * first (no process on it, its use at most gpu.idle_util_max, given to no
 * running job), then the most free memory, then the least use; GPUs given to
 * running jobs last, so that two jobs started at once get different ones. */
#include "gpuuse/gpuuse.h"

#include "rt/util.h"

#include <stdlib.h>
#include <string.h>

struct cand {
    struct rt_gpuuse_choice c;
    bool taken;
    uint64_t free_vram;
    double use;
    size_t order;
};

static int cmp_cand(const void *pa, const void *pb)
{
    const struct cand *a = pa, *b = pb;
    if (a->taken != b->taken)
        return a->taken ? 1 : -1;
    if (a->c.free != b->c.free)
        return a->c.free ? -1 : 1;
    if (a->free_vram != b->free_vram)
        return a->free_vram > b->free_vram ? -1 : 1;
    if (a->use != b->use)
        return a->use < b->use ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order); /* stable: by index */
}

static bool is_taken(const char *uuid, const char *const *taken, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(taken[i], uuid) == 0)
            return true;
    return false;
}

/* Processes on the unit, and the VRAM they hold. */
static size_t holders(const struct rt_gpuuse_dev *g, int unit)
{
    size_t n = 0;
    for (size_t k = 0; k < g->n_procs; k++)
        n += g->procs[k].unit == unit;
    return n;
}

size_t rt_gpuuse_pick(const struct rt_gpuuse_snap *s, unsigned n, const char *const *taken, size_t n_taken,
                      struct rt_gpuuse_choice *out)
{
    size_t cap = 0;
    for (size_t i = 0; s && i < s->n; i++)
        cap += s->devs[i].d.mig_enabled ? s->devs[i].d.n_mig : 1;
    struct cand *v = rt_xcalloc(cap ? cap : 1, sizeof(*v));
    size_t nc = 0;
    unsigned amd_rank = 0;
    for (size_t i = 0; s && i < s->n; i++) {
        const struct rt_gpuuse_dev *g = &s->devs[i];
        const struct rt_gpu_dev *d = &g->d;
        unsigned index = g->nvidia ? g->index : amd_rank++;
        for (int unit = d->mig_enabled ? 0 : -1; unit < (d->mig_enabled ? (int)d->n_mig : 0); unit++) {
            struct cand *c = &v[nc];
            const char *uuid = unit < 0 ? d->uuid : d->mig[unit].uuid;
            bool known = unit < 0 ? d->has_util || d->gpm.present : d->mig[unit].gpm.present;
            c->use = unit < 0 ? (d->has_util ? d->util_pct : d->gpm.sm_active) : d->mig[unit].gpm.sm_active;
            if (!known)
                c->use = 0;
            uint64_t total = unit < 0 ? d->vram_total : d->mig[unit].vram_total;
            uint64_t used = unit < 0 ? d->vram_used : d->mig[unit].vram_used;
            c->free_vram = total > used ? total - used : 0;
            bool empty = d->has_procs ? holders(g, unit) == 0 : used < s->cfg.idle_vram_min;
            c->taken = is_taken(uuid, taken, n_taken);
            c->c = (struct rt_gpuuse_choice){.nvidia = g->nvidia, .index = index,
                                             .free = empty && !c->taken && c->use <= (double)s->cfg.idle_util_max};
            rt_strlcpy(c->c.uuid, uuid, sizeof(c->c.uuid));
            c->order = nc++;
        }
    }
    qsort(v, nc, sizeof(*v), cmp_cand);
    size_t k = n < nc ? n : nc;
    for (size_t i = 0; i < k; i++)
        out[i] = v[i].c;
    free(v);
    return k;
}
