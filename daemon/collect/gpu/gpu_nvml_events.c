/* NVIDIA XID events: one thread waits on an event set with every device
 * registered for nvmlEventTypeXidCriticalError, in waits bounded to
 * EVENT_WAIT_MS so that it sees the collector stop. Each event is counted in
 * its slot and queued for the sampler (rt_gpu_take_xids), which says which
 * jobs it hit. A wait that never returns keeps only this thread. */
#include "collect/gpu/gpu_nvml.h"

#include "system/log.h"
#include "rt/util.h"

#include <stdlib.h>
#include <string.h>

#define EVENT_WAIT_MS 250

struct events {
    struct gpu_shared *sh;
    struct nvml_lib *lib;
    nvml_event_set_t set;
    nvml_dev_t handles[64]; /* per slot, NULL when not registered */
    size_t n;
};

static bool stopping(struct gpu_shared *sh)
{
    pthread_mutex_lock(&sh->mu);
    bool stop = sh->stop;
    pthread_mutex_unlock(&sh->mu);
    return stop;
}

static void record(struct events *ev, const struct nvml_event_data *e)
{
    struct gpu_shared *sh = ev->sh;
    pthread_mutex_lock(&sh->mu);
    for (size_t i = 0; i < ev->n; i++) {
        if (ev->handles[i] != e->device)
            continue;
        struct gpu_slot *s = &sh->slots[i];
        s->xids++;
        s->last_xid = (uint32_t)e->event_data;
        struct rt_gpu_xid *x = &sh->xid_ring[sh->xid_seq % GPU_XID_RING];
        *x = (struct rt_gpu_xid){.index = s->index, .xid = (uint32_t)e->event_data, .gi = e->gpu_instance_id,
                                 .ci = e->compute_instance_id, .at = (double)rt_real_ns() / 1e9};
        rt_strlcpy(x->uuid, s->data.uuid, sizeof(x->uuid));
        sh->xid_seq++;
        break;
    }
    pthread_mutex_unlock(&sh->mu);
}

static void *events_main(void *arg)
{
    struct events *ev = arg;
    struct nvml_lib *lib = ev->lib;
    while (!stopping(ev->sh)) {
        struct nvml_event_data e;
        memset(&e, 0, sizeof(e));
        e.gpu_instance_id = e.compute_instance_id = RT_GPU_NO_ID; /* the plain wait leaves them */
        nvml_ret r = lib->event_wait(ev->set, &e, EVENT_WAIT_MS);
        if (r == NVML_SUCCESS && (e.event_type & NVML_EVENT_TYPE_XID))
            record(ev, &e);
        else if (r != NVML_SUCCESS && r != NVML_ERROR_TIMEOUT) {
            rt_info("NVML: waiting for XID events failed: %s; XID errors are not counted",
                    gpu_nvml_errstr(lib, r));
            break;
        }
    }
    lib->event_set_free(ev->set);
    struct gpu_shared *sh = ev->sh;
    free(ev);
    gpu_shared_unref(sh);
    return NULL;
}

/* Called by discovery with sh->mu not held and before the pollers start. */
void gpu_nvml_start_events(struct nvml_lib *lib, struct gpu_shared *sh)
{
    if (!lib->event_set_create || !lib->event_set_free || !lib->register_events || !lib->event_wait)
        return;
    struct events *ev = rt_xcalloc(1, sizeof(*ev));
    ev->sh = sh;
    ev->lib = lib;
    if (lib->event_set_create(&ev->set) != NVML_SUCCESS) {
        free(ev);
        return;
    }
    size_t registered = 0;
    pthread_mutex_lock(&sh->mu);
    ev->n = sh->n_slots < RT_ARRAY_SIZE(ev->handles) ? sh->n_slots : RT_ARRAY_SIZE(ev->handles);
    for (size_t i = 0; i < ev->n; i++) {
        struct gpu_slot *s = &sh->slots[i];
        nvml_dev_t h;
        /* A handle of our own: the poller's is replaced when its device comes back. */
        if (s->vendor != GPU_NVIDIA || lib->get_handle(s->index, &h) != NVML_SUCCESS ||
            lib->register_events(h, NVML_EVENT_TYPE_XID, ev->set) != NVML_SUCCESS)
            continue;
        ev->handles[i] = h;
        s->has_events = true;
        registered++;
    }
    if (!registered) {
        pthread_mutex_unlock(&sh->mu);
        lib->event_set_free(ev->set);
        free(ev);
        return;
    }
    sh->refs++;
    int e = pthread_create(&sh->events_thread, NULL, events_main, ev);
    if (e) {
        sh->refs--;
        for (size_t i = 0; i < ev->n; i++)
            sh->slots[i].has_events = false;
        pthread_mutex_unlock(&sh->mu);
        rt_warn("NVML: cannot start the XID event thread (%s); XID errors are not counted", strerror(e));
        lib->event_set_free(ev->set);
        free(ev);
        return;
    }
    pthread_setname_np(sh->events_thread, "rt-gpu-events");
    sh->has_events_thread = true;
    pthread_mutex_unlock(&sh->mu);
}
