/* NVIDIA: what tells a slow GPU from slow code and a shared card from an
 * idle one: MIG instances (their memory and the processes in them), ECC
 * error totals, retired pages and remapped rows, the clocks event reasons
 * integrated into time held down per reason, and GPM metrics (SM activity,
 * occupancy, tensor activity, DRAM bandwidth) from two samples a poll apart.
 * Each field degrades on its own (gpu_nvml_check); what a device does not
 * give stays unset, never 0. */
#include "collect/gpu/gpu_nvml.h"

#include "rt/util.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define SYM(field, ...) (*(void **)&lib->field = gpu_nvml_sym(so, (const char *const[]){__VA_ARGS__, NULL}))

static void *gpu_nvml_sym(void *so, const char *const *names)
{
    for (int i = 0; names[i]; i++) {
        void *p = dlsym(so, names[i]);
        if (p)
            return p;
    }
    return NULL;
}

void gpu_nvml_resolve_health(struct nvml_lib *lib, void *so)
{
    SYM(mig_mode, "nvmlDeviceGetMigMode");
    SYM(mig_count, "nvmlDeviceGetMaxMigDeviceCount");
    SYM(mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex");
    SYM(gi_id, "nvmlDeviceGetGpuInstanceId");
    SYM(ci_id, "nvmlDeviceGetComputeInstanceId");
    SYM(ecc, "nvmlDeviceGetTotalEccErrors");
    SYM(retired, "nvmlDeviceGetRetiredPages");
    SYM(remapped, "nvmlDeviceGetRemappedRows");
    /* Renamed in driver 535; the old name stays exported as an alias. */
    SYM(reasons, "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons");
    SYM(event_set_create, "nvmlEventSetCreate");
    SYM(event_set_free, "nvmlEventSetFree");
    SYM(register_events, "nvmlDeviceRegisterEvents");
    /* Only _v2 fills the MIG ids; the plain name writes a shorter record,
     * which the buffer of the longer one holds. */
    SYM(event_wait, "nvmlEventSetWait_v2", "nvmlEventSetWait");
    SYM(gpm_support, "nvmlGpmQueryDeviceSupport");
    SYM(gpm_alloc, "nvmlGpmSampleAlloc");
    SYM(gpm_free, "nvmlGpmSampleFree");
    SYM(gpm_get, "nvmlGpmSampleGet");
    SYM(gpm_mig_get, "nvmlGpmMigSampleGet");
    SYM(gpm_metrics, "nvmlGpmMetricsGet");
}

/* ---- MIG ---- */

static void read_mig(struct nvml_gpu *g, struct rt_gpu_dev *d, bool *lost)
{
    struct nvml_lib *lib = g->lib;
    unsigned cur = 0, pending = 0, max = 0;
    if (!gpu_nvml_wanted(g, F_MIG, lib->mig_mode) || !lib->mig_count || !lib->mig_handle)
        return;
    if (!g->mig_on && !gpu_nvml_spaced_due(&g->mig_q))
        return; /* off, and asked lately */
    nvml_ret got = lib->mig_mode(g->h, &cur, &pending);
    if (!g->mig_on)
        gpu_nvml_spaced_done(g, &g->mig_q);
    if (!gpu_nvml_check(g, F_MIG, got, lost))
        return;
    if (cur == 1 && !g->mig_on) /* GPM asked of the parent before MIG was seen may have failed */
        g->unsupported &= ~(1u << F_GPM);
    g->mig_on = cur == 1;
    if (!g->mig_on)
        return;
    d->mig_enabled = true;
    if (!gpu_nvml_check(g, F_MIG, lib->mig_count(g->h, &max), lost))
        return;
    for (unsigned i = 0; i < max && d->n_mig < RT_GPU_MAX_MIG && !*lost; i++) {
        nvml_dev_t m;
        nvml_ret r = lib->mig_handle(g->h, i, &m);
        if (r == NVML_ERROR_NOT_FOUND || r == NVML_ERROR_INVALID_ARGUMENT)
            continue; /* an empty slot */
        if (!gpu_nvml_check(g, F_MIG, r, lost))
            return;
        struct rt_gpu_mig *mi = &d->mig[d->n_mig];
        memset(mi, 0, sizeof(*mi));
        unsigned gi = RT_GPU_NO_ID, ci = RT_GPU_NO_ID;
        if (!lib->gi_id || lib->gi_id(m, &gi) != NVML_SUCCESS)
            continue; /* processes are matched by it: without it the instance says nothing */
        if (lib->ci_id)
            lib->ci_id(m, &ci);
        if (!lib->uuid || lib->uuid(m, mi->uuid, sizeof(mi->uuid)) != NVML_SUCCESS || !mi->uuid[0])
            snprintf(mi->uuid, sizeof(mi->uuid), "%.80s/gi%u", g->uuid, gi);
        struct nvml_memory mem;
        if (lib->memory && lib->memory(m, &mem) == NVML_SUCCESS) {
            mi->has_memory = true;
            mi->vram_total = mem.total;
            mi->vram_used = mem.used;
        }
        mi->gi = gi;
        mi->ci = ci;
        d->n_mig++;
    }
}

/* ---- health ---- */

static void read_ecc(struct nvml_gpu *g, struct rt_gpu_health *h, bool *lost)
{
    unsigned long long corr, unc;
    if (!gpu_nvml_wanted(g, F_ECC, g->lib->ecc) ||
        !gpu_nvml_check(g, F_ECC, g->lib->ecc(g->h, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &corr),
                        lost) ||
        !gpu_nvml_check(g, F_ECC, g->lib->ecc(g->h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &unc),
                        lost))
        return;
    h->has_ecc = true;
    h->ecc_corrected = corr;
    h->ecc_uncorrected = unc;
}

/* Pages retired for one cause: the count, through a buffer grown to it. */
static bool retired_count(struct nvml_gpu *g, int cause, uint32_t *out, bool *lost)
{
    for (int round = 0; round < 3; round++) {
        unsigned n = (unsigned)g->pages_cap;
        nvml_ret r = g->lib->retired(g->h, cause, &n, g->pages);
        if (r == NVML_ERROR_INSUFFICIENT_SIZE && n > g->pages_cap) {
            g->pages = rt_xrealloc(g->pages, ((size_t)n + 8) * sizeof(*g->pages));
            g->pages_cap = (size_t)n + 8;
            continue;
        }
        if (!gpu_nvml_check(g, F_RETIRED, r, lost))
            return false;
        *out = n;
        return true;
    }
    return false;
}

static void read_pages(struct nvml_gpu *g, struct rt_gpu_health *h, bool *lost)
{
    struct nvml_lib *lib = g->lib;
    if (gpu_nvml_wanted(g, F_RETIRED, lib->retired) &&
        retired_count(g, NVML_PAGE_RETIREMENT_CAUSE_SBE, &h->retired_sbe, lost) &&
        retired_count(g, NVML_PAGE_RETIREMENT_CAUSE_DBE, &h->retired_dbe, lost))
        h->has_retired = true;
    unsigned corr, unc, pending, failure;
    if (!*lost && gpu_nvml_wanted(g, F_REMAPPED, lib->remapped) &&
        gpu_nvml_check(g, F_REMAPPED, lib->remapped(g->h, &corr, &unc, &pending, &failure), lost)) {
        h->has_remapped = true;
        h->remapped_corr = corr;
        h->remapped_unc = unc;
        h->remap_pending = pending != 0;
        h->remap_failure = failure != 0;
    }
}

/* The reasons of the previous poll held for the time since: per reason. */
static void read_reasons(struct nvml_gpu *g, struct rt_gpu_health *h, bool *lost)
{
    unsigned long long bits;
    uint64_t now = rt_mono_ns();
    if (!gpu_nvml_wanted(g, F_REASONS, g->lib->reasons) ||
        !gpu_nvml_check(g, F_REASONS, g->lib->reasons(g->h, &bits), lost)) {
        g->reasons_at_ns = 0;
        return;
    }
    if (g->reasons_at_ns) {
        double secs = (double)(now - g->reasons_at_ns) / 1e9;
        if (g->reasons & (NVML_REASON_SW_POWER_CAP | NVML_REASON_HW_POWER_BRAKE))
            g->throttle_secs[RT_GPU_THROTTLE_POWER] += secs;
        if (g->reasons & (NVML_REASON_SW_THERMAL | NVML_REASON_HW_THERMAL))
            g->throttle_secs[RT_GPU_THROTTLE_THERMAL] += secs;
        if (g->reasons & NVML_REASON_HW_SLOWDOWN)
            g->throttle_secs[RT_GPU_THROTTLE_HW_SLOWDOWN] += secs;
    }
    g->reasons = bits;
    g->reasons_at_ns = now;
    h->has_reasons = true;
    h->reasons = bits;
    memcpy(h->throttle_secs, g->throttle_secs, sizeof(h->throttle_secs));
}

/* ---- GPM ---- */

static void pair_free(struct nvml_lib *lib, struct nvml_gpm_pair *p)
{
    if (p->prev)
        lib->gpm_free(p->prev);
    if (p->cur)
        lib->gpm_free(p->cur);
    memset(p, 0, sizeof(*p));
}

static bool pair_alloc(struct nvml_lib *lib, struct nvml_gpm_pair *p)
{
    if (p->prev && p->cur)
        return true;
    if ((!p->prev && lib->gpm_alloc(&p->prev) != NVML_SUCCESS) ||
        (!p->cur && lib->gpm_alloc(&p->cur) != NVML_SUCCESS)) {
        pair_free(lib, p);
        return false;
    }
    return true;
}

/* Metrics between the previous sample and the one just taken. */
static bool gpm_metrics(struct nvml_gpu *g, struct nvml_gpm_pair *p, struct rt_gpu_gpm *out, bool *lost)
{
    static const unsigned ids[] = {NVML_GPM_METRIC_SM_UTIL, NVML_GPM_METRIC_SM_OCCUPANCY,
                                   NVML_GPM_METRIC_ANY_TENSOR_UTIL, NVML_GPM_METRIC_DRAM_BW_UTIL};
    struct nvml_gpm_metrics_get m;
    memset(&m, 0, sizeof(m));
    m.version = NVML_GPM_METRICS_GET_VERSION;
    m.num_metrics = RT_ARRAY_SIZE(ids);
    m.sample1 = p->prev;
    m.sample2 = p->cur;
    for (size_t i = 0; i < RT_ARRAY_SIZE(ids); i++)
        m.metrics[i].metric_id = ids[i];
    if (!gpu_nvml_check(g, F_GPM, g->lib->gpm_metrics(&m), lost))
        return false;
    double *dst[] = {&out->sm_active, &out->sm_occupancy, &out->tensor_active, &out->dram_bw};
    for (size_t i = 0; i < RT_ARRAY_SIZE(ids); i++)
        if (m.metrics[i].ret != NVML_SUCCESS)
            return false; /* all four or none: they are read together */
    for (size_t i = 0; i < RT_ARRAY_SIZE(ids); i++)
        *dst[i] = m.metrics[i].value;
    out->present = true;
    return true;
}

/* Take a sample into p->cur (device, or MIG instance gi); metrics when a
 * previous one exists; then the pair swaps. */
static void gpm_step(struct nvml_gpu *g, struct nvml_gpm_pair *p, bool mig, uint32_t gi, struct rt_gpu_gpm *out,
                     bool *lost)
{
    struct nvml_lib *lib = g->lib;
    if (!pair_alloc(lib, p))
        return;
    if (mig && p->gi != gi) { /* another instance in this slot */
        p->has_prev = false;
        p->gi = gi;
    }
    nvml_ret r = mig ? lib->gpm_mig_get(g->h, gi, p->cur) : lib->gpm_get(g->h, p->cur);
    if (!gpu_nvml_check(g, F_GPM, r, lost)) {
        p->has_prev = false;
        return;
    }
    if (p->has_prev)
        gpm_metrics(g, p, out, lost);
    nvml_gpm_sample_t t = p->prev;
    p->prev = p->cur;
    p->cur = t;
    p->has_prev = true;
}

static void read_gpm(struct nvml_gpu *g, struct rt_gpu_dev *d, bool *lost)
{
    struct nvml_lib *lib = g->lib;
    if (!gpu_nvml_wanted(g, F_GPM, lib->gpm_support) || !lib->gpm_alloc || !lib->gpm_free || !lib->gpm_get ||
        !lib->gpm_metrics)
        return;
    if (!g->gpm_checked) {
        struct nvml_gpm_support s = {.version = NVML_GPM_SUPPORT_VERSION};
        if (!gpu_nvml_check(g, F_GPM, lib->gpm_support(g->h, &s), lost))
            return;
        g->gpm_checked = true;
        g->gpm_ok = s.is_supported != 0;
    }
    if (!g->gpm_ok)
        return;
    if (!d->mig_enabled) {
        gpm_step(g, &g->gpm, false, 0, &d->gpm, lost);
        return;
    }
    for (size_t i = 0; i < d->n_mig && lib->gpm_mig_get && !*lost; i++)
        gpm_step(g, &g->gpm_mig[i], true, d->mig[i].gi, &d->mig[i].gpm, lost);
}

void gpu_nvml_poll_health(struct nvml_gpu *g, struct rt_gpu_dev *d, bool *lost)
{
    read_mig(g, d, lost);
    if (!*lost)
        read_ecc(g, &d->health, lost);
    if (!*lost)
        read_pages(g, &d->health, lost);
    if (!*lost)
        read_reasons(g, &d->health, lost);
    if (!*lost)
        read_gpm(g, d, lost);
}

void gpu_nvml_free_health(struct nvml_gpu *g)
{
    if (!g->lib->gpm_free)
        return;
    pair_free(g->lib, &g->gpm);
    for (size_t i = 0; i < RT_GPU_MAX_MIG; i++)
        pair_free(g->lib, &g->gpm_mig[i]);
}
