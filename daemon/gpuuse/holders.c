/* The sampler's tick of the GPU ownership view: every process on every GPU
 * with its user (its /proc ids) and job (the running jobs' process lists),
 * since when it is there; each GPU, or MIG instance, judged idle but held;
 * the GPUs given to jobs judged used; journal records when either starts;
 * the snapshot the main thread reads. Cost per tick grows with the GPU
 * processes and the tracked processes, not with the host's. */
#include "gpuuse/internal.h"

#include "rt/util.h"
#include "system/events.h"
#include "system/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVS 64
#define MAX_NAMED 8 /* users and jobs named in one journal record */

struct rt_gpuuse *rt_gpuuse_new(const struct rt_gpuuse_config *cfg)
{
    struct rt_gpuuse *u = rt_xcalloc(1, sizeof(*u));
    pthread_mutex_init(&u->mu, NULL);
    u->cfg = *cfg;
    return u;
}

void rt_gpuuse_free(struct rt_gpuuse *u)
{
    if (!u)
        return;
    rt_gpuuse_snap_unref(u->snap);
    free(u->units);
    free(u->seen);
    free(u->cpu);
    free(u->ledger);
    free(u->unused);
    free(u->map);
    pthread_mutex_destroy(&u->mu);
    free(u);
}

void rt_gpuuse_set_config(struct rt_gpuuse *u, const struct rt_gpuuse_config *cfg)
{
    pthread_mutex_lock(&u->mu);
    u->cfg = *cfg;
    pthread_mutex_unlock(&u->mu);
}

struct rt_gpuuse_snap *rt_gpuuse_snapshot(struct rt_gpuuse *u)
{
    pthread_mutex_lock(&u->mu);
    struct rt_gpuuse_snap *s = u->snap;
    if (s)
        __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&u->mu);
    return s;
}

void rt_gpuuse_snap_unref(struct rt_gpuuse_snap *s)
{
    if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    for (size_t i = 0; i < s->n; i++) {
        for (size_t k = 0; k < s->devs[i].n_procs; k++)
            free(s->devs[i].procs[k].job_name);
        free(s->devs[i].procs);
    }
    free(s->devs);
    free(s->given);
    free(s);
}

/* ---- processes ---- */

static int cmp_pidjob(const void *a, const void *b)
{
    int32_t x = ((const struct gpuuse_pidjob *)a)->pid, y = ((const struct gpuuse_pidjob *)b)->pid;
    return (x > y) - (x < y);
}

/* pid -> job for every running job's processes, sorted. */
static void build_map(struct rt_gpuuse *u, const struct rt_gpuuse_job *jobs, size_t njobs)
{
    size_t n = 0;
    for (size_t i = 0; i < njobs; i++)
        n += jobs[i].npids;
    if (n > u->map_cap) {
        u->map_cap = n;
        u->map = rt_xrealloc(u->map, n * sizeof(*u->map));
    }
    u->n_map = 0;
    for (size_t i = 0; i < njobs; i++)
        for (size_t k = 0; k < jobs[i].npids; k++)
            u->map[u->n_map++] = (struct gpuuse_pidjob){jobs[i].pids[k], i};
    if (u->n_map > 1)
        qsort(u->map, u->n_map, sizeof(*u->map), cmp_pidjob);
}

static const struct rt_gpuuse_job *job_of(const struct rt_gpuuse *u, const struct rt_gpuuse_job *jobs, int32_t pid)
{
    if (!u->n_map)
        return NULL;
    struct gpuuse_pidjob key = {.pid = pid};
    const struct gpuuse_pidjob *m = bsearch(&key, u->map, u->n_map, sizeof(*u->map), cmp_pidjob);
    return m ? &jobs[m->job] : NULL;
}

/* Since when the process (pid and start time) has been on this GPU. */
static double first_seen(struct rt_gpuuse *u, const char *uuid, int32_t pid, uint64_t starttime, double now)
{
    for (size_t i = 0; i < u->n_seen; i++) {
        struct gpuuse_seen *e = &u->seen[i];
        if (e->pid == pid && e->starttime == starttime && strcmp(e->uuid, uuid) == 0) {
            e->tick = u->tick;
            return e->since;
        }
    }
    if (u->n_seen == u->cap_seen) {
        u->cap_seen = u->cap_seen ? 2 * u->cap_seen : 32;
        u->seen = rt_xrealloc(u->seen, u->cap_seen * sizeof(*u->seen));
    }
    struct gpuuse_seen *e = &u->seen[u->n_seen++];
    *e = (struct gpuuse_seen){.pid = pid, .starttime = starttime, .since = now, .tick = u->tick};
    rt_strlcpy(e->uuid, uuid, sizeof(e->uuid));
    return now;
}

