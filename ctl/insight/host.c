#include "insight/host.h"

#include "ctl.h"
#include "rt/json.h"

#include <string.h>
#include <time.h>

#define M(name) RT_VL_INTERFACE "." name
/* Discovery gives up after 3 s in the daemon (docs/host-and-cloud.md). */
#define CLOUD_WAIT_MS 4000
#define CLOUD_POLL_MS 100

static bool is_method_not_found(struct json_object *reply)
{
    const char *e = rt_vl_reply_error(reply);
    return e && strcmp(e, "org.varlink.service.MethodNotFound") == 0;
}

/* Host facts from Info and the latest host sample (older daemons). */
static int from_sample(struct rt_vl_client *c, struct insight_host *h)
{
    struct json_object *reply, *p;
    int rc = ctl_call(c, M("GetHostSample"), NULL, &reply, &p);
    if (rc)
        return rc;
    struct json_object *s = rt_json_get_object(p, "sample");
    struct json_object *o = json_object_new_object();
    struct json_object *cores = rt_json_get_array(rt_json_get_object(s, "cpu"), "per_core_pct");
    if (cores)
        json_object_object_add(o, "vcpus", json_object_new_int64((int64_t)json_object_array_length(cores)));
    uint64_t mib;
    if (rt_json_get_u64(rt_json_get_object(s, "memory"), "total_mib", &mib))
        json_object_object_add(o, "memory_mib", json_object_new_int64((int64_t)mib));
    struct json_object *gpus = rt_json_get_array(s, "gpu");
    size_t n = gpus ? json_object_array_length(gpus) : 0;
    uint64_t vram = 0, v;
    for (size_t i = 0; i < n; i++)
        if (rt_json_get_u64(json_object_array_get_idx(gpus, i), "vram_total_bytes", &v))
            vram += v / (1024 * 1024);
    json_object_object_add(o, "gpu_count", json_object_new_int64((int64_t)n));
    if (n) {
        const char *model = rt_json_get_string(json_object_array_get_idx(gpus, 0), "name");
        json_object_object_add(o, "gpu_model", rt_json_string_or_null(model));
        json_object_object_add(o, "gpu_memory_mib", vram ? json_object_new_int64((int64_t)vram) : NULL);
    }
    json_object_put(reply);
    rc = ctl_call(c, M("Info"), NULL, &reply, &p);
    if (rc) {
        json_object_put(o);
        return rc;
    }
    json_object_object_add(o, "hostname", rt_json_string_or_null(rt_json_get_string(p, "hostname")));
    json_object_put(reply);
    h->host = o;
    return 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int insight_host_load(struct rt_vl_client *c, struct insight_host *h)
{
    memset(h, 0, sizeof(*h));
    for (int waited = 0;; waited += CLOUD_POLL_MS) {
        struct json_object *reply = NULL;
        int r = rt_vl_client_call(c, M("GetHostInfo"), NULL, &reply, 30000);
        if (r < 0) {
            CTL_ERR("lost the connection to the daemon: %s", strerror(-r));
            return RT_EXIT_UNREACHABLE;
        }
        if (is_method_not_found(reply)) {
            json_object_put(reply);
            return from_sample(c, h);
        }
        if (rt_vl_reply_error(reply)) {
            int rc = ctl_report_error(reply);
            json_object_put(reply);
            return rc;
        }
        struct json_object *p = rt_vl_reply_params(reply);
        const char *disc = rt_json_get_string(p, "cloud_discovery");
        if (disc && strcmp(disc, "running") == 0 && waited < CLOUD_WAIT_MS) {
            json_object_put(reply);
            sleep_ms(CLOUD_POLL_MS);
            continue;
        }
        struct json_object *host = rt_json_get_object(p, "host");
        struct json_object *cloud = rt_json_get_object(p, "cloud");
        h->host = host ? json_object_get(host) : json_object_new_object();
        h->cloud = cloud ? json_object_get(cloud) : NULL;
        json_object_put(reply);
        return 0;
    }
}

void insight_host_free(struct insight_host *h)
{
    json_object_put(h->host);
    json_object_put(h->cloud);
    memset(h, 0, sizeof(*h));
}
