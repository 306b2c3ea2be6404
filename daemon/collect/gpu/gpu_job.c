/* Per-job GPU attribution: NVIDIA from the snapshot's process lists, AMD from
 * the job's /proc/PID/fdinfo (gpu_fdinfo.c), plus the energy share and the
 * summary totals. */
#include "collect/gpu/gpu_internal.h"

#include "rt/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Baselines of one device for one job: energy, and the health counters
 * (counted while the job is on the device, from its second call there). */
struct job_dev {
    char uuid[96];
    bool has_prev;
    double prev_j;
    char health_uuid[96];
    bool has_health;
    struct rt_gpu_health health;
};

struct rt_gpu_job {
    struct job_dev *devs;
    size_t n_devs;
    struct gpu_fdinfo_state *fdinfo; /* AMD clients */
    /* summary */
    bool present;
    uint64_t samples;
    uint64_t peak_vram;
    double usage_secs, secs, max_usage;
    bool has_energy;
    double energy_j;
    char **uuids;
    size_t n_uuids;
};

struct rt_gpu_job *rt_gpu_job_new(void)
{
    struct rt_gpu_job *j = rt_xcalloc(1, sizeof(*j));
    j->fdinfo = gpu_fdinfo_new();
    return j;
}

void rt_gpu_job_free(struct rt_gpu_job *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->n_uuids; i++)
        free(j->uuids[i]);
    free(j->uuids);
    free(j->devs);
    gpu_fdinfo_free(j->fdinfo);
    free(j);
}

