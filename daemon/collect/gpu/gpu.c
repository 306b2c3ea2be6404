/* GPU collector lifecycle: options, the discovery thread that starts one
 * poller per device (gpu_poller.c), bounded shutdown, shared-state refcount. */
#include "collect/gpu/gpu_internal.h"

#include "system/log.h"
#include "rt/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_RETRY_NS (10 * RT_NSEC_PER_SEC)
#define FREE_JOIN_NS (2 * RT_NSEC_PER_SEC)

static uint64_t secs_to_ns(double s) { return (uint64_t)(s * 1e9); }

void gpu_shared_unref(struct gpu_shared *sh)
{
    pthread_mutex_lock(&sh->mu);
    bool last = --sh->refs == 0;
    pthread_mutex_unlock(&sh->mu);
    if (!last)
        return;
    for (size_t i = 0; i < sh->n_slots; i++) {
        struct gpu_slot *s = &sh->slots[i];
        if (s->dev)
            s->ops->destroy(s->dev);
        free(s->data.procs);
    }
    if (sh->nvml)
        gpu_nvml_close(sh->nvml); /* after the devices: they hold NVML handles */
    if (sh->sys_fd >= 0)
        close(sh->sys_fd);
    if (sh->proc_fd >= 0)
        close(sh->proc_fd);
    free(sh->nvml_path);
    free(sh->slots);
    pthread_cond_destroy(&sh->wake);
    pthread_cond_destroy(&sh->published);
    pthread_mutex_destroy(&sh->mu);
    free(sh);
}

struct gpu_slot *gpu_shared_add_slot(struct gpu_shared *sh, enum gpu_vendor v, unsigned index,
                                     const struct gpu_dev_ops *ops, void *dev)
{
    pthread_mutex_lock(&sh->mu);
    sh->slots = rt_xrealloc(sh->slots, (sh->n_slots + 1) * sizeof(*sh->slots));
    struct gpu_slot *s = &sh->slots[sh->n_slots++];
    memset(s, 0, sizeof(*s));
    s->vendor = v;
    s->index = index;
    s->ops = ops;
    s->dev = dev;
    snprintf(s->label, sizeof(s->label), "%s GPU %u", v == GPU_NVIDIA ? "NVIDIA" : "AMD", index);
    pthread_mutex_unlock(&sh->mu);
    return s;
}

/* Copy a snapshot, keeping dst's process buffer (grown as needed). */
void gpu_data_copy(struct rt_gpu_dev *dst, const struct rt_gpu_dev *src)
{
    struct rt_gpu_proc *buf = dst->procs;
    size_t cap = dst->procs_cap;
    if (cap < src->n_procs) {
        cap = src->n_procs;
        buf = rt_xrealloc(buf, cap * sizeof(*buf));
    }
    *dst = *src;
    dst->procs = buf;
    dst->procs_cap = cap;
    if (src->n_procs)
        memcpy(buf, src->procs, src->n_procs * sizeof(*buf));
}

static void start_workers(struct gpu_shared *sh)
{
    for (size_t i = 0; i < sh->n_slots; i++)
        gpu_start_worker(sh, &sh->slots[i]);
}

static void *discover_main(void *arg)
{
    struct gpu_shared *sh = arg;
    struct nvml_lib *lib = sh->disable_nvml ? NULL : gpu_nvml_open(sh->nvml_path);
    if (lib) {
        sh->nvml = lib; /* read by others only after `discovered` is set under mu */
        gpu_nvml_discover(lib, sh);
    }
    if (!sh->disable_amd)
        gpu_amd_discover(sh->sys_fd, sh->proc_fd, sh);
    if (lib && !sh->stop)
        gpu_nvml_start_events(lib, sh);
    pthread_mutex_lock(&sh->mu);
    sh->has_backend = lib != NULL || sh->n_slots > 0;
    if (!sh->stop)
        start_workers(sh);
    sh->discovered = true;
    pthread_cond_broadcast(&sh->published);
    pthread_mutex_unlock(&sh->mu);
    gpu_shared_unref(sh);
    return NULL;
}

