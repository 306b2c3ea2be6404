/* One sample of a job: scan its tree, take its figures, store them with the
 * host sample of the tick, add them to the totals, publish the sample. */
#include "sampler/internal.h"

#include "rt/json.h"
#include "rt/sample_csv.h"
#include "rt/util.h"
#include "store/figures.h"
#include "system/log.h"
#include "upload/upload.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void rt_sampler_save_record(struct rt_sampler *s, struct rt_job *j, bool sync)
{
    rt_jobs_lock(s->jobs);
    struct json_object *rec = rt_job_to_record(j);
    rt_jobs_unlock(s->jobs);
    /* A state change goes into the record log first: an older entry there
     * would otherwise be replayed over this one. */
    int r = sync ? rt_state_dir_log_record(s->state, j->id, rec, NULL) : 0;
    if (r == 0)
        r = rt_state_dir_save_record(s->state, j->id, rec, sync);
    if (r < 0)
        rt_err("job %" PRIu64 ": cannot save its record: %s", j->id, strerror(-r));
    else
        j->record_bytes = (uint64_t)r;
    json_object_put(rec);
}

void rt_sampler_begin_scan(struct rt_sampler *s, bool fresh)
{
    if (fresh || s->cache_tick != s->tick_no) {
        rt_proc_cache_begin_tick(&s->cache);
        s->cache_tick = fresh ? UINT64_MAX : s->tick_no;
    }
}

void rt_sampler_host_stored(struct rt_sampler *s, const struct rt_rcstr *text)
{
    s->host_text_ok = rt_host_text_parse(text->data, text->len, &s->host_text);
    if (!s->host_text_ok)
        rt_log_once(&s->host_text_warned, LOG_ERR, "sampler: the host sample has an unexpected form; "
                                                   "job samples are not made");
    rt_samples_host_tick(&s->state->samples, text->data, text->len);
    rt_csv_host_from_sample(&s->sample, &s->csv_host);
}

void rt_sampler_seal_one(struct rt_sampler *s)
{
    if (s->nactive > s->figs_cap) {
        s->figs_cap = s->nactive;
        s->figs = rt_xrealloc(s->figs, s->figs_cap * sizeof(*s->figs));
    }
    /* From a different job each time, so none waits behind the others. */
    for (size_t i = 0; i < s->nactive; i++)
        s->figs[i] = s->active[(i + s->seal_turn) % s->nactive]->fig;
    s->seal_turn++;
    rt_samples_seal_one(&s->state->samples, s->figs, s->nactive);
}

void rt_sampler_job_stored(struct rt_sampler *s, struct rt_job *j, bool record_logged)
{
    rt_samples_flush(&s->state->samples, j->fig);
    if (s->nended == s->ended_cap) {
        s->ended_cap = s->ended_cap ? 2 * s->ended_cap : 16;
        s->ended = rt_xrealloc(s->ended, s->ended_cap * sizeof(*s->ended));
    }
    s->ended[s->nended++] = (struct rt_ended){j->id, record_logged, j->fig != NULL};
    s->host_unsealed |= s->nactive == 0;
    s->ended_since_retention++;
}

/* What an ended job left: its record's file (the record log has it), then
 * its figures sealed. */
static void finish_ended(struct rt_sampler *s, const struct rt_ended *e)
{
    /* Looked up again: retention may have removed it meanwhile. */
    rt_jobs_lock(s->jobs);
    struct rt_job *j = rt_jobs_find(s->jobs, e->id);
    bool ended = j && !j->tracking;
    struct json_object *rec = ended && e->record ? rt_job_to_record(j) : NULL;
    struct rt_figlog *fig = ended && e->figures ? j->fig : NULL;
    rt_jobs_unlock(s->jobs);
    if (rec) {
        int r = rt_state_dir_save_record(s->state, e->id, rec, true);
        if (r < 0)
            rt_err("job %" PRIu64 ": cannot save its record: %s", e->id, strerror(-r));
        else
            j->record_bytes = (uint64_t)r;
        json_object_put(rec);
    }
    if (fig)
        rt_samples_job_ended(&s->state->samples, fig, false);
}

void rt_sampler_finish_ended(struct rt_sampler *s, uint64_t budget_ns)
{
    uint64_t t0 = rt_mono_ns();
    size_t k = 0;
    for (; k < s->nended && (k == 0 || rt_mono_ns() - t0 < budget_ns); k++)
        finish_ended(s, &s->ended[k]);
    if (k) {
        memmove(s->ended, s->ended + k, (s->nended - k) * sizeof(*s->ended));
        s->nended -= k;
        s->release_wanted = true;
    }
    /* The host's hot block, once no job has been running for a tick. */
    if (s->host_unsealed && s->nactive == 0)
        rt_samples_job_ended(&s->state->samples, NULL, true);
    s->host_unsealed = false;
    /* Every record logged is in its file now: once synced, the log empties. */
    if (!s->nended)
        rt_state_dir_settle(s->state, false);
}