static int mig_unit(const struct rt_gpu_dev *d, uint32_t gi)
{
    for (size_t m = 0; d->mig_enabled && m < d->n_mig; m++)
        if (d->mig[m].gi == gi)
            return (int)m;
    return -1;
}

static void attribute(struct rt_gpuuse *u, const struct rt_gpu_dev *d, struct rt_gpuuse_dev *out,
                      struct rt_proc_cache *cache, const struct rt_gpuuse_job *jobs, double now)
{
    out->procs = rt_xcalloc(d->n_procs ? d->n_procs : 1, sizeof(*out->procs));
    for (size_t k = 0; k < d->n_procs; k++) {
        const struct rt_gpu_proc *p = &d->procs[k];
        struct rt_gpuuse_proc *q = &out->procs[out->n_procs++];
        const struct rt_pinfo *pi = rt_proc_cache_get(cache, p->pid, RT_PI_OWNER | RT_PI_CREDS);
        const struct rt_gpuuse_job *j = job_of(u, jobs, p->pid);
        *q = (struct rt_gpuuse_proc){.pid = p->pid, .vram_bytes = p->vram_bytes, .has_sm = p->has_sm,
                                     .sm_pct = p->sm_pct, .unit = mig_unit(d, p->gi)};
        if (pi && pi->creds_ok && pi->owner_ok) {
            q->has_creds = true;
            q->creds = pi->creds;
            q->owner_uid = pi->owner_uid;
            q->owner_gid = pi->owner_gid;
        }
        if (j) {
            q->job_id = j->id;
            q->job_owner = j->owner;
            q->job_name = j->name ? rt_xstrdup(j->name) : NULL;
        }
        q->since = first_seen(u, d->uuid, p->pid, pi ? pi->st.starttime : 0, now);
    }
}

/* ---- idle but held ---- */

struct gpuuse_unit *gpuuse_unit(struct rt_gpuuse *u, const char *uuid)
{
    for (size_t i = 0; i < u->n_units; i++)
        if (strcmp(u->units[i].uuid, uuid) == 0)
            return &u->units[i];
    if (u->n_units == u->cap_units) {
        u->cap_units = u->cap_units ? 2 * u->cap_units : 8;
        u->units = rt_xrealloc(u->units, u->cap_units * sizeof(*u->units));
    }
    struct gpuuse_unit *s = &u->units[u->n_units++];
    memset(s, 0, sizeof(*s));
    rt_strlcpy(s->uuid, uuid, sizeof(s->uuid));
    return s;
}

static void gpu_of(const struct rt_gpuuse_dev *g, struct rt_event_gpu *e)
{
    *e = (struct rt_event_gpu){.index = g->index, .vendor = g->nvidia ? "nvidia" : "amd", .name = g->d.name,
                               .uuid = g->d.uuid, .memory_total_bytes = g->d.vram_total};
}

/* The journal record of a unit that has just been flagged idle: its users
 * and jobs (each once). */
static void report_idle(const struct rt_gpuuse_dev *g, int unit, const struct rt_gpuuse_idle *idle, double now,
                        unsigned util_max)
{
    uid_t uids[MAX_NAMED];
    struct rt_event_job jobs[MAX_NAMED];
    char ids[MAX_NAMED][24];
    size_t nu = 0, nj = 0;
    for (size_t k = 0; k < g->n_procs; k++) {
        const struct rt_gpuuse_proc *p = &g->procs[k];
        if (p->unit != unit)
            continue;
        bool dup = false;
        for (size_t i = 0; p->has_creds && i < nu; i++)
            dup |= uids[i] == p->creds.uid[0];
        if (p->has_creds && !dup && nu < MAX_NAMED)
            uids[nu++] = p->creds.uid[0];
        char id[24];
        snprintf(id, sizeof(id), "%" PRIu64, p->job_id);
        dup = false;
        for (size_t i = 0; p->job_id && i < nj; i++)
            dup |= strcmp(ids[i], id) == 0;
        if (p->job_id && !dup && nj < MAX_NAMED) {
            memcpy(ids[nj], id, sizeof(id));
            jobs[nj] = (struct rt_event_job){.id = ids[nj], .name = p->job_name, .owner_uid = p->job_owner};
            nj++;
        }
    }
    struct rt_event_gpu e;
    gpu_of(g, &e);
    rt_event_gpu_idle(&(struct rt_event_gpu_idle){
        .gpu = &e, .instance_uuid = unit >= 0 ? g->d.mig[unit].uuid : NULL, .since = idle->since,
        .secs = now - idle->since, .vram_held_bytes = idle->vram_held, .util_max = util_max, .uids = uids,
        .n_uids = nu, .jobs = jobs, .n_jobs = nj});
}

