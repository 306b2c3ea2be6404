/* StreamJobs: the caller's jobs with their latest figures, one reply per
 * tick, for `resource-trackerctl top` and the exporters. Replies are built
 * here on the main thread from the registry when the sampler says a tick is
 * done; the sampler does nothing per subscriber. Each job's text is made
 * once per tick and shared by every subscriber that may see it. */
#include "api/call.h"
#include "api/job_access.h"
#include "api/methods.h"
#include "api/stream.h"
#include "daemon.h"
#include "rt/util.h"

#include <json-c/printbuf.h>
#include <stdlib.h>
#include <string.h>

#define ENDED_WITHIN_DEFAULT 10.0
#define ENDED_WITHIN_MAX 86400.0
#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

struct jobs_stream {
    struct rt_stream base;
    bool all;
    double ended_within;
};

/* A Job object as text, for the tick it was made in; slot i belongs to the
 * registry's i-th job, and holds its text while the job there is the same
 * (retention may shift the registry between two subscribers). Main thread. */
struct job_object_text {
    uint64_t tick, id;
    const struct rt_job *job;
    char *text;
    size_t len;
};

static struct {
    struct job_object_text *v;
    size_t cap;
} texts;

static bool wanted(const struct jobs_stream *js, const struct rt_peer *peer, const struct rt_job *j, bool running,
                   double now)
{
    if (!rt_api_can_see(peer, j) || (!js->all && j->owner_uid != peer->uid))
        return false;
    if (running)
        return j->state == RT_JOB_RUNNING;
    return j->state != RT_JOB_RUNNING && j->ended_at >= now - js->ended_within;
}

/* The text of the registry's i-th job in this tick (tick 0: not shared). */
static const struct job_object_text *job_object_text(struct rt_daemon *d, size_t i, uint64_t tick)
{
    if (i >= texts.cap) {
        size_t cap = d->jobs.n > i ? d->jobs.n : i + 1;
        texts.v = rt_xrealloc(texts.v, cap * sizeof(*texts.v));
        memset(texts.v + texts.cap, 0, (cap - texts.cap) * sizeof(*texts.v));
        texts.cap = cap;
    }
    struct job_object_text *t = &texts.v[i];
    const struct rt_job *j = d->jobs.v[i];
    if (tick && t->tick == tick && t->job == j && t->id == j->id)
        return t;
    struct json_object *o = rt_api_job_json(d, j);
    size_t len;
    const char *s = json_object_to_json_string_length(o, JSON_FLAGS, &len);
    t->text = rt_xrealloc(t->text, len);
    memcpy(t->text, s, len);
    t->len = len;
    json_object_put(o);
    *t = (struct job_object_text){.tick = tick, .id = j->id, .job = j, .text = t->text, .len = len};
    return t;
}

static void send_jobs(struct rt_server *srv, struct rt_conn *conn, const struct jobs_stream *js, uint64_t tick)
{
    struct rt_daemon *d = rt_server_daemon(srv);
    double now = (double)rt_real_ns() / 1e9;
    struct printbuf *pb = printbuf_new();
    printbuf_strappend(pb, "{\"parameters\":{\"jobs\":[");
    bool first = true;
    rt_jobs_lock(&d->jobs);
    for (int running = 1; running >= 0; running--)
        for (size_t i = d->jobs.n; i-- > 0;) {
            if (!wanted(js, &conn->peer, d->jobs.v[i], running, now))
                continue;
            const struct job_object_text *t = job_object_text(d, i, tick);
            if (!first)
                printbuf_strappend(pb, ",");
            printbuf_memappend(pb, t->text, (int)t->len);
            first = false;
        }
    rt_jobs_unlock(&d->jobs);
    printbuf_strappend(pb, "]},\"continues\":true}");
    rt_conn_send_raw(srv, conn, pb->buf, (size_t)pb->bpos);
    printbuf_free(pb);
}

static void jobs_stream_event(struct rt_server *srv, struct rt_conn *conn, const struct rt_sevt *e)
{
    /* A state, not a log: a caller that has not read the last reply gets
     * the next tick's instead of a queue. */
    if (e->type == RT_SEVT_TICK_DONE && rt_conn_pending(conn) == 0)
        send_jobs(srv, conn, (const struct jobs_stream *)conn->stream, e->index);
}

static const struct rt_stream_ops jobs_stream_ops = {.event = jobs_stream_event};

static void m_stream_jobs(struct rt_call *c)
{
    double within = rt_call_float(c, "ended_within_secs", ENDED_WITHIN_DEFAULT);
    struct jobs_stream *js = rt_xcalloc(1, sizeof(*js));
    js->base.ops = &jobs_stream_ops;
    js->all = rt_call_bool(c, "all", false);
    js->ended_within = within;
    send_jobs(c->srv, c->conn, js, 0); /* between ticks: the figures now */
    rt_conn_stream(c->conn, &js->base);
}

static const struct rt_method methods[] = {
    {.name = "StreamJobs", .fn = m_stream_jobs, .flags = RT_M_NEEDS_MORE,
     .params = {RT_OPT("all", RT_P_BOOL), {.name = "ended_within_secs", .type = RT_P_FLOAT, RT_RANGE(0, ENDED_WITHIN_MAX)}}},
};

const struct rt_method_table rt_live_methods = {RT_VL_INTERFACE, methods, RT_ARRAY_SIZE(methods)};
