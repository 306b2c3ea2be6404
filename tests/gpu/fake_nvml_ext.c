/* The fake NVML's newer entry points: MIG instances, XID events, ECC
 * counters, retired and remapped pages, clocks event reasons and GPM
 * samples, each from the configuration (fake_nvml.c describes the keys). */
#include "fake_nvml.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- MIG ---- */

int nvmlDeviceGetMigMode(struct device *d, unsigned *current, unsigned *pending)
{
    pthread_mutex_lock(&mu);
    ctrs[C_MIG_MODE]++;
    int r = fake_enter(d, FN_MIG);
    if (r == OK && (d->is_mig || !d->mig_capable))
        r = NOT_SUPPORTED;
    if (r == OK)
        *current = *pending = (unsigned)d->mig_mode;
    pthread_mutex_unlock(&mu);
    return r;
}

int nvmlDeviceGetMaxMigDeviceCount(struct device *d, unsigned *count)
{
    pthread_mutex_lock(&mu);
    int r = fake_enter(d, FN_MIG);
    if (r == OK && (d->is_mig || !d->mig_capable))
        r = NOT_SUPPORTED;
    if (r == OK)
        *count = MAX_MIG;
    pthread_mutex_unlock(&mu);
    return r;
}

/* Slots without an instance answer NOT_FOUND, as NVML does. */
int nvmlDeviceGetMigDeviceHandleByIndex(struct device *d, unsigned index, struct device **mig)
{
    pthread_mutex_lock(&mu);
    ctrs[C_MIG_HANDLE]++;
    int r = fake_enter(d, FN_MIG);
    if (r == OK && (d->is_mig || !d->mig_mode))
        r = INVALID_ARGUMENT;
    else if (r == OK && index >= MAX_MIG)
        r = INVALID_ARGUMENT;
    else if (r == OK && index >= d->n_mig)
        r = NOT_FOUND;
    if (r == OK)
        *mig = &migs[fake_index(d)][index];
    pthread_mutex_unlock(&mu);
    return r;
}

static int instance_id(struct device *d, unsigned *out, int compute)
{
    pthread_mutex_lock(&mu);
    int r = fake_enter(d, FN_MIG);
    if (r == OK && !d->is_mig)
        r = INVALID_ARGUMENT;
    if (r == OK)
        *out = compute ? d->ci : d->gi;
    pthread_mutex_unlock(&mu);
    return r;
}
int nvmlDeviceGetGpuInstanceId(struct device *d, unsigned *id) { return instance_id(d, id, 0); }
int nvmlDeviceGetComputeInstanceId(struct device *d, unsigned *id) { return instance_id(d, id, 1); }

/* ---- ECC, pages, clocks event reasons ---- */

int nvmlDeviceGetTotalEccErrors(struct device *d, int type, int counter, unsigned long long *count)
{
    pthread_mutex_lock(&mu);
    ctrs[C_ECC]++;
    int r = fake_enter(d, FN_ECC);
    if (r == OK && (type < 0 || type > 1 || counter < 0 || counter > 1))
        r = INVALID_ARGUMENT;
    if (r == OK)
        *count = type == 0 ? d->ecc_corrected : d->ecc_uncorrected;
    pthread_mutex_unlock(&mu);
    return r;
}

/* cause 0: multiple single-bit errors, 1: a double-bit error. */
int nvmlDeviceGetRetiredPages(struct device *d, int cause, unsigned *count, unsigned long long *addresses)
{
    pthread_mutex_lock(&mu);
    int r = fake_enter(d, FN_PAGES);
    if (r == OK && (cause < 0 || cause > 1))
        r = INVALID_ARGUMENT;
    if (r == OK) {
        unsigned n = cause == 0 ? d->retired_sbe : d->retired_dbe;
        if (*count < n)
            r = INSUFFICIENT_SIZE;
        else
            for (unsigned i = 0; i < n; i++)
                addresses[i] = 0x1000ULL * (i + 1);
        *count = n;
    }
    pthread_mutex_unlock(&mu);
    return r;
}