/* Judge one unit (the GPU, or MIG instance `unit`) for this tick. */
static void judge(struct rt_gpuuse *u, struct rt_gpuuse_dev *g, int unit, const struct rt_gpuuse_config *cfg,
                  uint64_t mono, double now)
{
    const struct rt_gpu_dev *d = &g->d;
    struct rt_gpuuse_idle *out = unit < 0 ? &g->idle : &g->mig_idle[unit];
    bool has_use = false;
    double use = 0;
    uint64_t held = 0;
    size_t holders = 0;
    if (unit < 0) {
        has_use = d->has_util || d->gpm.present;
        use = d->has_util ? d->util_pct : d->gpm.sm_active;
    } else {
        has_use = d->mig[unit].gpm.present;
        use = d->mig[unit].gpm.sm_active;
    }
    for (size_t k = 0; k < g->n_procs; k++)
        if (g->procs[k].unit == unit) {
            held += g->procs[k].vram_bytes;
            holders++;
        }
    if (!d->has_procs) { /* no process list: the memory in use says it is held */
        held = unit < 0 ? d->vram_used : d->mig[unit].vram_used;
        holders = held > 0;
    }
    struct gpuuse_unit *st = gpuuse_unit(u, unit < 0 ? d->uuid : d->mig[unit].uuid);
    st->tick = u->tick;
    bool low = has_use && holders > 0 && held >= cfg->idle_vram_min && use <= (double)cfg->idle_util_max;
    if (!low) {
        st->low_since_mono = 0;
        st->reported = false;
    } else if (!st->low_since_mono) {
        st->low_since_mono = mono;
        st->low_since_real = now;
    }
    out->judged = has_use;
    out->vram_held = held;
    out->since = low ? st->low_since_real : 0;
    out->idle = low && mono - st->low_since_mono >= (uint64_t)cfg->idle_after_secs * RT_NSEC_PER_SEC;
    if (out->idle && !st->reported) {
        st->reported = true;
        report_idle(g, unit, out, now, cfg->idle_util_max);
    }
}

/* ---- GPUs given to jobs ---- */

static const struct rt_gpuuse_dev *unit_by_uuid(const struct rt_gpuuse_snap *s, const char *uuid, int *unit)
{
    for (size_t i = 0; i < s->n; i++) {
        const struct rt_gpu_dev *d = &s->devs[i].d;
        *unit = -1;
        if (!d->mig_enabled && strcmp(d->uuid, uuid) == 0)
            return &s->devs[i];
        for (size_t m = 0; d->mig_enabled && m < d->n_mig; m++)
            if (strcmp(d->mig[m].uuid, uuid) == 0) {
                *unit = (int)m;
                return &s->devs[i];
            }
    }
    return NULL;
}

static struct gpuuse_unused *find_unused(struct rt_gpuuse *u, uint64_t job, const char *uuid)
{
    for (size_t i = 0; i < u->n_unused; i++)
        if (u->unused[i].job_id == job && strcmp(u->unused[i].uuid, uuid) == 0)
            return &u->unused[i];
    return NULL;
}

static struct gpuuse_unused *unused_state(struct rt_gpuuse *u, uint64_t job, const char *uuid)
{
    struct gpuuse_unused *found = find_unused(u, job, uuid);
    if (found)
        return found;
    if (u->n_unused == u->cap_unused) {
        u->cap_unused = u->cap_unused ? 2 * u->cap_unused : 8;
        u->unused = rt_xrealloc(u->unused, u->cap_unused * sizeof(*u->unused));
    }
    struct gpuuse_unused *e = &u->unused[u->n_unused++];
    memset(e, 0, sizeof(*e));
    e->job_id = job;
    rt_strlcpy(e->uuid, uuid, sizeof(e->uuid));
    return e;
}

