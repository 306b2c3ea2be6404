#include "facts/cloud.h"

#include "facts/cloud_probe.h"
#include "system/http_global.h"
#include "system/log.h"
#include "rt/util.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rt_cloud_discovery {
    struct rt_cloud_config cfg;
    pthread_t thread;
    bool thread_started;
    atomic_bool cancel;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    CURLM *multi;               /* under mu: where free() sends its wakeup */
    bool done;                  /* under mu */
    struct rt_cloud_info result; /* under mu, once done */
};

static void publish(struct rt_cloud_discovery *d, const struct rt_cloud_info *info)
{
    pthread_mutex_lock(&d->mu);
    if (info)
        d->result = *info;
    d->done = true;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

static void log_result(const struct rt_cloud_info *c, uint64_t started_ns)
{
    unsigned ms = (unsigned)((rt_mono_ns() - started_ns) / 1000000);
    if (!c->vendor_id[0]) {
        rt_info("cloud discovery: no cloud metadata service (%u ms)", ms);
        return;
    }
    rt_info("cloud discovery: %s, region %s, zone %s, instance type %s (%u ms)", c->vendor_id,
            c->region_id[0] ? c->region_id : "unknown", c->zone_id[0] ? c->zone_id : "unknown",
            c->instance_type[0] ? c->instance_type : "unknown", ms);
}

static void *discovery_thread(void *arg)
{
    struct rt_cloud_discovery *d = arg;
    uint64_t started = rt_mono_ns();
    struct rt_cloud_info info = {0};
    CURLM *multi = curl_multi_init();
    if (!multi) {
        rt_warn("cloud discovery: cannot create a curl multi handle");
        publish(d, &info);
        return NULL;
    }
    pthread_mutex_lock(&d->mu);
    d->multi = multi;
    pthread_mutex_unlock(&d->mu);

    rt_cloud_run_probes(&d->cfg, multi, &d->cancel, &info);

    pthread_mutex_lock(&d->mu);
    d->multi = NULL;
    pthread_mutex_unlock(&d->mu);
    curl_multi_cleanup(multi);
    if (!atomic_load(&d->cancel))
        log_result(&info, started);
    publish(d, &info);
    return NULL;
}

static long ms_or(int v, long fallback)
{
    return v > 0 ? v : fallback;
}

struct rt_cloud_discovery *rt_cloud_discovery_start(const struct rt_cloud_options *opts)
{
    static const struct rt_cloud_options defaults = {0};
    const struct rt_cloud_options *o = opts ? opts : &defaults;
    struct rt_cloud_discovery *d = rt_xcalloc(1, sizeof(*d));
    rt_strlcpy(d->cfg.imds_base, o->imds_base ? o->imds_base : RT_CLOUD_DEFAULT_IMDS_BASE,
               sizeof(d->cfg.imds_base));
    rt_strlcpy(d->cfg.alicloud_base, o->alicloud_base ? o->alicloud_base : RT_CLOUD_DEFAULT_ALICLOUD_BASE,
               sizeof(d->cfg.alicloud_base));
    d->cfg.connect_ms = ms_or(o->connect_timeout_ms, 1000);
    d->cfg.response_ms = ms_or(o->response_timeout_ms, 1000);
    d->cfg.total_ms = ms_or(o->total_timeout_ms, 3000);
    atomic_init(&d->cancel, false);
    pthread_mutex_init(&d->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->cv, &ca);
    pthread_condattr_destroy(&ca);

    if (o->disabled || !rt_http_global_init()) {
        d->done = true;
        return d;
    }
    /* Signals stay with the daemon's main thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&d->thread, NULL, discovery_thread, d);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        /* EAGAIN under a tight pids.max: run without cloud info rather than
         * block start-up with a synchronous probe. */
        rt_warn("cloud discovery skipped: cannot start a thread: %s", strerror(rc));
        d->done = true;
        return d;
    }
    pthread_setname_np(d->thread, "rt-cloud");
    d->thread_started = true;
    return d;
}

bool rt_cloud_discovery_wait(struct rt_cloud_discovery *d, int timeout_ms, struct rt_cloud_info *out)
{
    memset(out, 0, sizeof(*out));
    if (!d)
        return true;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    if (timeout_ms > 0) {
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
    }
    pthread_mutex_lock(&d->mu);
    while (!d->done && timeout_ms != 0) {
        if (timeout_ms < 0)
            pthread_cond_wait(&d->cv, &d->mu);
        else if (pthread_cond_timedwait(&d->cv, &d->mu, &until) == ETIMEDOUT)
            break;
    }
    bool done = d->done;
    if (done)
        *out = d->result;
    pthread_mutex_unlock(&d->mu);
    return done;
}

void rt_cloud_discovery_free(struct rt_cloud_discovery *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    atomic_store(&d->cancel, true);
    if (d->multi)
        curl_multi_wakeup(d->multi);
    pthread_mutex_unlock(&d->mu);
    if (d->thread_started)
        pthread_join(d->thread, NULL);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

static struct json_object *str_or_null(const char *s)
{
    return s[0] ? json_object_new_string(s) : NULL;
}

struct json_object *rt_cloud_info_to_json(const struct rt_cloud_info *c)
{
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "cloud_vendor_id", str_or_null(c->vendor_id));
    json_object_object_add(o, "cloud_account_id", str_or_null(c->account_id));
    json_object_object_add(o, "cloud_region_id", str_or_null(c->region_id));
    json_object_object_add(o, "cloud_zone_id", str_or_null(c->zone_id));
    json_object_object_add(o, "cloud_instance_type", str_or_null(c->instance_type));
    return o;
}

struct json_object *rt_cloud_info_facts_json(const struct rt_cloud_info *c)
{
    if (!c->vendor_id[0])
        return NULL;
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "vendor_id", str_or_null(c->vendor_id));
    json_object_object_add(o, "region_id", str_or_null(c->region_id));
    json_object_object_add(o, "zone_id", str_or_null(c->zone_id));
    json_object_object_add(o, "instance_type", str_or_null(c->instance_type));
    return o;
}