/* A process tree's figures over the interval. */
static void tree_figures(const struct rt_ptree_result *r, struct rt_job_figures *f)
{
    double tck = (double)rt_clk_tck();
    f->gates |= RT_GATE_TREE | RT_GATE_DISK | RT_GATE_MEM | (r->hwm_known ? RT_GATE_HWM : 0);
    f->child_count = r->nprocs ? r->nprocs - 1 : 0;
    f->utime_secs = (double)r->d_utime / tck;
    f->stime_secs = (double)r->d_stime / tck;
    f->rss_bytes = r->rss_bytes;
    f->pss_bytes = r->pss_bytes;
    f->mem_bytes = r->pss_bytes; /* a tree's memory is its PSS: shared pages counted once */
    f->mem_hwm_bytes = r->max_hwm_bytes;
    f->disk_read_bytes = r->d_read_bytes;
    f->disk_write_bytes = r->d_write_bytes;
}

/* What every job's sample has: its cores, GPU use and health, share of the
 * GPUs' energy and GPUs idle but held (gpu_idle); then all at the precision
 * the store keeps. */
static void finish_figures(struct rt_job *j, double elapsed, double ncpu, const struct rt_process_gpu *g,
                           const struct rt_gpu_job_summary *gs, uint32_t gpu_idle, struct rt_job_figures *f)
{
    f->interval_ms = (uint64_t)llround(elapsed * 1000.0);
    f->gates |= (g->present ? RT_GATE_GPU : 0) | (gs->has_energy ? RT_GATE_GPU_ENERGY : 0) |
                (g->has_xids ? RT_GATE_GPU_XID : 0) | (g->has_ecc ? RT_GATE_GPU_ECC : 0) |
                (g->has_pages ? RT_GATE_GPU_PAGES : 0) | (g->has_clocks ? RT_GATE_GPU_CLOCKS : 0) |
                (g->has_gpm ? RT_GATE_GPM : 0);
    f->gpu_usage = g->usage;
    f->gpu_utilized = g->utilized;
    f->gpu_vram_bytes = (uint64_t)(g->vram_mib * (double)RT_MIB); /* exact: vram_mib is bytes / 2^20 */
    f->gpu_energy_joules = gs->energy_joules - j->gpu_energy_seen;
    f->gpu_idle = gpu_idle;
    f->gpu_xids = g->xids;
    f->gpu_ecc_corrected = g->ecc_corrected;
    f->gpu_ecc_uncorrected = g->ecc_uncorrected;
    f->gpu_pages = g->pages;
    f->gpu_held_power_secs = g->clocks_held_secs[RT_GPU_THROTTLE_POWER];
    f->gpu_held_thermal_secs = g->clocks_held_secs[RT_GPU_THROTTLE_THERMAL];
    f->gpu_held_hw_secs = g->clocks_held_secs[RT_GPU_THROTTLE_HW_SLOWDOWN];
    f->gpm_sm_active = g->gpm_sm_active;
    f->gpm_sm_occupancy = g->gpm_sm_occupancy;
    f->gpm_tensor_active = g->gpm_tensor_active;
    f->gpm_dram_bw = g->gpm_dram_bw;
    f->gpu_stalled_pct = g->stalled ? 100 : 0;
    /* CPU times move in clock ticks: over a few ms, one tick would read as
     * several cores. No job uses more cores than the host has. */
    f->cores_used = (f->utime_secs + f->stime_secs) / fmax(elapsed, RT_CORES_MIN_SPAN_SECS);
    if (ncpu >= 1 && f->cores_used > ncpu)
        f->cores_used = ncpu;
    for (size_t i = 0; i < rt_fig_nsamples; i++) {
        const struct rt_fig_sample *row = &rt_fig_samples[i];
        if (row->type == RT_FT_F64)
            rt_fig_set(f, row->type, row->off, rt_figures_round(rt_fig_get(f, row->type, row->off), row->places));
    }
    j->gpu_energy_seen += f->gpu_energy_joules; /* what is rounded off now counts next time */
}

/* A cgroup job's root, when it has one: alive, or a zombie telling its
 * exit status (the process tree itself is not read). */
static void root_state(struct rt_sampler *s, const struct rt_job *j, struct rt_ptree_result *r)
{
    const struct rt_pinfo *pi = j->pid > 0 ? rt_proc_cache_get(&s->cache, j->pid, 0) : NULL;
    if (!pi || pi->st.starttime != j->starttime)
        return;
    r->root_alive = true;
    r->root_zombie = pi->st.state == 'Z';
    r->root_exit_status = r->root_zombie ? pi->st.exit_code : -1;
}

static struct rt_rcstr *sample_text(struct rt_sampler *s, const struct rt_job_sample *js, bool csv)
{
    s->text.len = 0;
    bool ok = csv ? rt_job_sample_csv(s->csv_host.v, s->csv_host.n, js, &s->text)
                  : (rt_job_sample_json(&s->host_text, js, &s->text), true);
    return ok ? rt_rcstr_new((const char *)s->text.p, s->text.len) : rt_rcstr_new("", 0);
}

/* One sample of a job: scan its tree, store and publish the sample. Returns
 * the scan result for the caller (final samples look at the root), and
 * whether the sample was kept (stored); its usage counts anyway. */
