/* StreamJobs: the caller's jobs with their latest figures, one reply per
 * tick, for `resource-trackerctl top` and the exporters. Replies are built
 * here on the main thread from the registry when the sampler says a tick is
 * done; the sampler does nothing per subscriber. Each job's text is made
 * once per tick, and each reply once per tick for all the subscribers that
 * see the same jobs (every administrator's `all`): they share its bytes
 * (api/shared_reply.h), sent in chunks as each client reads. */
#include "api/api.h"
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
/* A tick's Job objects are made this long at a time (≈ 18 µs each), then the
 * loop serves other clients before going on: 300 jobs took 5 ms at once. */
#define TEXTS_SLICE_NS (1000 * 1000)

struct jobs_stream {
    struct rt_stream base;
    bool all;
    double ended_within;
    uint64_t due, sent; /* the latest tick, the tick of the last reply */
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

/* The reply for a subscriber, as text. */
static void build_reply(struct rt_daemon *d, const struct rt_peer *peer, const struct jobs_stream *js, uint64_t tick,
                        struct printbuf *pb)
{
    double now = (double)rt_real_ns() / 1e9;
    printbuf_strappend(pb, "{\"parameters\":{\"jobs\":[");
    bool first = true;
    rt_jobs_lock(&d->jobs);
    for (int running = 1; running >= 0; running--)
        for (size_t i = d->jobs.n; i-- > 0;) {
            if (!wanted(js, peer, d->jobs.v[i], running, now))
                continue;
            const struct job_object_text *t = job_object_text(d, i, tick);
            if (!first)
                printbuf_strappend(pb, ",");
            printbuf_memappend(pb, t->text, (int)t->len);
            first = false;
        }
    rt_jobs_unlock(&d->jobs);
    printbuf_strappend(pb, "]},\"continues\":true}");
}

static struct rt_shared_reply *new_reply(struct rt_daemon *d, const struct rt_peer *peer,
                                         const struct jobs_stream *js, uint64_t tick)
{
    struct printbuf *pb = printbuf_new();
    build_reply(d, peer, js, tick, pb);
    struct rt_shared_reply *r = rt_shared_reply_new(pb->buf, (size_t)pb->bpos);
    printbuf_free(pb);
    return r;
}

/* Replies in use, one per set of jobs seen (all jobs: an administrator's
 * `all`; else one user's) and how long ended ones stay: the latest tick's
 * (tick > 0), and first replies (tick 0), made once while nothing changes:
 * until the sampler's next tick, the next sampler event (a job started or
 * ended) or reload. The tick is read from the sampler itself: while nobody
 * streams, its events reach this thread seconds late (daemon.c), and a
 * scrape's first reply must be as of the latest tick. */
struct live_reply {
    uint64_t tick, epoch;
    bool everyone;
    uid_t uid;
    double ended_within;
    struct rt_shared_reply *reply; /* NULL while its jobs' texts are made */
    size_t next;                   /* of them, the registry's slots done */
};

static struct {
    struct live_reply *v;
    size_t n, cap;
    uint64_t tick, epoch; /* the latest tick; changes so far */
    uint64_t beat;        /* the sampler's heartbeat the epoch has seen */
} replies;

void rt_api_jobs_changed(void)
{
    replies.epoch++;
}

/* Replies no subscriber will be given again (their holders keep theirs). */
static void forget_stale_replies(void)
{
    for (size_t i = 0; i < replies.n;) {
        const struct live_reply *r = &replies.v[i];
        if (r->tick ? r->tick < replies.tick : r->epoch != replies.epoch) {
            rt_shared_reply_unref(r->reply);
            replies.v[i] = replies.v[--replies.n];
        } else {
            i++;
        }
    }
}

/* Make the texts of the jobs r shows, from slot r->next, for a slice of
 * time; the reply once all are made (a job that moved to another slot
 * meanwhile is made then), else NULL. */
static struct rt_shared_reply *make_reply(struct rt_daemon *d, const struct rt_peer *peer,
                                          const struct jobs_stream *js, struct live_reply *r)
{
    uint64_t until = rt_mono_ns() + TEXTS_SLICE_NS;
    double now = (double)rt_real_ns() / 1e9;
    rt_jobs_lock(&d->jobs);
    for (; r->next < d->jobs.n && rt_mono_ns() < until; r->next++) {
        const struct rt_job *j = d->jobs.v[r->next];
        if (wanted(js, peer, j, true, now) || wanted(js, peer, j, false, now))
            job_object_text(d, r->next, r->tick);
    }
    bool done = r->next >= d->jobs.n;
    rt_jobs_unlock(&d->jobs);
    if (done)
        r->reply = new_reply(d, peer, js, r->tick);
    return r->reply;
}

/* The reply of a tick for this subscriber, NULL while it is being made
 * (call again); tick 0: a first reply, the figures now, made at once. */
static struct rt_shared_reply *live_reply(struct rt_daemon *d, const struct rt_peer *peer,
                                          const struct jobs_stream *js, uint64_t tick)
{
    bool everyone = js->all && peer->admin;
    uint64_t beat = rt_sampler_heartbeat(d->sampler);
    if (beat != replies.beat) {
        replies.beat = beat;
        rt_api_jobs_changed();
    }
    uint64_t epoch = tick ? 0 : replies.epoch;
    forget_stale_replies();
    for (size_t i = 0; i < replies.n; i++) {
        struct live_reply *r = &replies.v[i];
        if (r->tick == tick && r->epoch == epoch && r->everyone == everyone && (everyone || r->uid == peer->uid) &&
            r->ended_within == js->ended_within)
            return r->reply ? r->reply : make_reply(d, peer, js, r);
    }
    if (replies.n == replies.cap) {
        replies.cap = replies.cap ? 2 * replies.cap : 8;
        replies.v = rt_xrealloc(replies.v, replies.cap * sizeof(*replies.v));
    }
    struct live_reply *r = &replies.v[replies.n++];
    *r = (struct live_reply){.tick = tick, .epoch = epoch, .everyone = everyone, .uid = peer->uid,
                             .ended_within = js->ended_within};
    if (!tick)
        r->reply = new_reply(d, peer, js, 0);
    return r->reply ? r->reply : make_reply(d, peer, js, r);
}

/* A state, not a log: the tick's reply is sent once the client has read
 * the previous one (pump() runs when its output is drained); a client that
 * has not read it gets the latest tick's then, not a queue. Nothing is sent
 * here: the loop calls pump() per connection as each can take it. */
static void jobs_stream_event(struct rt_server *srv, struct rt_conn *conn, const struct rt_sevt *e)
{
    (void)srv;
    if (e->type != RT_SEVT_TICK_DONE)
        return;
    ((struct jobs_stream *)conn->stream)->due = e->index;
    if (e->index > replies.tick) {
        replies.tick = e->index;
        forget_stale_replies();
    }
}

static bool jobs_stream_wants_output(const struct rt_stream *st)
{
    const struct jobs_stream *js = (const struct jobs_stream *)st;
    return js->due != js->sent;
}

static void jobs_stream_pump(struct rt_server *srv, struct rt_conn *conn)
{
    struct jobs_stream *js = (struct jobs_stream *)conn->stream;
    struct rt_shared_reply *r = live_reply(rt_server_daemon(srv), &conn->peer, js, js->due);
    if (!r)
        return; /* still wanting output: pumped again after the loop's other events */
    rt_conn_send_shared(srv, conn, r);
    js->sent = js->due;
}

static const struct rt_stream_ops jobs_stream_ops = {
    .pump = jobs_stream_pump, .event = jobs_stream_event, .wants_output = jobs_stream_wants_output};

static void m_stream_jobs(struct rt_call *c)
{
    double within = rt_call_float(c, "ended_within_secs", ENDED_WITHIN_DEFAULT);
    struct jobs_stream *js = rt_xcalloc(1, sizeof(*js));
    js->base.ops = &jobs_stream_ops;
    js->all = rt_call_bool(c, "all", false);
    js->ended_within = within;
    /* Between ticks: the figures now. */
    rt_conn_send_shared(c->srv, c->conn, live_reply(rt_call_daemon(c), rt_call_peer(c), js, 0));
    rt_conn_stream(c->conn, &js->base);
}

static const struct rt_method methods[] = {
    {.name = "StreamJobs", .fn = m_stream_jobs, .flags = RT_M_NEEDS_MORE,
     .params = {RT_OPT("all", RT_P_BOOL), {.name = "ended_within_secs", .type = RT_P_FLOAT, RT_RANGE(0, ENDED_WITHIN_MAX)}}},
};

const struct rt_method_table rt_live_methods = {RT_VL_INTERFACE, methods, RT_ARRAY_SIZE(methods)};
