/* Host methods: health, the daemon, the host's samples (public data). */
#include "api/call.h"
#include "api/methods.h"
#include "api/stream.h"
#include "collect/cpu_times.h"
#include "daemon.h"
#include "rt/json.h"
#include "rt/util.h"

#include <errno.h>
#include <json-c/printbuf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    struct rt_rcstr *s = rt_sampler_latest_host(rt_call_daemon(c)->sampler, NULL);
    if (!s) {
        rt_call_error_reason(c, RT_E_PREFIX "InternalError", "no sample yet");
        return;
    }
    send_host_sample(c->srv, c->conn, s, false);
    rt_rcstr_unref(s);
}

struct host_stream {
    struct rt_stream base;
    uint64_t next; /* the first tick not sent */
};

/* The outbox may still hold the samples of quiet ticks (no stream then),
 * the latest of which the first reply was: not sent again. */
static void host_stream_event(struct rt_server *srv, struct rt_conn *conn, const struct rt_sevt *e)
{
    struct host_stream *hs = (struct host_stream *)conn->stream;
    if (e->type != RT_SEVT_HOST || e->index < hs->next)
        return;
    hs->next = e->index + 1;
    send_host_sample(srv, conn, e->json, true);
}

static const struct rt_stream_ops host_stream_ops = {.event = host_stream_event};

static void m_stream_host_samples(struct rt_call *c)
{
    struct host_stream *hs = rt_xcalloc(1, sizeof(*hs));
    hs->base.ops = &host_stream_ops;
    struct rt_rcstr *s = rt_sampler_latest_host(rt_call_daemon(c)->sampler, &hs->next);
    if (s)
        send_host_sample(c->srv, c->conn, s, true);
    hs->next = s ? hs->next + 1 : 0;
    rt_rcstr_unref(s);
    rt_conn_stream(c->conn, &hs->base);
}

static struct json_object *cpu_times_json(const struct rt_cpu_times *t, double tick)
{
    struct json_object *o = json_object_new_object();
    if (t->cpu >= 0)
        json_object_object_add(o, "cpu", json_object_new_int(t->cpu));
    for (int m = 0; m < RT_CPU_MODES; m++)
        json_object_object_add(o, rt_cpu_mode_names[m], rt_json_double((double)t->ticks[m] / tick, 3));
    return o;
}

/* Read when asked, as node_exporter reads it at a scrape: the exporter's
 * own units may not read /proc/stat (ProcSubset=pid). */
static void m_get_host_cpu_times(struct rt_call *c)
{
    struct rt_cpu_times *v;
    size_t n;
    int r = rt_cpu_times_read(rt_call_daemon(c)->roots.proc_fd, &v, &n);
    if (r < 0) {
        rt_call_error_reason(c, RT_E_PREFIX "InternalError", r == -ENODATA ? "/proc/stat has no cpu line"
                                                                            : strerror(-r));
        return;
    }
    double tick = (double)sysconf(_SC_CLK_TCK);
    struct json_object *p = json_object_new_object(), *cpus = json_object_new_array_ext((int)n);
    json_object_object_add(p, "all", cpu_times_json(&v[0], tick));
    for (size_t i = 1; i < n; i++)
        json_object_array_add(cpus, cpu_times_json(&v[i], tick));
    json_object_object_add(p, "cpus", cpus);
    free(v);
    rt_call_reply(c, p);
}

static const struct rt_method methods[] = {
    {.name = "Ping", .fn = m_ping},
    {.name = "Info", .fn = m_info},
    {.name = "GetHostInfo", .fn = m_get_host_info},
    {.name = "GetHostSample", .fn = m_get_host_sample},
    {.name = "GetHostCpuTimes", .fn = m_get_host_cpu_times},
    {.name = "StreamHostSamples", .fn = m_stream_host_samples, .flags = RT_M_NEEDS_MORE},
};

const struct rt_method_table rt_host_methods = {RT_VL_INTERFACE, methods, RT_ARRAY_SIZE(methods)};