bool rt_sampler_job_sample(struct rt_sampler *s, struct rt_job *j, bool fresh, struct rt_ptree_result *r)
{
    rt_sampler_begin_scan(s, fresh);
    struct rt_job_figures f = {0};
    const int32_t *pids = j->tree.pids;
    size_t npids = j->tree.npids;
    uint64_t now = rt_mono_ns();
    double elapsed = (double)(now - j->last_sample_mono_ns) / 1e9;
    if (elapsed <= 0)
        elapsed = 1e-3;
    j->last_sample_mono_ns = now;
    if (j->cgroup) {
        memset(r, 0, sizeof(*r));
        r->root_exit_status = -1;
        root_state(s, j, r);
        rt_cgroup_job_figures(s, j, elapsed, &f);
        /* Its processes only where their GPU use is wanted. */
        if (!s->sample.has_gpu_backend || rt_cgroup_job_pids(j) < 0)
            j->cg_npids = 0;
        pids = (const int32_t *)j->cg_pids;
        npids = j->cg_npids;
        r->nprocs = rt_cg_has(&j->cg_last, RT_CGF_PIDS) ? (uint32_t)j->cg_last.pids_current : (uint32_t)npids;
    } else {
        rt_ptree_scan(&j->tree, &s->cache, r);
        tree_figures(r, &f);
        if (j->cg_open)
            rt_cgroup_job_figures(s, j, elapsed, &f); /* the OOM kills of its memory-limited cgroup */
        pids = j->tree.pids;
        npids = j->tree.npids;
    }
    const struct rt_sample *sm = &s->sample;
    double ncpu = sm->cpu.n_cores ? (double)sm->cpu.n_cores : (double)sysconf(_SC_NPROCESSORS_ONLN);
    /* No two samples of a job share a timestamp: a final sample right after
     * a tick's (or a wall clock stepped back) moves to the next ms. */
    uint64_t timestamp_ms = fresh ? rt_real_ns() / 1000000 : s->host_timestamp_ms;
    if (timestamp_ms <= j->last_timestamp_ms)
        timestamp_ms = j->last_timestamp_ms + 1;
    j->last_timestamp_ms = timestamp_ms;
    if (!j->gpu_state) {
        j->gpu_state = rt_gpu_job_new();
        j->gpu_energy_seen = 0;
    }
    struct rt_process_gpu g;
    rt_gpu_job_usage(s->gpu, j->gpu_state, pids, npids, elapsed, &g);
    struct rt_gpu_job_summary gs;
    rt_gpu_job_summary(j->gpu_state, &gs);
    /* Its GPUs idle but held or unused, as the last tick judged them. */
    struct rt_gpuuse_snap *idle = rt_gpuuse_snapshot(s->gpuuse);
    finish_figures(j, elapsed, ncpu, &g, &gs, rt_gpuuse_job_idle_count(idle, j->id), &f);
    rt_gpuuse_snap_unref(idle);

    bool kept = j->fig && rt_samples_append(&s->state->samples, j->fig, &f, timestamp_ms);
    struct rt_job_sample js = {.job_id = j->id, .name_json = j->name_json, .pid = j->pid,
                               .timestamp_ms = timestamp_ms, .host_repeated = j->last_host_ms == s->host_timestamp_ms,
                               .f = &f};
    j->last_host_ms = s->host_timestamp_ms;
    /* The texts are for those who follow it live (a job stream that misses
     * one reads it from the store) and for its upload. */
    bool live = fresh || !atomic_load(&s->quiet_ticks);
    bool upload = j->wants_upload && s->o.upload;
    struct rt_rcstr *line = live && s->host_text_ok ? sample_text(s, &js, false) : NULL;
    struct rt_rcstr *csv = live || upload ? sample_text(s, &js, true) : NULL;

    rt_jobs_lock(s->jobs);
    uint64_t index = j->summary.samples;
    rt_job_summary_add(&j->summary, &f);
    if (!kept)
        j->summary.samples--; /* its usage counts; the count is of stored samples, which the index follows */
    bool new_gpus = gs.present && rt_job_summary_note_gpus(&j->summary, gs.gpu_uuids, gs.n_gpus);
    j->current = (struct rt_job_current){
        .present = true,
        .sampled_at = (double)rt_real_ns() / 1e9,
        .span_secs = elapsed,
        .processes = (uint32_t)r->nprocs,
        .f = f,
    };
    rt_jobs_unlock(s->jobs);
    if (new_gpus)
        rt_sampler_save_record(s, j, false); /* a restart must know every GPU used */

    if (upload)
        rt_upload_job_rows(s->o.upload, j->id, csv->data, csv->len);

    if (kept && line) {
        struct rt_sevt *e = rt_sevt_new(RT_SEVT_JOB_SAMPLE);
        e->job_id = j->id;
        e->index = index;
        e->json = line;
        e->csv = csv;
        rt_sampler_publish(s, e, !fresh); /* a final sample at once; a tick's in one wake-up */
    } else {
        rt_rcstr_unref(line);
        rt_rcstr_unref(csv);
    }
    return kept;
}
