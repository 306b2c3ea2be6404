/* One poller thread per device: utilisation readings several times per
 * interval, a full poll each interval, published into the device's slot.
 * Lost devices are retried; every back-end call is marked busy so that the
 * sampler can see a hang (gpu_sample.c). */
#include "collect/gpu/gpu_internal.h"

#include "system/events.h"
#include "system/log.h"
#include "rt/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sleep on the wake condition until deadline (CLOCK_MONOTONIC ns); false
 * when the collector is stopping. */
static bool wait_until(struct gpu_shared *sh, uint64_t deadline)
{
    struct timespec ts = gpu_mono_ts(deadline);
    pthread_mutex_lock(&sh->mu);
    while (!sh->stop && rt_mono_ns() < deadline)
        if (pthread_cond_timedwait(&sh->wake, &sh->mu, &ts) == ETIMEDOUT)
            break;
    bool run = !sh->stop;
    pthread_mutex_unlock(&sh->mu);
    return run;
}

/* Mark a back-end call as running, so the sampler can see it hang. */
static void call_begin(struct gpu_shared *sh, struct gpu_slot *s)
{
    pthread_mutex_lock(&sh->mu);
    s->busy_since_ns = rt_mono_ns();
    pthread_mutex_unlock(&sh->mu);
}

static void call_end(struct gpu_shared *sh, struct gpu_slot *s)
{
    pthread_mutex_lock(&sh->mu);
    uint64_t took = rt_mono_ns() - s->busy_since_ns;
    bool reported = s->hang_reported;
    s->busy_since_ns = 0;
    s->hang_reported = false;
    char label[sizeof(s->label)];
    memcpy(label, s->label, sizeof(label));
    pthread_mutex_unlock(&sh->mu);
    if (reported)
        rt_notice("%s answers again after %.1f s", label, (double)took / 1e9);
}

void gpu_report(const struct gpu_slot *s, const struct rt_gpu_dev *d, const char *lost_reason)
{
    struct rt_event_gpu e = {.index = s->index,
                             .vendor = s->vendor == GPU_NVIDIA ? "nvidia" : "amd",
                             .name = d->name,
                             .uuid = d->uuid,
                             .memory_total_bytes = d->vram_total};
    if (lost_reason)
        rt_event_gpu_lost(&e, lost_reason);
    else
        rt_event_gpu_appeared(&e);
}

static void publish(struct gpu_shared *sh, struct gpu_slot *s, const struct rt_gpu_dev *d)
{
    pthread_mutex_lock(&sh->mu);
    gpu_data_copy(&s->data, d);
    bool appeared = !s->valid || s->reported_lost;
    if (!s->valid && d->uuid[0])
        snprintf(s->label, sizeof(s->label), "%s GPU %u (%s)", s->vendor == GPU_NVIDIA ? "NVIDIA" : "AMD",
                 s->index, d->uuid);
    s->valid = true;
    s->lost = false;
    s->reported_lost = false;
    s->polls++;
    pthread_cond_broadcast(&sh->published);
    pthread_mutex_unlock(&sh->mu);
    if (appeared)
        gpu_report(s, d, NULL);
}

static void mark_lost(struct gpu_shared *sh, struct gpu_slot *s)
{
    pthread_mutex_lock(&sh->mu);
    s->lost = true;
    bool report = !s->reported_lost; /* not twice for a hang that ended in an error */
    s->reported_lost = true;
    struct rt_gpu_dev last = s->data; /* names only: procs is not read */
    pthread_cond_broadcast(&sh->published);
    pthread_mutex_unlock(&sh->mu);
    if (report) {
        const char *why = s->ops->last_error ? s->ops->last_error(s->dev) : NULL;
        char reason[160];
        snprintf(reason, sizeof(reason), "%s; left out of samples, retried every %g s",
                 why && *why ? why : "no answer", (double)sh->retry_ns / 1e9);
        gpu_report(s, &last, reason);
    }
}

/* Worker state kept across polls. */
struct worker {
    struct gpu_shared *sh;
    struct gpu_slot *slot;
    struct rt_gpu_dev work;
    uint64_t last_poll_ns;
    double est_j; /* power integrated over time, for devices without a counter */
};