int nvmlDeviceGetRemappedRows(struct device *d, unsigned *corr, unsigned *unc, unsigned *pending, unsigned *failure)
{
    pthread_mutex_lock(&mu);
    int r = fake_enter(d, FN_REMAP);
    if (r == OK) {
        *corr = d->remapped_corr;
        *unc = d->remapped_unc;
        *pending = d->remap_pending;
        *failure = d->remap_failure;
    }
    pthread_mutex_unlock(&mu);
    return r;
}

static int reasons(struct device *d, unsigned long long *out)
{
    pthread_mutex_lock(&mu);
    int r = fake_enter(d, FN_REASONS);
    if (r == OK)
        *out = d->reasons;
    pthread_mutex_unlock(&mu);
    return r;
}
int nvmlDeviceGetCurrentClocksThrottleReasons(struct device *d, unsigned long long *out) { return reasons(d, out); }
#ifndef FAKE_NVML_OLD
int nvmlDeviceGetCurrentClocksEventReasons(struct device *d, unsigned long long *out) { return reasons(d, out); }
#endif

/* ---- events ---- */

#define XID_EVENT 0x8ULL

struct event_set {
    unsigned long long types[MAX_DEV]; /* registered per device */
};

struct event_data {
    struct device *device;
    unsigned long long type, data;
    unsigned gi, ci;
};

int nvmlEventSetCreate(struct event_set **set)
{
    *set = calloc(1, sizeof(**set));
    return *set ? OK : 999;
}

int nvmlEventSetFree(struct event_set *set)
{
    free(set);
    return OK;
}

int nvmlDeviceGetSupportedEventTypes(struct device *d, unsigned long long *types)
{
    pthread_mutex_lock(&mu);
    int r = fake_enter(d, FN_EVENTS);
    if (r == OK)
        *types = XID_EVENT | 0x3ULL;
    pthread_mutex_unlock(&mu);
    return r;
}

int nvmlDeviceRegisterEvents(struct device *d, unsigned long long types, struct event_set *set)
{
    pthread_mutex_lock(&mu);
    int r = fake_enter(d, FN_EVENTS);
    if (r == OK && d->is_mig)
        r = NOT_SUPPORTED;
    if (r == OK)
        set->types[fake_index(d)] |= types;
    pthread_mutex_unlock(&mu);
    return r;
}

/* The next XID injected through the configuration and not yet sent, or
 * TIMEOUT after timeout_ms. */
static int event_wait(struct event_set *set, struct event_data *out, unsigned timeout_ms)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&mu);
    ctrs[C_EVENT_WAIT]++;
    int r = TIMEOUT;
    for (;;) {
        fake_maybe_reload();
        for (unsigned i = 0; i < n_devs && r == TIMEOUT; i++) {
            if (!(set->types[i] & XID_EVENT) || rts[i].xids_sent >= devs[i].n_xids)
                continue;
            *out = (struct event_data){.device = &devs[i], .type = XID_EVENT,
                                       .data = devs[i].xids[rts[i].xids_sent++], .gi = NO_ID, .ci = NO_ID};
            r = OK;
        }
        if (r == OK)
            break;
        /* The configuration is polled: a test rewrites the file, nobody signals. */
        struct timespec step;
        clock_gettime(CLOCK_REALTIME, &step);
        step.tv_nsec += 20000000L;
        if (step.tv_nsec >= 1000000000L) {
            step.tv_sec++;
            step.tv_nsec -= 1000000000L;
        }
        if (step.tv_sec > deadline.tv_sec || (step.tv_sec == deadline.tv_sec && step.tv_nsec > deadline.tv_nsec))
            step = deadline;
        if (pthread_cond_timedwait(&changed, &mu, &step) == ETIMEDOUT && step.tv_sec == deadline.tv_sec &&
            step.tv_nsec == deadline.tv_nsec)
            break;
    }
    pthread_mutex_unlock(&mu);
    return r;
}

/* The first version's record has no instance ids. */
struct event_data_v1 {
    struct device *device;
    unsigned long long type, data;
};

