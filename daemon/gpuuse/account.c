/* The usage of GPU processes in no job, each tick, into the ledger: per
 * user, the GPU-seconds their processes held (a GPU once however many of
 * their processes are on it; a MIG instance by its share of the card's
 * memory), were busy (each process's use x time) and held idle; their CPU
 * seconds and memory byte-seconds (a process once, however many GPUs it is
 * on; from its first tick on a GPU); their share of each GPU's energy (by
 * use while it computed, else by memory held, as jobs' shares are). A job's
 * processes are left out: their usage is the job's (its summary). */
#include "gpuuse/internal.h"

#include "proc/procfs.h"
#include "rt/util.h"

#include <stdlib.h>
#include <string.h>

#define MAX_USERS 64 /* users with processes in no job on the GPUs, per tick */

struct acc {
    uid_t uid;
    struct rt_gpuuse_usage u;
};

static struct rt_gpuuse_usage *of(struct acc *a, size_t *n, uid_t uid)
{
    for (size_t i = 0; i < *n; i++)
        if (a[i].uid == uid)
            return &a[i].u;
    if (*n == MAX_USERS)
        return NULL;
    a[*n] = (struct acc){.uid = uid};
    return &a[(*n)++].u;
}

static bool untracked(const struct rt_gpuuse_proc *p) { return !p->job_id && p->has_creds; }

/* A unit's weight in GPU-seconds: 1, or a MIG instance's share of memory. */
static double weight(const struct rt_gpu_dev *d, int unit)
{
    if (unit < 0)
        return 1;
    const struct rt_gpu_mig *m = &d->mig[unit];
    if (m->has_memory && d->vram_total)
        return (double)m->vram_total / (double)d->vram_total;
    return d->n_mig ? 1.0 / (double)d->n_mig : 1;
}

/* Held and idle GPU-seconds: each user once per unit. */
static void held(const struct rt_gpuuse_dev *g, int unit, double secs, struct acc *a, size_t *na)
{
    uid_t seen[MAX_USERS];
    size_t ns = 0;
    const struct rt_gpuuse_idle *idle = unit < 0 ? &g->idle : &g->mig_idle[unit];
    for (size_t k = 0; k < g->n_procs; k++) {
        const struct rt_gpuuse_proc *p = &g->procs[k];
        bool dup = false;
        for (size_t i = 0; i < ns; i++)
            dup |= seen[i] == p->creds.uid[0];
        struct rt_gpuuse_usage *u;
        if (p->unit != unit || !untracked(p) || dup || ns == MAX_USERS || !(u = of(a, na, p->creds.uid[0])))
            continue;
        seen[ns++] = p->creds.uid[0];
        u->gpu_held_secs += weight(&g->d, unit) * secs;
        if (idle->idle)
            u->gpu_idle_secs += weight(&g->d, unit) * secs;
    }
}

/* Busy GPU-seconds and the energy share of each process in no job. */
static void busy_and_energy(struct rt_gpuuse *u, const struct rt_gpuuse_dev *g, double secs, struct acc *a,
                            size_t *na)
{
    const struct rt_gpu_dev *d = &g->d;
    struct gpuuse_unit *st = gpuuse_unit(u, d->uuid);
    double de = 0;
    if (d->has_energy_est && st->has_energy && d->energy_est_j > st->energy_j)
        de = d->energy_est_j - st->energy_j;
    st->has_energy = d->has_energy_est;
    st->energy_j = d->energy_est_j;
    st->tick = u->tick;
    double sm = 0, vram = 0;
    for (size_t k = 0; k < g->n_procs; k++) {
        sm += g->procs[k].has_sm ? g->procs[k].sm_pct : 0;
        vram += (double)g->procs[k].vram_bytes;
    }
    for (size_t k = 0; k < g->n_procs; k++) {
        const struct rt_gpuuse_proc *p = &g->procs[k];
        struct rt_gpuuse_usage *us;
        if (!untracked(p) || !(us = of(a, na, p->creds.uid[0])))
            continue;
        us->gpu_busy_secs += (p->has_sm ? p->sm_pct / 100 : 0) * secs;
        double share = sm > 0 ? (p->has_sm ? p->sm_pct : 0) / sm : vram > 0 ? (double)p->vram_bytes / vram : 0;
        us->energy_joules += de * share;
    }
}

/* CPU seconds since the process's previous tick (none on its first), and
 * its memory over this one. */
static void cpu_and_memory(struct rt_gpuuse *u, const struct rt_gpuuse_proc *p, struct rt_proc_cache *cache,
                           double secs, struct rt_gpuuse_usage *us)
{
    for (size_t i = 0; i < u->n_cpu; i++)
        if (u->cpu[i].pid == p->pid && u->cpu[i].tick == u->tick)
            return; /* on another GPU too: counted once */
    const struct rt_pinfo *pi = rt_proc_cache_get(cache, p->pid, 0);
    if (!pi)
        return;
    uint64_t ticks = pi->st.utime + pi->st.stime;
    struct gpuuse_cpu *c = NULL;
    for (size_t i = 0; i < u->n_cpu && !c; i++)
        if (u->cpu[i].pid == p->pid && u->cpu[i].starttime == pi->st.starttime)
            c = &u->cpu[i];
    if (c && ticks > c->ticks)
        us->cpu_secs += (double)(ticks - c->ticks) / (double)rt_clk_tck();
    if (!c) {
        if (u->n_cpu == u->cap_cpu) {
            u->cap_cpu = u->cap_cpu ? 2 * u->cap_cpu : 32;
            u->cpu = rt_xrealloc(u->cpu, u->cap_cpu * sizeof(*u->cpu));
        }
        c = &u->cpu[u->n_cpu++];
        c->pid = p->pid;
        c->starttime = pi->st.starttime;
    }
    c->ticks = ticks;
    c->tick = u->tick;
    us->memory_byte_secs += (double)pi->st.rss_pages * (double)rt_page_size() * secs;
}

void gpuuse_account(struct rt_gpuuse *u, const struct rt_gpuuse_snap *s, struct rt_proc_cache *cache, double secs,
                    double now)
{
    struct acc a[MAX_USERS];
    size_t na = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct rt_gpuuse_dev *g = &s->devs[i];
        if (!g->d.mig_enabled)
            held(g, -1, secs, a, &na);
        for (size_t m = 0; g->d.mig_enabled && m < g->d.n_mig; m++)
            held(g, (int)m, secs, a, &na);
        busy_and_energy(u, g, secs, a, &na);
        for (size_t k = 0; k < g->n_procs; k++) {
            struct rt_gpuuse_usage *us;
            if (untracked(&g->procs[k]) && (us = of(a, &na, g->procs[k].creds.uid[0])))
                cpu_and_memory(u, &g->procs[k], cache, secs, us);
        }
    }
    if (!na)
        return;
    pthread_mutex_lock(&u->mu);
    for (size_t i = 0; i < na; i++)
        gpuuse_ledger_add(u, a[i].uid, now, &a[i].u);
    pthread_mutex_unlock(&u->mu);
}
