/* Host methods: health, the daemon, the host's samples (public data). */
#include "api/call.h"
#include "api/methods.h"
#include "api/stream.h"
#include "daemon.h"
#include "rt/json.h"
#include "rt/util.h"

#include <json-c/printbuf.h>
#include <stdlib.h>

static void m_ping(struct rt_call *c)
{
    rt_call_reply(c, NULL);
}

static void m_info(struct rt_call *c)
{
    struct rt_daemon *d = rt_call_daemon(c);
    const struct rt_peer *peer = rt_call_peer(c);
    rt_jobs_lock(&d->jobs);
    size_t running = 0;
    for (size_t i = 0; i < d->jobs.n; i++) /* others' jobs are not even counted */
        running += d->jobs.v[i]->state == RT_JOB_RUNNING && (peer->admin || d->jobs.v[i]->owner_uid == peer->uid);
    rt_jobs_unlock(&d->jobs);
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "version", json_object_new_string(RT_VERSION));
    json_object_object_add(p, "hostname", json_object_new_string(d->hostname));
    json_object_object_add(p, "interval_secs", rt_json_double(d->cfg.interval_secs, 3));
    json_object_object_add(p, "uptime_secs",
                           rt_json_double((double)(rt_mono_ns() - d->start_mono_ns) / 1e9, 1));
    json_object_object_add(p, "user_mode", json_object_new_boolean(d->cfg.user_mode));
    json_object_object_add(p, "jobs_running", json_object_new_int64((int64_t)running));
    json_object_object_add(p, "gpus", json_object_new_int64(rt_sampler_gpu_count(d->sampler)));
    json_object_object_add(p, "caller_uid", json_object_new_int64(peer->uid));
    json_object_object_add(p, "caller_is_admin", json_object_new_boolean(peer->admin));
    rt_call_reply(c, p);
}

/* Facts do not change while the daemon runs, but for the GPUs of the latest
 * sample and cloud discovery, which starts with the first call and may still
 * be running (the caller asks again). */
static void m_get_host_info(struct rt_call *c)
{
    struct rt_daemon *d = rt_call_daemon(c);
    struct rt_host_info hi;
    rt_daemon_host_info(d, &hi);
    struct rt_cloud_info ci;
    bool done = rt_cloud_discovery_wait(rt_daemon_cloud(d), 0, &ci);
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "host", rt_host_info_facts_json(&hi));
    json_object_object_add(p, "cloud", done ? rt_cloud_info_facts_json(&ci) : NULL);
    json_object_object_add(p, "cloud_discovery", json_object_new_string(done ? "done" : "running"));
    rt_call_reply(c, p);
}

/* {"parameters":{"sample":<raw>}[,"continues":true]} */
static void send_host_sample(struct rt_server *srv, struct rt_conn *conn, const struct rt_rcstr *s,
                             bool continues)
{
    struct printbuf *pb = printbuf_new();
    printbuf_strappend(pb, "{\"parameters\":{\"sample\":");
    printbuf_memappend(pb, s->data, (int)s->len);
    if (continues)
        printbuf_strappend(pb, "},\"continues\":true}");
    else
        printbuf_strappend(pb, "}}");
    rt_conn_send_raw(srv, conn, pb->buf, (size_t)pb->bpos);
    printbuf_free(pb);
}

static void m_get_host_sample(struct rt_call *c)
{
    struct rt_rcstr *s = rt_sampler_latest_host(rt_call_daemon(c)->sampler);
    if (!s) {
        rt_call_error_reason(c, RT_E_PREFIX "InternalError", "no sample yet");
        return;
    }
    send_host_sample(c->srv, c->conn, s, false);
    rt_rcstr_unref(s);
}

static void host_stream_event(struct rt_server *srv, struct rt_conn *conn, const struct rt_sevt *e)
{
    if (e->type == RT_SEVT_HOST)
        send_host_sample(srv, conn, e->json, true);
}

static const struct rt_stream_ops host_stream_ops = {.event = host_stream_event};

static void m_stream_host_samples(struct rt_call *c)
{
    struct rt_rcstr *s = rt_sampler_latest_host(rt_call_daemon(c)->sampler);
    if (s)
        send_host_sample(c->srv, c->conn, s, true);
    rt_rcstr_unref(s);
    struct rt_stream *st = rt_xcalloc(1, sizeof(*st));
    st->ops = &host_stream_ops;
    rt_conn_stream(c->conn, st);
}

static const struct rt_method methods[] = {
    {.name = "Ping", .fn = m_ping},
    {.name = "Info", .fn = m_info},
    {.name = "GetHostInfo", .fn = m_get_host_info},
    {.name = "GetHostSample", .fn = m_get_host_sample},
    {.name = "StreamHostSamples", .fn = m_stream_host_samples, .flags = RT_M_NEEDS_MORE},
};

const struct rt_method_table rt_host_methods = {RT_VL_INTERFACE, methods, RT_ARRAY_SIZE(methods)};