int nvmlEventSetWait(struct event_set *set, struct event_data_v1 *out, unsigned timeout_ms)
{
    struct event_data e;
    int r = event_wait(set, &e, timeout_ms);
    if (r == OK)
        *out = (struct event_data_v1){e.device, e.type, e.data};
    return r;
}
#ifndef FAKE_NVML_OLD
int nvmlEventSetWait_v2(struct event_set *set, struct event_data *out, unsigned timeout_ms)
{
    return event_wait(set, out, timeout_ms);
}
#endif

/* ---- GPM ---- */

struct gpm_support { unsigned version, supported; };
struct gpm_sample {
    const struct device *device;
    double sm, occupancy, tensor, dram;
};
struct gpm_metric {
    unsigned id;
    int ret;
    double value;
    const char *short_name, *long_name, *unit;
};
struct gpm_metrics_get {
    unsigned version, n;
    struct gpm_sample *sample1, *sample2;
    struct gpm_metric metrics[98];
};

#ifndef FAKE_NVML_OLD
int nvmlGpmQueryDeviceSupport(struct device *d, struct gpm_support *s)
{
    pthread_mutex_lock(&mu);
    int r = s->version != 1 ? INVALID_ARGUMENT : fake_enter(d, FN_GPM);
    if (r == OK)
        s->supported = (unsigned)d->gpm;
    pthread_mutex_unlock(&mu);
    return r;
}

int nvmlGpmSampleAlloc(struct gpm_sample **s)
{
    *s = calloc(1, sizeof(**s));
    return *s ? OK : 999;
}

int nvmlGpmSampleFree(struct gpm_sample *s)
{
    free(s);
    return OK;
}

static int take_sample(struct device *d, struct gpm_sample *s)
{
    int r = fake_enter(d, FN_GPM);
    if (r == OK && !devs[fake_index(d)].gpm)
        r = NOT_SUPPORTED;
    if (r == OK)
        *s = (struct gpm_sample){d, d->gpm_sm, d->gpm_occupancy, d->gpm_tensor, d->gpm_dram};
    return r;
}

int nvmlGpmSampleGet(struct device *d, struct gpm_sample *s)
{
    pthread_mutex_lock(&mu);
    int r = d->is_mig ? INVALID_ARGUMENT : take_sample(d, s);
    pthread_mutex_unlock(&mu);
    return r;
}

int nvmlGpmMigSampleGet(struct device *d, unsigned gi, struct gpm_sample *s)
{
    pthread_mutex_lock(&mu);
    int r = d->is_mig || !d->mig_mode ? INVALID_ARGUMENT : NOT_FOUND;
    for (unsigned k = 0; r == NOT_FOUND && k < d->n_mig; k++)
        if (migs[fake_index(d)][k].gi == gi)
            r = take_sample(&migs[fake_index(d)][k], s);
    pthread_mutex_unlock(&mu);
    return r;
}

/* The figures of the second sample (the fake's counters are rates). */
int nvmlGpmMetricsGet(struct gpm_metrics_get *g)
{
    pthread_mutex_lock(&mu);
    ctrs[C_GPM_METRICS]++;
    int r = OK;
    if (g->version != 1 || !g->sample1 || !g->sample2 || g->sample1->device != g->sample2->device || g->n > 98)
        r = INVALID_ARGUMENT;
    for (unsigned i = 0; r == OK && i < g->n; i++) {
        struct gpm_metric *m = &g->metrics[i];
        const struct gpm_sample *s = g->sample2;
        m->ret = OK;
        switch (m->id) {
        case 2: m->value = s->sm; break;         /* NVML_GPM_METRIC_SM_UTIL */
        case 3: m->value = s->occupancy; break;  /* NVML_GPM_METRIC_SM_OCCUPANCY */
        case 5: m->value = s->tensor; break;     /* NVML_GPM_METRIC_ANY_TENSOR_UTIL */
        case 10: m->value = s->dram; break;      /* NVML_GPM_METRIC_DRAM_BW_UTIL */
        default: m->ret = NOT_SUPPORTED;
        }
    }
    pthread_mutex_unlock(&mu);
    return r;
}
#endif
