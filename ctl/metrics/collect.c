/* One scrape: Info, the latest host sample and the jobs, over one connection. */
#include "metrics/metrics.h"

#include "live/stream.h"
#include "metrics/expo.h"
#include "rt/json.h"
#include "rt/sample_json.h"

#include <stdlib.h>
#include <string.h>

#define M(name) RT_VL_INTERFACE "." name
#define REPLY_TIMEOUT_MS 30000

/* The first reply of StreamJobs: every job the caller may see that runs or
 * ended within the retention (so their final counters are scraped, then
 * their series go). */
static int fetch_jobs(struct rt_vl_client *c, double keep_ended, struct json_object **reply)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "all", json_object_new_boolean(1));
    json_object_object_add(p, "ended_within_secs", json_object_new_double(keep_ended));
    if (rt_vl_client_send(c, M("StreamJobs"), p, RT_VL_MORE) < 0) {
        CTL_ERR("lost the connection to the daemon");
        return RT_EXIT_UNREACHABLE;
    }
    int r = ctl_stream_next(c, reply, REPLY_TIMEOUT_MS);
    if (r == 0)
        CTL_ERR("the daemon did not send the jobs in time");
    return r == 1 ? 0 : r == 0 ? RT_EXIT_UNREACHABLE : r;
}

int ctl_metrics_collect(const struct ctl_metrics *m, char **text, size_t *len)
{
    struct rt_vl_client c = {.fd = -1};
    struct json_object *info_r = NULL, *host_r = NULL, *times_r = NULL, *jobs_r = NULL, *gpus_r = NULL, *info, *host,
                       *times = NULL, *gpus = NULL;
    struct rt_sample s;
    rt_sample_init(&s);
    int rc = ctl_connect_running(m->ctl, &c);
    if (!rc)
        rc = ctl_call(&c, M("Info"), NULL, &info_r, &info);
    if (!rc && m->publish == CTL_PUBLISH_ALL) {
        bool admin = false;
        rt_json_get_bool(info, "caller_is_admin", &admin);
        if (!admin) {
            int64_t uid = -1;
            rt_json_get_i64(info, "caller_uid", &uid);
            CTL_ERR("--jobs all: uid %lld is not an administrator of the daemon (root or its admin group); "
                    "refusing to publish fewer jobs than asked",
                    (long long)uid);
            rc = RT_EXIT_DENIED;
        }
    }
    if (!rc)
        rc = ctl_call(&c, M("GetHostSample"), NULL, &host_r, &host);
    if (!rc) {
        char err[128];
        if (rt_sample_from_json(rt_json_get_object(host, "sample"), &s, err, sizeof(err)) < 0) {
            CTL_ERR("malformed host sample from the daemon: %s", err);
            rc = RT_EXIT_FAILURE;
        }
    }
    if (!rc)
        rc = ctl_call(&c, M("GetHostCpuTimes"), NULL, &times_r, &times);
    if (!rc && s.has_gpu_backend)
        rc = ctl_call(&c, M("GetGpus"), NULL, &gpus_r, &gpus);
    if (!rc && m->publish != CTL_PUBLISH_NONE)
        rc = fetch_jobs(&c, m->keep_ended_secs, &jobs_r); /* the last call: it streams */
    double at = 0;
    if (!rc) {
        FILE *f = open_memstream(text, len);
        if (!f)
            abort();
        ctl_expo_write(f, &(struct ctl_expo){.host = &s,
                                             .cpu_times = times,
                                             .jobs = rt_json_get_array(rt_vl_reply_params(jobs_r), "jobs"),
                                             .gpus = rt_json_get_array(gpus, "gpus"),
                                             .gpus_at = gpus ? (rt_json_get_double(gpus, "taken_at", &at), at) : 0,
                                             .version = rt_json_get_string(info, "version")});
        if (fclose(f) != 0)
            abort();
    }
    json_object_put(jobs_r);
    json_object_put(gpus_r);
    json_object_put(times_r);
    json_object_put(host_r);
    json_object_put(info_r);
    rt_sample_free(&s);
    rt_vl_client_close(&c);
    return rc;
}