/* A full poll; util_pct is the mean of the readings since the last one
 * (has_util: there were some). */
static enum gpu_status full_poll(struct worker *w, bool has_util, double util_pct)
{
    struct rt_gpu_dev *d = &w->work;
    struct rt_gpu_proc *buf = d->procs;
    size_t cap = d->procs_cap;
    memset(d, 0, sizeof(*d));
    d->procs = buf;
    d->procs_cap = cap;
    d->has_util = has_util; /* before the poll: NVIDIA's skips process shares when nothing ran */
    d->util_pct = util_pct;
    call_begin(w->sh, w->slot);
    enum gpu_status st = w->slot->ops->poll(w->slot->dev, d);
    call_end(w->sh, w->slot);
    if (st != GPU_OK)
        return st;
    uint64_t now = rt_mono_ns();
    if (d->has_energy) {
        d->has_energy_est = true;
        d->energy_est_j = d->energy_j;
    } else if (d->has_power) {
        if (w->last_poll_ns)
            w->est_j += d->power_w * (double)(now - w->last_poll_ns) / 1e9;
        d->has_energy_est = true;
        d->energy_est_j = w->est_j;
    }
    w->last_poll_ns = now;
    return GPU_OK;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct gpu_shared *sh = w->sh;
    struct gpu_slot *slot = w->slot;
    const struct gpu_dev_ops *ops = slot->ops;
    unsigned k = sh->util_samples;
    uint64_t step = sh->interval_ns / k;
    double usum = 0;
    unsigned un = 0, taken = 0;
    bool first = true;
    uint64_t next = rt_mono_ns();
    for (;;) {
        pthread_mutex_lock(&sh->mu);
        bool lost = slot->lost, stop = sh->stop;
        pthread_mutex_unlock(&sh->mu);
        if (stop)
            break;
        if (lost) {
            if (!wait_until(sh, rt_mono_ns() + sh->retry_ns))
                break;
            call_begin(sh, slot);
            enum gpu_status st = ops->recover(slot->dev);
            call_end(sh, slot);
            if (st == GPU_OK && full_poll(w, false, 0) == GPU_OK)
                publish(sh, slot, &w->work);
            next = rt_mono_ns();
            continue;
        }
        double u = 0;
        call_begin(sh, slot);
        enum gpu_status st = ops->util(slot->dev, &u);
        call_end(sh, slot);
        if (st == GPU_LOST) {
            mark_lost(sh, slot);
            continue;
        }
        if (st == GPU_OK) {
            usum += u;
            un++;
        }
        if (first || ++taken >= k) {
            st = full_poll(w, un > 0, un ? usum / un : 0);
            if (st == GPU_OK)
                publish(sh, slot, &w->work);
            else
                mark_lost(sh, slot);
            first = false;
            taken = un = 0;
            usum = 0;
        }
        next += step;
        uint64_t now = rt_mono_ns();
        if (next <= now)
            next = now + step; /* late: skip, do not burst */
        if (!wait_until(sh, next))
            break;
    }
    free(w->work.procs);
    free(w);
    gpu_shared_unref(sh);
    return NULL;
}

/* Start the poller of one slot (under sh->mu). */
void gpu_start_worker(struct gpu_shared *sh, struct gpu_slot *s)
{
    struct worker *w = rt_xcalloc(1, sizeof(*w));
    w->sh = sh;
    w->slot = s;
    sh->refs++;
    int e = pthread_create(&s->thread, NULL, worker_main, w);
    if (e) {
        sh->refs--;
        free(w);
        rt_warn("%s: cannot start its poller thread (%s); device not sampled", s->label, strerror(e));
        return;
    }
    char name[16]; /* for top -H and the benchmarks */
    snprintf(name, sizeof(name), "rt-%s%u", s->vendor == GPU_NVIDIA ? "nvidia" : "amd", s->index % 1000);
    pthread_setname_np(s->thread, name);
    s->has_thread = true;
}