static int cmp_pid(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void match_nvidia(const struct gpu_view *v, const int32_t *pids, size_t npids, struct gpu_job_acc *acc)
{
    const struct rt_gpu_dev *d = &v->data;
    for (size_t k = 0; k < d->n_procs; k++) {
        const struct rt_gpu_proc *p = &d->procs[k];
        if (!bsearch(&p->pid, pids, npids, sizeof(*pids), cmp_pid))
            continue;
        acc->vram += p->vram_bytes;
        acc->sm_pct += p->sm_pct;
        acc->matched = true;
        for (size_t m = 0; d->mig_enabled && m < d->n_mig; m++)
            if (d->mig[m].gi == p->gi)
                acc->mig_mask |= 1u << m;
    }
}

/* A counter's growth since the baseline; a smaller value (a driver reload)
 * counts nothing. */
static uint32_t grew(uint64_t now, uint64_t before)
{
    return now > before ? (uint32_t)(now - before) : 0;
}

/* The GPM figures of the units of a device the job is on. */
static void add_gpm(const struct rt_gpu_gpm *m, double *sum, size_t *n)
{
    if (!m->present)
        return;
    sum[0] += m->sm_active;
    sum[1] += m->sm_occupancy;
    sum[2] += m->tensor_active;
    sum[3] += m->dram_bw;
    (*n)++;
}

/* Health of one device for the job over its interval, into out; the
 * baselines follow the device whether the job is on it or not. */
static void device_health(struct job_dev *jd, const struct gpu_view *v, const struct gpu_job_acc *a, bool in_use,
                          struct rt_process_gpu *out, double *gpm, size_t *n_gpm)
{
    const struct rt_gpu_dev *d = &v->data;
    const struct rt_gpu_health *h = &d->health, *b = &jd->health;
    bool counted = in_use && jd->has_health && strcmp(jd->health_uuid, d->uuid) == 0;
    if (in_use) {
        out->has_xids |= h->has_events;
        out->has_ecc |= h->has_ecc;
        out->has_pages |= h->has_retired || h->has_remapped;
        out->has_clocks |= h->has_reasons;
        if (d->mig_enabled) {
            for (size_t m = 0; m < d->n_mig; m++)
                if (a->mig_mask & 1u << m)
                    add_gpm(&d->mig[m].gpm, gpm, n_gpm);
        } else {
            add_gpm(&d->gpm, gpm, n_gpm);
            out->stalled |= d->has_util && d->gpm.present && d->util_pct >= 90 && d->gpm.sm_active < 5;
        }
    }
    if (counted) {
        out->xids += h->has_events && b->has_events ? grew(h->xids, b->xids) : 0;
        if (h->has_ecc && b->has_ecc) {
            out->ecc_corrected += grew(h->ecc_corrected, b->ecc_corrected);
            out->ecc_uncorrected += grew(h->ecc_uncorrected, b->ecc_uncorrected);
        }
        if (h->has_retired && b->has_retired)
            out->pages += grew(h->retired_sbe, b->retired_sbe) + grew(h->retired_dbe, b->retired_dbe);
        if (h->has_remapped && b->has_remapped)
            out->pages += grew(h->remapped_corr, b->remapped_corr) + grew(h->remapped_unc, b->remapped_unc);
        for (int r = 0; h->has_reasons && b->has_reasons && r < RT_GPU_THROTTLE_N; r++)
            if (h->throttle_secs[r] > b->throttle_secs[r])
                out->clocks_held_secs[r] += h->throttle_secs[r] - b->throttle_secs[r];
    }
    rt_strlcpy(jd->health_uuid, d->uuid, sizeof(jd->health_uuid));
    jd->health = *h;
    jd->has_health = true;
}

/* The job's share of a device's energy: its share of the device's compute
 * while the device computed, else its share of the VRAM in use (docs/gpu.md). */
static double energy_share(const struct gpu_view *v, const struct gpu_job_acc *a, double usage)
{
    const struct rt_gpu_dev *d = &v->data;
    double share = 0;
    if (v->vendor == GPU_NVIDIA) {
        if (d->has_proc_util && d->sm_total > 0)
            share = a->sm_pct / d->sm_total;
        else if (d->procs_vram > 0)
            share = (double)a->vram / (double)d->procs_vram;
    } else {
        double busy = d->util_pct / 100.0;
        if (busy > 0)
            share = usage / busy;
        else if (d->vram_used > 0)
            share = (double)a->vram / (double)d->vram_used;
    }
    return share > 1 ? 1 : share;
}

static void note_uuid(struct rt_gpu_job *j, const char *uuid)
{
    for (size_t i = 0; i < j->n_uuids; i++)
        if (strcmp(j->uuids[i], uuid) == 0)
            return;
    j->uuids = rt_xrealloc(j->uuids, (j->n_uuids + 1) * sizeof(*j->uuids));
    j->uuids[j->n_uuids++] = rt_xstrdup(uuid);
}

static void attribute_energy(struct rt_gpu_job *j, size_t i, const struct gpu_view *v, double share, bool in_use)
{
    struct job_dev *jd = &j->devs[i];
    const struct rt_gpu_dev *d = &v->data;
    if (!v->visible || !d->has_energy_est) {
        jd->has_prev = false; /* no energy across a gap */
        return;
    }
    if (strcmp(jd->uuid, d->uuid) != 0) { /* another device in this slot */
        rt_strlcpy(jd->uuid, d->uuid, sizeof(jd->uuid));
        jd->has_prev = false;
    }
    if (jd->has_prev && d->energy_est_j >= jd->prev_j)
        j->energy_j += (d->energy_est_j - jd->prev_j) * share;
    if (in_use)
        j->has_energy = true;
    jd->prev_j = d->energy_est_j;
    jd->has_prev = true;
}

void rt_gpu_job_usage(struct rt_gpu_collector *c, struct rt_gpu_job *j, const int32_t *pids, size_t npids,
                      double interval_secs, struct rt_process_gpu *out)
{
    memset(out, 0, sizeof(*out));
    if (!c->has_backend)
        return;
    out->present = true;
    size_t n = c->n_view;
    if (npids > c->pids_cap) {
        c->pids_cap = npids;
        c->pids = rt_xrealloc(c->pids, npids * sizeof(*c->pids));
    }
    if (npids) {
        memcpy(c->pids, pids, npids * sizeof(*pids));
        qsort(c->pids, npids, sizeof(*c->pids), cmp_pid);
    }
    if (n > c->acc_cap) {
        c->acc_cap = n;
        c->acc = rt_xrealloc(c->acc, n * sizeof(*c->acc));
    }
    memset(c->acc, 0, n * sizeof(*c->acc));
    if (n > j->n_devs) {
        j->devs = rt_xrealloc(j->devs, n * sizeof(*j->devs));
        memset(j->devs + j->n_devs, 0, (n - j->n_devs) * sizeof(*j->devs));
        j->n_devs = n;
    }

    for (size_t i = 0; i < n && npids; i++)
        if (c->view[i].visible && c->view[i].vendor == GPU_NVIDIA)
            match_nvidia(&c->view[i], c->pids, npids, &c->acc[i]);
    gpu_fdinfo_scan(c, j->fdinfo, c->pids, npids);

    double interval_ns = interval_secs > 0 ? interval_secs * 1e9 : 0;
    uint64_t vram = 0;
    double gpm[4] = {0};
    size_t n_gpm = 0;
    for (size_t i = 0; i < n; i++) {
        const struct gpu_view *v = &c->view[i];
        const struct gpu_job_acc *a = &c->acc[i];
        double usage;
        bool in_use;
        if (v->vendor == GPU_NVIDIA) {
            usage = v->data.has_proc_util ? a->sm_pct / 100.0 : 0;
            in_use = a->matched;
        } else {
            usage = interval_ns > 0 ? (double)a->gfx_ns / interval_ns : 0;
            if (usage > 1)
                usage = 1;
            in_use = a->vram > 0 || a->gfx_ns > 0;
        }
        attribute_energy(j, i, v, v->visible ? energy_share(v, a, usage) : 0, in_use);
        if (!v->visible)
            continue;
        device_health(&j->devs[i], v, a, in_use, out, gpm, &n_gpm);
        vram += a->vram;
        out->usage += usage;
        out->utilized += in_use;
        if (in_use)
            note_uuid(j, v->data.uuid);
    }
    out->vram_mib = (double)vram / (double)RT_MIB;
    if (n_gpm) {
        out->has_gpm = true;
        out->gpm_sm_active = gpm[0] / (double)n_gpm;
        out->gpm_sm_occupancy = gpm[1] / (double)n_gpm;
        out->gpm_tensor_active = gpm[2] / (double)n_gpm;
        out->gpm_dram_bw = gpm[3] / (double)n_gpm;
    }

    j->present = true;
    j->samples++;
    if (vram > j->peak_vram)
        j->peak_vram = vram;
    if (out->usage > j->max_usage)
        j->max_usage = out->usage;
    if (interval_secs > 0) {
        j->usage_secs += out->usage * interval_secs;
        j->secs += interval_secs;
    }
}

void rt_gpu_job_summary(const struct rt_gpu_job *j, struct rt_gpu_job_summary *out)
{
    memset(out, 0, sizeof(*out));
    out->present = j->present;
    out->samples = j->samples;
    out->peak_vram_bytes = j->peak_vram;
    out->avg_usage = j->secs > 0 ? j->usage_secs / j->secs : 0;
    out->max_usage = j->max_usage;
    out->has_energy = j->has_energy;
    out->energy_joules = j->energy_j;
    out->n_gpus = j->n_uuids;
    out->gpu_uuids = (const char *const *)j->uuids;
}