static int dup_fd(int fd, const char *fallback)
{
    if (fd >= 0)
        return fcntl(fd, F_DUPFD_CLOEXEC, 0);
    return open(fallback, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* Discovery done and every device polled once (or lost, or without thread). */
static bool first_snapshot_ready(const struct gpu_shared *sh)
{
    if (!sh->discovered)
        return false;
    for (size_t i = 0; i < sh->n_slots; i++) {
        const struct gpu_slot *s = &sh->slots[i];
        if (s->has_thread && !s->valid && !s->lost)
            return false;
    }
    return true;
}

struct rt_gpu_collector *rt_gpu_collector_new(const struct rt_roots *r, const struct rt_gpu_options *o)
{
    static const struct rt_gpu_options defaults = {0};
    if (!o)
        o = &defaults;
    struct gpu_shared *sh = rt_xcalloc(1, sizeof(*sh));
    pthread_mutex_init(&sh->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&sh->wake, &ca);
    pthread_cond_init(&sh->published, &ca);
    pthread_condattr_destroy(&ca);
    sh->interval_ns = o->poll_interval_secs > 0 ? secs_to_ns(o->poll_interval_secs) : RT_NSEC_PER_SEC;
    sh->util_samples = o->util_samples ? o->util_samples : 4;
    sh->hang_ns = o->hang_bound_secs > 0 ? secs_to_ns(o->hang_bound_secs) : 2 * sh->interval_ns;
    if (o->hang_bound_secs <= 0 && sh->hang_ns < RT_NSEC_PER_SEC)
        sh->hang_ns = RT_NSEC_PER_SEC;
    sh->retry_ns = o->retry_secs > 0 ? secs_to_ns(o->retry_secs) : DEFAULT_RETRY_NS;
    sh->nvml_path = rt_xstrdup(o->nvml_library ? o->nvml_library : "libnvidia-ml.so.1");
    sh->disable_nvml = o->disable_nvml;
    sh->disable_amd = o->disable_amd;
    sh->sys_fd = dup_fd(r ? r->sys_fd : -1, "/sys");
    sh->proc_fd = dup_fd(r ? r->proc_fd : -1, "/proc");
    sh->refs = 2; /* the collector and the discovery thread */

    struct rt_gpu_collector *c = rt_xcalloc(1, sizeof(*c));
    c->sh = sh;
    c->proc_fd = dup_fd(r ? r->proc_fd : -1, "/proc");

    pthread_t t;
    int e = pthread_create(&t, NULL, discover_main, sh);
    if (e) {
        rt_warn("GPUs: cannot start the discovery thread (%s); no GPU data", strerror(e));
        sh->refs--;
        sh->discovered = true;
        return c;
    }
    c->discover_thread = t;
    c->has_discover_thread = true;

    double wait = o->start_wait_secs == 0 ? (double)sh->hang_ns / 1e9 : o->start_wait_secs;
    if (wait > 0) {
        uint64_t deadline = rt_mono_ns() + secs_to_ns(wait);
        struct timespec ts = gpu_mono_ts(deadline);
        pthread_mutex_lock(&sh->mu);
        while (!first_snapshot_ready(sh))
            if (pthread_cond_timedwait(&sh->published, &sh->mu, &ts) == ETIMEDOUT)
                break;
        pthread_mutex_unlock(&sh->mu);
    }
    return c;
}

static void join_bounded(pthread_t t, const struct timespec *deadline)
{
    if (pthread_timedjoin_np(t, NULL, deadline) != 0)
        pthread_detach(t); /* stuck in a driver call: it frees its share when it returns */
}

void rt_gpu_collector_free(struct rt_gpu_collector *c)
{
    if (!c)
        return;
    struct gpu_shared *sh = c->sh;
    pthread_mutex_lock(&sh->mu);
    sh->stop = true;
    pthread_cond_broadcast(&sh->wake);
    pthread_mutex_unlock(&sh->mu);

    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += FREE_JOIN_NS / RT_NSEC_PER_SEC;
    if (c->has_discover_thread)
        join_bounded(c->discover_thread, &deadline);
    pthread_mutex_lock(&sh->mu);
    size_t n = sh->discovered ? sh->n_slots : 0;
    pthread_t *threads = rt_xcalloc(n, sizeof(*threads));
    size_t nt = 0;
    for (size_t i = 0; i < n; i++)
        if (sh->slots[i].has_thread)
            threads[nt++] = sh->slots[i].thread;
    bool events = sh->discovered && sh->has_events_thread;
    pthread_t events_thread = sh->events_thread;
    pthread_mutex_unlock(&sh->mu);
    if (events)
        join_bounded(events_thread, &deadline);
    for (size_t i = 0; i < nt; i++)
        join_bounded(threads[i], &deadline);
    free(threads);

    for (size_t i = 0; i < c->n_view; i++)
        free(c->view[i].data.procs);
    free(c->view);
    free(c->pids);
    free(c->acc);
    free(c->fdinfo_buf);
    if (c->proc_fd >= 0)
        close(c->proc_fd);
    gpu_shared_unref(sh);
    free(c);
}

bool rt_gpu_collector_wait_polls(struct rt_gpu_collector *c, unsigned n, double timeout_secs)
{
    struct gpu_shared *sh = c->sh;
    uint64_t deadline = rt_mono_ns() + secs_to_ns(timeout_secs);
    struct timespec ts = gpu_mono_ts(deadline);
    pthread_mutex_lock(&sh->mu);
    while (!sh->discovered)
        if (pthread_cond_timedwait(&sh->published, &sh->mu, &ts) == ETIMEDOUT)
            break;
    size_t ns = sh->discovered ? sh->n_slots : 0;
    uint64_t *target = rt_xcalloc(ns, sizeof(*target));
    for (size_t i = 0; i < ns; i++)
        target[i] = sh->slots[i].polls + n;
    bool ok = sh->discovered;
    while (ok) {
        bool done = true;
        for (size_t i = 0; i < ns; i++) {
            const struct gpu_slot *s = &sh->slots[i];
            if (s->has_thread && !s->lost && s->polls < target[i])
                done = false;
        }
        if (done)
            break;
        if (pthread_cond_timedwait(&sh->published, &sh->mu, &ts) == ETIMEDOUT)
            ok = false;
    }
    pthread_mutex_unlock(&sh->mu);
    free(target);
    return ok;
}