static void judge_assigned(struct rt_gpuuse *u, struct rt_gpuuse_snap *s, const struct rt_gpuuse_job *j,
                           const struct rt_gpuuse_config *cfg, uint64_t mono, double now)
{
    size_t n = j->assigned ? json_object_array_length(j->assigned) : 0;
    for (size_t a = 0; a < n; a++) {
        const char *uuid = json_object_get_string(json_object_array_get_idx(j->assigned, a));
        int unit;
        const struct rt_gpuuse_dev *g = uuid ? unit_by_uuid(s, uuid, &unit) : NULL;
        if (!g) { /* lost or hung: not judged, its state kept */
            struct gpuuse_unused *st = uuid ? find_unused(u, j->id, uuid) : NULL;
            if (st)
                st->tick = u->tick;
            continue;
        }
        struct gpuuse_unused *st = unused_state(u, j->id, uuid);
        st->tick = u->tick;
        bool used = false;
        for (size_t k = 0; k < g->n_procs && !used; k++)
            used = g->procs[k].job_id == j->id && g->procs[k].unit == unit;
        s->given = rt_xrealloc(s->given, (s->n_given + 1) * sizeof(*s->given));
        struct rt_gpuuse_given *out = &s->given[s->n_given++];
        *out = (struct rt_gpuuse_given){.job_id = j->id, .owner = j->owner, .unused = !used};
        rt_strlcpy(out->uuid, uuid, sizeof(out->uuid));
        if (used) {
            st->since_mono = 0;
            st->reported = false;
            continue;
        }
        if (!st->since_mono) {
            st->since_mono = mono;
            st->since_real = now;
        }
        bool idle = mono - st->since_mono >= (uint64_t)cfg->idle_after_secs * RT_NSEC_PER_SEC;
        out->idle = idle;
        out->since = st->since_real;
        if (idle && !st->reported) {
            st->reported = true;
            char id[24];
            snprintf(id, sizeof(id), "%" PRIu64, j->id);
            struct rt_event_job ej = {.id = id, .name = j->name, .owner_uid = j->owner};
            struct rt_event_gpu e;
            gpu_of(g, &e);
            rt_event_gpu_idle(&(struct rt_event_gpu_idle){
                .gpu = &e, .instance_uuid = unit >= 0 ? uuid : NULL, .unused = true, .since = st->since_real,
                .secs = now - st->since_real, .uids = &j->owner, .n_uids = 1, .jobs = &ej, .n_jobs = 1});
        }
    }
}

/* ---- the tick ---- */

/* Drop the states of what was not seen in this tick. */
#define FORGET(arr, n)                                                                                            \
    do {                                                                                                          \
        size_t w_ = 0;                                                                                            \
        for (size_t i_ = 0; i_ < (n); i_++)                                                                       \
            if ((arr)[i_].tick == u->tick)                                                                        \
                (arr)[w_++] = (arr)[i_];                                                                          \
        (n) = w_;                                                                                                 \
    } while (0)

void rt_gpuuse_tick(struct rt_gpuuse *u, struct rt_gpu_collector *c, struct rt_proc_cache *cache,
                    const struct rt_gpuuse_job *jobs, size_t njobs)
{
    pthread_mutex_lock(&u->mu);
    struct rt_gpuuse_config cfg = u->cfg;
    pthread_mutex_unlock(&u->mu);
    u->tick++;
    uint64_t mono = rt_mono_ns();
    double now = (double)rt_real_ns() / 1e9;
    struct rt_gpu_devref refs[MAX_DEVS];
    size_t n = rt_gpu_devices(c, refs, MAX_DEVS);
    build_map(u, jobs, njobs);

    struct rt_gpuuse_snap *s = rt_xcalloc(1, sizeof(*s));
    s->refs = 1;
    s->taken_at = now;
    s->has_backend = rt_gpu_has_backend(c);
    s->cfg = cfg;
    s->devs = n ? rt_xcalloc(n, sizeof(*s->devs)) : NULL; /* an entry is KiBs to clear */
    for (size_t i = 0; i < n; i++) {
        struct rt_gpuuse_dev *g = &s->devs[s->n++];
        g->nvidia = refs[i].nvidia;
        g->index = refs[i].index;
        g->d = *refs[i].d;
        g->d.procs = NULL;
        g->d.n_procs = g->d.procs_cap = 0;
        attribute(u, refs[i].d, g, cache, jobs, now);
        if (!g->d.mig_enabled)
            judge(u, g, -1, &cfg, mono, now);
        for (size_t m = 0; g->d.mig_enabled && m < g->d.n_mig; m++)
            judge(u, g, (int)m, &cfg, mono, now);
        g->has_stalled = !g->d.mig_enabled && g->d.has_util && g->d.gpm.present;
        g->stalled = g->has_stalled && g->d.util_pct >= 90 && g->d.gpm.sm_active < 5;
    }
    for (size_t i = 0; i < njobs; i++)
        judge_assigned(u, s, &jobs[i], &cfg, mono, now);
    gpuuse_xids(u, c, s);
    if (u->last_mono)
        gpuuse_account(u, s, cache, (double)(mono - u->last_mono) / 1e9, now);
    u->last_mono = mono;
    FORGET(u->units, u->n_units);
    FORGET(u->cpu, u->n_cpu);
    FORGET(u->seen, u->n_seen);
    FORGET(u->unused, u->n_unused);

    pthread_mutex_lock(&u->mu);
    struct rt_gpuuse_snap *old = u->snap;
    u->snap = s;
    pthread_mutex_unlock(&u->mu);
    rt_gpuuse_snap_unref(old);
}
