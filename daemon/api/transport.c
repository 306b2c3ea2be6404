#include "api/transport.h"

#include "api/api.h"
#include "api/budget.h"
#include "api/methods.h"
#include "api/stream.h"
#include "daemon.h"
#include "system/log.h"
#include "rt/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* Further calls are not served while this much output is unread: the
 * client has to read first (back-pressure), and one that never does holds
 * little memory until it is timed out. */
#define OUTPUT_HIGH (256u * 1024)
/* A client that lets this much output pile up (a stream it does not read) is
 * too slow: drop it. */
#define MAX_PENDING_OUTPUT (16u * 1024 * 1024)
/* A shared reply goes out this much per flush (per EPOLLOUT): 200
 * subscribers each sending a 500 KB reply at once held up the loop. */
#define SHARED_CHUNK (64u * 1024)
/* Output to clients only waiting for it (EPOLLOUT) is sent for this long
 * in one epoll batch; the others are sent on the next (epoll reports them
 * again), so that a batch of 64 large sends does not hold up a call. */
#define OUTPUT_SLICE_NS (2 * 1000 * 1000)
/* A turn: this many calls, then the next connection's turn. */
#define TURN_CALLS 8
/* rt_server_settle() gives turns for this long, then lets epoll in. */
#define SETTLE_NS (5 * 1000 * 1000)

struct rt_server {
    struct rt_daemon *d;
    int listen_fd, epfd;
    struct rt_conn *conns;
    struct rt_conn *closed;  /* closed this batch, freed by rt_server_settle() */
    size_t nconns;
    size_t nadmin;           /* of nconns, root's and the admin group's */
    struct rt_budget budget;
    struct rt_conn *queue, *queue_tail; /* waiting for a turn */
    uint64_t drop_logged_ns;  /* budget drops: one notice a second, the rest counted */
    unsigned drops_unlogged;
    uint64_t next_id;
    uint64_t batch_ns;      /* the first event of this epoll batch, 0 before */
    uint64_t ticked_ns;     /* the last rt_server_tick() */
    uint64_t due_ns;        /* rt_server_due(), while due_known */
    bool due_known;         /* no connection changed since due_ns was found */
    int listen_tag;
    bool accept_paused;     /* out of descriptors: listen fd not watched */
    bool accept_warned;     /* this shortage has been logged */
};

struct rt_daemon *rt_server_daemon(struct rt_server *srv) { return srv->d; }
size_t rt_server_connections(struct rt_server *srv) { return srv->nconns; }

struct rt_server *rt_server_new(struct rt_daemon *d, int listen_fd, int epfd)
{
    struct rt_server *srv = rt_xcalloc(1, sizeof(*srv));
    srv->d = d;
    srv->listen_fd = listen_fd;
    srv->epfd = epfd;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &srv->listen_tag};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, listen_fd, &ev) < 0) {
        free(srv);
        return NULL;
    }
    return srv;
}

/* accept() failing for lack of descriptors would keep the level-triggered
 * listening socket readable and spin the loop: stop watching it until a
 * connection closes or the next sampler event (each tick). */
static void watch_listener(struct rt_server *srv, bool on)
{
    struct epoll_event ev = {.events = on ? EPOLLIN : 0, .data.ptr = &srv->listen_tag};
    if (epoll_ctl(srv->epfd, EPOLL_CTL_MOD, srv->listen_fd, &ev) < 0)
        rt_warn("cannot change the watch of the control socket: %s", strerror(errno));
    srv->accept_paused = !on;
}

static void accept_pause(struct rt_server *srv, int err)
{
    if (!srv->accept_warned)
        rt_warn("cannot accept clients: %s; retrying when a descriptor is free", strerror(err));
    srv->accept_warned = true;
    if (!srv->accept_paused)
        watch_listener(srv, false);
}

static void accept_resume(struct rt_server *srv)
{
    if (srv->accept_paused)
        watch_listener(srv, true);
}

static void drop_fds(struct rt_conn *c)
{
    for (size_t i = 0; i < c->nfds; i++)
        close(c->fds[i].fd);
    c->nfds = 0;
}

static void end_stream(struct rt_conn *c)
{
    if (c->stream && c->stream->ops->release)
        c->stream->ops->release(c->stream);
    free(c->stream);
    c->stream = NULL;
}

static void unqueue(struct rt_server *srv, struct rt_conn *c)
{
    if (!c->queued)
        return;
    struct rt_conn **pp = &srv->queue, *prev = NULL;
    while (*pp != c) {
        prev = *pp;
        pp = &(*pp)->queue_next;
    }
    *pp = c->queue_next;
    if (srv->queue_tail == c)
        srv->queue_tail = prev;
    c->queue_next = NULL;
    c->queued = false;
}

static void enqueue(struct rt_server *srv, struct rt_conn *c)
{
    if (c->queued)
        return;
    c->queued = true;
    c->queue_next = NULL;
    if (srv->queue_tail)
        srv->queue_tail->queue_next = c;
    else
        srv->queue = c;
    srv->queue_tail = c;
}

static void conn_close(struct rt_server *srv, struct rt_conn *c)
{
    epoll_ctl(srv->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    unqueue(srv, c);
    c->user->shared -= !c->peer.admin;
    rt_budget_leave(&srv->budget, c->user, &c->held);
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    srv->nconns--;
    srv->nadmin -= c->peer.admin;
    rt_vl_reader_free(&c->rd);
    rt_vl_writer_free(&c->wr);
    rt_shared_out_drop(&c->shared);
    drop_fds(c);
    end_stream(c);
    /* Not freed yet: the current epoll batch may hold more events for it. */
    c->phase = RT_CONN_DEAD;
    c->fd = -1;
    c->prev = NULL;
    c->next = srv->closed;
    srv->closed = c;
    accept_resume(srv);
}

static void reap(struct rt_server *srv)
{
    while (srv->closed) {
        struct rt_conn *c = srv->closed;
        srv->closed = c->next;
        free(c);
    }
}

void rt_server_free(struct rt_server *srv)
{
    if (!srv)
        return;
    while (srv->conns)
        conn_close(srv, srv->conns);
    reap(srv);
    epoll_ctl(srv->epfd, EPOLL_CTL_DEL, srv->listen_fd, NULL);
    rt_budget_free(&srv->budget);
    free(srv);
}

struct rt_conn *rt_server_find_conn(struct rt_server *srv, uint64_t id)
{
    for (struct rt_conn *c = srv->conns; c; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

static bool stream_wants_output(const struct rt_conn *c)
{
    return c->phase == RT_CONN_STREAMING && c->stream->ops->wants_output &&
           c->stream->ops->wants_output(c->stream);
}

static void update_interest(struct rt_server *srv, struct rt_conn *c)
{
    /* While a call is in progress, stop reading further calls (they would
     * only pile up). A client that goes away entirely still shows up as
     * EPOLLHUP; one that only shut down its sending side (SHUT_WR) waits for
     * its replies and is noticed at EOF, once reading resumes. */
    uint32_t ev = 0;
    if (c->phase == RT_CONN_READING && !c->input_ended && !c->queued && !c->blocked)
        ev |= EPOLLIN;
    /* A stream paging through stored data is pumped on EPOLLOUT, also when
     * a flush drained everything it had queued. */
    if (rt_conn_pending(c) || stream_wants_output(c))
        ev |= EPOLLOUT;
    if (ev == c->epoll_events)
        return;
    struct epoll_event e = {.events = ev, .data.ptr = c};
    if (epoll_ctl(srv->epfd, EPOLL_CTL_MOD, c->fd, &e) < 0)
        rt_warn("cannot watch a client: %s", strerror(errno));
    c->epoll_events = ev;
}

/* The bytes its buffers hold, for its user's budget: a shared reply is
 * divided among those that hold it (re-counted each housekeeping tick as
 * they finish sending it). */
static void account(struct rt_server *srv, struct rt_conn *c)
{
    const struct rt_shared_reply *r = c->shared.reply;
    size_t shared = r ? r->len / r->refs : 0;
    rt_budget_hold(&srv->budget, c->user, &c->held, c->rd.cap + c->wr.cap + shared);
}

/* The client closed: nothing it is sent can arrive. Calls it sent before
 * still run (their effect matters, oneway ones too) until one has to wait. */
static void conn_gone(struct rt_conn *c)
{
    c->gone = true;
    rt_vl_writer_free(&c->wr);
    rt_shared_out_drop(&c->shared);
}

bool rt_conn_flush(struct rt_server *srv, struct rt_conn *c)
{
    size_t before = rt_conn_pending(c);
    int r = c->gone ? 0 : rt_vl_writer_flush(&c->wr, c->fd);
    if (r == 0 && !c->gone)
        r = rt_shared_out_send(&c->shared, c->fd, SHARED_CHUNK);
    if (r < 0)
        conn_gone(c);
    size_t after = rt_conn_pending(c);
    if (after < before || !after) {
        c->sent_ns = rt_mono_ns();
        if (after < before)
            c->active_ns = c->sent_ns;
    }
    if (c->blocked && after < OUTPUT_HIGH) {
        c->blocked = false; /* it reads again: serve the calls it sent */
        enqueue(srv, c);
    }
    bool finished = c->phase == RT_CONN_CLOSING ||
                    (c->phase == RT_CONN_READING && c->input_ended && !c->queued && !c->blocked) ||
                    (c->gone && c->phase != RT_CONN_READING);
    if (finished && !after) {
        conn_close(srv, c);
        return false;
    }
    if (after > MAX_PENDING_OUTPUT) {
        rt_log_user(c->peer.uid, LOG_NOTICE,
                    "dropping client (uid %u, pid %d): it does not read its replies (%zu bytes unread)",
                    (unsigned)c->peer.uid, (int)c->peer.pid, after);
        conn_close(srv, c);
        return false;
    }
    rt_vl_reader_trim(&c->rd);
    account(srv, c);
    update_interest(srv, c);
    return true;
}

size_t rt_conn_pending(const struct rt_conn *c)
{
    return rt_vl_writer_pending(&c->wr) + rt_shared_out_pending(&c->shared);
}

/* What is queued after a shared reply goes after it: the rest of it is
 * copied into the writer first (rare: streams queue one at a time). */
static void keep_order(struct rt_conn *c)
{
    struct rt_shared_out *o = &c->shared;
    if (!o->reply)
        return;
    rt_vl_writer_put_raw(&c->wr, o->reply->data + o->off, o->reply->len - o->off - 1);
    rt_shared_out_drop(o);
}

void rt_conn_send_raw(struct rt_server *srv, struct rt_conn *c, const char *json, size_t len)
{
    (void)srv;
    if (c->oneway || c->gone)
        return;
    keep_order(c);
    rt_vl_writer_put_raw(&c->wr, json, len);
}

void rt_conn_send_shared(struct rt_server *srv, struct rt_conn *c, struct rt_shared_reply *reply)
{
    (void)srv;
    if (c->oneway || c->gone)
        return;
    keep_order(c);
    c->shared = (struct rt_shared_out){.reply = rt_shared_reply_ref(reply)};
}

void rt_conn_reply(struct rt_server *srv, struct rt_conn *c, struct json_object *params, bool continues)
{
    (void)srv;
    if (c->oneway || c->gone) {
        json_object_put(params);
        return;
    }
    keep_order(c);
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "parameters", params ? params : json_object_new_object());
    if (continues)
        json_object_object_add(o, "continues", json_object_new_boolean(1));
    rt_vl_writer_put(&c->wr, o);
    json_object_put(o);
}

void rt_conn_error(struct rt_server *srv, struct rt_conn *c, const char *error, struct json_object *params)
{
    (void)srv;
    if (c->oneway || c->gone) {
        json_object_put(params);
        return;
    }
    keep_order(c);
    struct json_object *o = json_object_new_object();
    json_object_object_add(o, "error", json_object_new_string(error));
    json_object_object_add(o, "parameters", params ? params : json_object_new_object());
    rt_vl_writer_put(&c->wr, o);
    json_object_put(o);
}

void rt_conn_wait(struct rt_conn *c)
{
    c->phase = RT_CONN_WAITING;
}

void rt_conn_stream(struct rt_conn *c, struct rt_stream *stream)
{
    end_stream(c);
    c->stream = stream;
    c->phase = RT_CONN_STREAMING;
}

/* Protocol violation: answer once and hang up (the stream may be out of sync). */
static void protocol_error(struct rt_server *srv, struct rt_conn *c, const char *reason)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "reason", json_object_new_string(reason));
    c->oneway = false;
    rt_conn_error(srv, c, RT_VL_INTERFACE ".InvalidRequest", p);
    end_stream(c);
    c->phase = RT_CONN_CLOSING;
}

/* The descriptors that came with the message at [start, end) go to the call;
 * earlier ones were not claimed by their call: closed. */
static size_t take_fds(struct rt_conn *c, uint64_t start, uint64_t end, int *out)
{
    size_t n = 0, keep = 0;
    for (size_t i = 0; i < c->nfds; i++) {
        if (c->fds[i].at < start)
            close(c->fds[i].fd);
        else if (c->fds[i].at < end)
            out[n++] = c->fds[i].fd;
        else
            c->fds[keep++] = c->fds[i];
    }
    c->nfds = keep;
    return n;
}

/* Would this connection's buffers, as they are now, take its user or all
 * users over the limits? */
static bool over_budget(const struct rt_server *srv, const struct rt_conn *c)
{
    const struct rt_config *cfg = &srv->d->cfg;
    size_t now = c->rd.cap + c->wr.cap;
    return c->user->held - c->held + now > cfg->max_buffer_per_uid ||
           srv->budget.held - c->held + now > cfg->max_buffer_total;
}

/* One turn: up to TURN_CALLS calls of those read; the connection is queued
 * when more may be waiting, or blocked until its client reads. */
static void serve_input(struct rt_server *srv, struct rt_conn *c)
{
    /* A handler that completes its call at once (a stream that ends inside
     * GetJobSamples) comes back here through rt_conn_done(): let this loop
     * carry on instead of recursing once per pipelined call. */
    if (c->in_dispatch)
        return;
    c->in_dispatch = true;
    unqueue(srv, c);
    for (int calls = 0; c->phase == RT_CONN_READING; calls++) {
        if (rt_conn_pending(c) >= OUTPUT_HIGH) {
            c->blocked = true;
            break;
        }
        /* Over its user's budget: rt_server_settle() drops connections
         * before this one gets its next turn. */
        if (calls == TURN_CALLS || over_budget(srv, c)) {
            enqueue(srv, c);
            break;
        }
        char *msg;
        size_t len;
        uint64_t start = c->rd.consumed;
        int r = rt_vl_reader_next(&c->rd, &msg, &len);
        if (r == 0)
            break;
        if (r < 0) {
            char reason[96];
            snprintf(reason, sizeof(reason), "message longer than %zu bytes", c->rd.max);
            protocol_error(srv, c, reason);
            break;
        }
        int fds[RT_CONN_MAX_FDS];
        size_t nfds = take_fds(c, start, c->rd.consumed, fds);
        char reason[160];
        if (rt_dispatch(srv, c, msg, len, fds, nfds, reason, sizeof(reason)) < 0)
            protocol_error(srv, c, reason);
        /* What is left begins a message now. */
        c->input_ns = rt_mono_ns();
    }
    c->in_dispatch = false;
}

void rt_conn_done(struct rt_server *srv, struct rt_conn *c)
{
    if (c->phase == RT_CONN_DEAD || c->phase == RT_CONN_CLOSING)
        return;
    end_stream(c);
    c->phase = RT_CONN_READING;
    c->more = c->oneway = false;
    c->input_ns = rt_mono_ns(); /* a message behind the call is timed from now */
    /* No flush here: it may close (and free) c, which callers still use. */
    serve_input(srv, c);
}

bool rt_peer_in_group(int fd, gid_t primary, gid_t group)
{
    if (primary == group)
        return true;
    /* Supplementary groups as of connect(), not re-read from /proc (PID reuse).
     * A peer in more groups than fit gets ERANGE and the size needed. */
    gid_t small[256], *groups = small;
    socklen_t len = sizeof(small);
    int r = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len);
    if (r < 0 && errno == ERANGE && len > sizeof(small)) {
        groups = rt_xmalloc(len);
        r = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len);
    }
    bool found = false;
    for (size_t i = 0; r == 0 && i < len / sizeof(gid_t) && !found; i++)
        found = groups[i] == group;
    if (groups != small)
        free(groups);
    return found;
}

static bool peer_is_admin(struct rt_server *srv, int fd, uid_t uid, gid_t gid)
{
    return uid == 0 || (srv->d->has_admin_gid && rt_peer_in_group(fd, gid, srv->d->admin_gid));
}

static void refuse(int fd, const char *limit, unsigned max)
{
    char buf[256];
    int n = snprintf(buf, sizeof(buf),
                     "{\"error\":\"" RT_VL_INTERFACE ".LimitExceeded\",\"parameters\":{\"limit\":\"%s\",\"max\":%u}}",
                     limit, max);
    if (n > 0 && send(fd, buf, (size_t)n + 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        rt_debug("refused client did not take the error: %s", strerror(errno));
    close(fd);
}

/* One notice a second for what a user can make happen again and again
 * (drops, evictions); true when this one is logged, with *skipped since. */
static bool notice_due(struct rt_server *srv, unsigned *skipped)
{
    uint64_t now = rt_mono_ns();
    if (now - srv->drop_logged_ns < RT_NSEC_PER_SEC) {
        srv->drops_unlogged++;
        return false;
    }
    *skipped = srv->drops_unlogged;
    srv->drop_logged_ns = now;
    srv->drops_unlogged = 0;
    return true;
}

/* The connection of u to close for another user: its oldest idle one (no
 * call, nothing unsent or unread, as the idle timeout would close it), else
 * its oldest. */
static struct rt_conn *eviction_victim(struct rt_server *srv, const struct rt_budget_user *u)
{
    struct rt_conn *idle = NULL, *any = NULL;
    for (struct rt_conn *c = srv->conns; c; c = c->next) {
        if (c->user != u || c->peer.admin)
            continue;
        bool is_idle = c->phase == RT_CONN_READING && !c->queued && !c->blocked && !c->gone &&
                       !rt_vl_reader_pending(&c->rd) && !rt_conn_pending(c);
        if (is_idle && (!idle || c->active_ns < idle->active_ns))
            idle = c;
        if (!any || c->active_ns < any->active_ns)
            any = c;
    }
    return idle ? idle : any;
}

/* The pool open to all users is full and uid (holding u's connections, or
 * none) asks for one: each user is guaranteed an even share of the pool
 * (open_to_all over the users holding some, the newcomer included), so one
 * below it gets in at the cost of the user holding most, when that is above
 * its share. True when a connection was closed for it. */
static bool make_room(struct rt_server *srv, uid_t uid, const struct rt_budget_user *u, unsigned open_to_all)
{
    unsigned users = u && u->shared ? 0 : 1;
    struct rt_budget_user *most = NULL;
    for (size_t i = 0; i < srv->budget.n; i++) {
        struct rt_budget_user *o = srv->budget.v[i];
        users += o->shared > 0;
        if (!most || o->shared > most->shared)
            most = o;
    }
    unsigned share = open_to_all / users, mine = u ? u->shared : 0;
    if (mine >= share || !most || most->shared <= share)
        return false;
    struct rt_conn *c = eviction_victim(srv, most);
    if (!c)
        return false;
    unsigned skipped;
    if (notice_due(srv, &skipped))
        rt_notice("closing a connection of uid %u (pid %d) for uid %u: all %u connections open to users are "
                  "taken, and uid %u holds %u, above an even share of %u; %u more closed or dropped since the "
                  "last notice",
                  (unsigned)c->peer.uid, (int)c->peer.pid, (unsigned)uid, open_to_all, (unsigned)most->uid,
                  most->shared, share, skipped);
    conn_close(srv, c);
    return true;
}

static void accept_all(struct rt_server *srv)
{
    for (;;) {
        int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                accept_pause(srv, errno);
            else if (errno == EAGAIN || errno == EWOULDBLOCK)
                srv->accept_warned = false; /* every waiting client got in: the shortage is over */
            else
                rt_warn("accept: %s", strerror(errno));
            return;
        }
        struct ucred cred;
        socklen_t len = sizeof(cred);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
            close(fd);
            continue;
        }
        const struct rt_config *cfg = &srv->d->cfg;
        bool admin = peer_is_admin(srv, fd, cred.uid, cred.gid);
        struct rt_budget_user *u = rt_budget_find(&srv->budget, cred.uid);
        if (cred.uid != 0 && u && u->conns >= cfg->max_connections_per_uid) {
            rt_log_user(cred.uid, LOG_NOTICE, "refusing a client of uid %u: %u connections open", (unsigned)cred.uid,
                   cfg->max_connections_per_uid);
            refuse(fd, "connections_per_user", cfg->max_connections_per_uid);
            continue;
        }
        /* Other users together may hold all but reserved_connections: they
         * cannot lock root and the admin group out. */
        unsigned open_to_all = cfg->max_connections - cfg->reserved_connections;
        bool full = srv->nconns >= cfg->max_connections || (!admin && srv->nconns - srv->nadmin >= open_to_all);
        if (full && (admin || !make_room(srv, cred.uid, u, open_to_all))) {
            unsigned max = admin ? cfg->max_connections : open_to_all;
            rt_log_user(cred.uid, LOG_NOTICE, "refusing a client of uid %u: %zu connections open", (unsigned)cred.uid,
                   srv->nconns);
            refuse(fd, "connections", max);
            continue;
        }
        struct rt_conn *c = rt_xcalloc(1, sizeof(*c));
        c->id = ++srv->next_id;
        c->fd = fd;
        c->peer = (struct rt_peer){.uid = cred.uid, .gid = cred.gid, .pid = cred.pid, .admin = admin};
        c->phase = RT_CONN_READING;
        c->epoll_events = EPOLLIN;
        c->active_ns = c->sent_ns = c->input_ns = rt_mono_ns();
        struct epoll_event ev = {.events = c->epoll_events, .data.ptr = c};
        if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
            rt_warn("cannot watch a new client: %s", strerror(errno));
            close(fd);
            free(c);
            continue;
        }
        c->user = rt_budget_join(&srv->budget, cred.uid);
        c->user->shared += !admin;
        rt_vl_reader_init(&c->rd, cfg->max_message_bytes);
        rt_vl_writer_init(&c->wr);
        c->next = srv->conns;
        if (srv->conns)
            srv->conns->prev = c;
        srv->conns = c;
        srv->nconns++;
        srv->nadmin += admin;
    }
}

/* One recvmsg: bytes, 0 at EOF, or -errno. Descriptors beyond what a
 * connection may hold are closed. */
static ssize_t conn_recv(struct rt_conn *c)
{
    int fds[RT_CONN_MAX_FDS];
    size_t nfds;
    uint64_t at;
    bool empty = rt_vl_reader_pending(&c->rd) == 0;
    ssize_t n = rt_vl_reader_recv(&c->rd, c->fd, fds, RT_CONN_MAX_FDS, &nfds, &at);
    for (size_t i = 0; i < nfds; i++) {
        if (c->nfds < RT_CONN_MAX_FDS) {
            c->fds[c->nfds].fd = fds[i];
            c->fds[c->nfds++].at = at;
        } else {
            close(fds[i]);
        }
    }
    if (n > 0) {
        c->active_ns = rt_mono_ns();
        if (empty)
            c->input_ns = c->active_ns;
    }
    return n;
}

/* One read, then a turn. The next read waits until the calls read have all
 * been served: a client cannot make the daemon buffer its input. */
static void conn_readable(struct rt_server *srv, struct rt_conn *c)
{
    bool serving = !c->queued && !c->blocked;
    if (c->phase == RT_CONN_READING && serving && !c->input_ended) {
        ssize_t n = conn_recv(c);
        if (n == 0)
            c->input_ended = true; /* answer what it sent, then hang up */
        else if (n < 0 && n != -EAGAIN && n != -EINTR) {
            conn_close(srv, c);
            return;
        }
    }
    if (serving)
        serve_input(srv, c);
    rt_conn_flush(srv, c);
}

void rt_server_event(struct rt_server *srv, void *tag, uint32_t events)
{
    srv->due_known = false;
    if (tag == &srv->listen_tag) {
        accept_all(srv);
        return;
    }
    struct rt_conn *c = tag;
    if (c->phase == RT_CONN_DEAD)
        return; /* closed earlier in this batch */
    uint64_t now = rt_mono_ns();
    if (!srv->batch_ns)
        srv->batch_ns = now;
    else if (events == EPOLLOUT && now - srv->batch_ns > OUTPUT_SLICE_NS)
        return; /* level-triggered: reported again by the next epoll_wait() */
    if (events & EPOLLERR) {
        conn_close(srv, c);
        return;
    }
    if (events & EPOLLHUP) {
        /* The client closed. While it waits for a call or a stream, nobody
         * gets the replies: hang up. Calls it sent before are still served. */
        if (c->phase != RT_CONN_READING) {
            conn_close(srv, c);
            return;
        }
        conn_gone(c);
    }
    if (events & EPOLLOUT) {
        if (!rt_conn_flush(srv, c))
            return;
        if (stream_wants_output(c) && rt_conn_pending(c) == 0) {
            c->stream->ops->pump(srv, c);
            if (!rt_conn_flush(srv, c))
                return;
        }
    }
    if (events & (EPOLLIN | EPOLLHUP))
        conn_readable(srv, c);
}

/* The connection of u whose buffers hold most. */
static struct rt_conn *largest(struct rt_server *srv, const struct rt_budget_user *u)
{
    struct rt_conn *big = NULL;
    for (struct rt_conn *c = srv->conns; c; c = c->next)
        if (c->user == u && (!big || c->held > big->held))
            big = c;
    return big;
}

/* Users above their share, or all together above the total, lose their
 * largest connections: a client that does not read, or one that sends
 * messages it does not finish, and not the daemon's memory. */
static void enforce_budget(struct rt_server *srv)
{
    const struct rt_config *cfg = &srv->d->cfg;
    struct rt_budget_user *u;
    while ((u = rt_budget_over(&srv->budget, cfg->max_buffer_per_uid, cfg->max_buffer_total))) {
        struct rt_conn *c = largest(srv, u);
        if (!c)
            break;
        /* A client that reconnects at once could fill the journal. */
        unsigned skipped;
        if (notice_due(srv, &skipped)) {
            bool mine = u->held > cfg->max_buffer_per_uid;
            rt_notice("dropping client (uid %u, pid %d): it holds %zu bytes of unread replies and input; the "
                      "connections of uid %u hold %zu bytes (%s %zu); %u more dropped since the last notice",
                      (unsigned)c->peer.uid, (int)c->peer.pid, c->held, (unsigned)u->uid, u->held,
                      mine ? "limits.max_buffer_per_user" : "all users hold",
                      mine ? cfg->max_buffer_per_uid : srv->budget.held, skipped);
        }
        conn_close(srv, c);
    }
}

bool rt_server_settle(struct rt_server *srv)
{
    if (srv->queue)
        srv->due_known = false;
    enforce_budget(srv);
    /* Turns in order of arrival; one round at most, and stop when the time
     * is up so that new events (another client's call) are not held up. */
    uint64_t t0 = rt_mono_ns();
    struct rt_conn *last = srv->queue_tail;
    while (srv->queue) {
        struct rt_conn *c = srv->queue;
        bool end = c == last;
        serve_input(srv, c);
        rt_conn_flush(srv, c);
        if (end || rt_mono_ns() - t0 > SETTLE_NS)
            break;
    }
    enforce_budget(srv);
    reap(srv);
    srv->batch_ns = 0;
    return srv->queue != NULL;
}

/* Stalled connections: no reply read for reply_timeout, a message begun
 * and not finished for message_timeout, nothing at all for idle_timeout. */
enum stall { STALL_NONE, STALL_REPLY, STALL_MESSAGE, STALL_IDLE };

static uint64_t after(uint64_t since_ns, unsigned secs) { return since_ns + secs * RT_NSEC_PER_SEC; }

/* The first limit c has passed at now, in that order; *due is lowered to
 * the first moment one it is subject to is passed. */
static enum stall stalled(const struct rt_config *cfg, const struct rt_conn *c, uint64_t now, uint64_t *due)
{
    size_t out = rt_conn_pending(c), in = rt_vl_reader_pending(&c->rd);
    bool reading = c->phase == RT_CONN_READING && !c->queued && !c->blocked;
    uint64_t limit[] = {
        [STALL_NONE] = UINT64_MAX,
        [STALL_REPLY] = out ? after(c->sent_ns, cfg->reply_timeout_secs) : UINT64_MAX,
        [STALL_MESSAGE] = reading && in && !c->input_ended ? after(c->input_ns, cfg->message_timeout_secs)
                                                            : UINT64_MAX,
        [STALL_IDLE] = reading && !in && !out ? after(c->active_ns, cfg->idle_timeout_secs) : UINT64_MAX,
    };
    enum stall first = STALL_NONE;
    for (enum stall k = STALL_REPLY; k <= STALL_IDLE; k++) {
        if (limit[k] == UINT64_MAX)
            continue;
        if (limit[k] + 1 < *due)
            *due = limit[k] + 1;
        if (!first && now > limit[k])
            first = k;
    }
    return first;
}

/* The earliest moment rt_server_tick has work: a limit passed, or a second
 * after the last tick while a connection holds output (a shared reply's
 * share in the budget changes as the others send it; see account()), or
 * while accepting waits for a descriptor. */
static uint64_t due(struct rt_server *srv)
{
    uint64_t at = srv->accept_paused ? srv->ticked_ns + RT_NSEC_PER_SEC : UINT64_MAX;
    for (const struct rt_conn *c = srv->conns; c; c = c->next) {
        if (rt_conn_pending(c) && srv->ticked_ns + RT_NSEC_PER_SEC < at)
            at = srv->ticked_ns + RT_NSEC_PER_SEC;
        stalled(&srv->d->cfg, c, 0, &at);
    }
    srv->due_ns = at;
    srv->due_known = true;
    return at;
}

uint64_t rt_server_due(struct rt_server *srv) { return srv->due_known ? srv->due_ns : due(srv); }

uint64_t rt_server_tick(struct rt_server *srv)
{
    const struct rt_config *cfg = &srv->d->cfg;
    uint64_t now = srv->ticked_ns = rt_mono_ns(), ignored = UINT64_MAX;
    for (struct rt_conn *c = srv->conns, *cn; c; c = cn) {
        cn = c->next;
        account(srv, c);
        switch (stalled(cfg, c, now, &ignored)) {
        case STALL_REPLY:
            rt_log_user(c->peer.uid, LOG_NOTICE,
                        "dropping client (uid %u, pid %d): it read none of its replies for %u s (%zu bytes unread)",
                        (unsigned)c->peer.uid, (int)c->peer.pid, cfg->reply_timeout_secs, rt_conn_pending(c));
            conn_close(srv, c);
            break;
        case STALL_MESSAGE: {
            char reason[96];
            snprintf(reason, sizeof(reason), "message not completed within %u s", cfg->message_timeout_secs);
            rt_log_user(c->peer.uid, LOG_INFO, "closing a client (uid %u, pid %d): %s", (unsigned)c->peer.uid,
                        (int)c->peer.pid, reason);
            protocol_error(srv, c, reason);
            rt_conn_flush(srv, c);
            break;
        }
        case STALL_IDLE:
            rt_debug("closing a client (uid %u, pid %d): idle for %u s", (unsigned)c->peer.uid, (int)c->peer.pid,
                     cfg->idle_timeout_secs);
            conn_close(srv, c);
            break;
        case STALL_NONE:
            break;
        }
    }
    return due(srv);
}

bool rt_server_streaming(const struct rt_server *srv)
{
    for (const struct rt_conn *c = srv->conns; c; c = c->next)
        if (c->phase == RT_CONN_STREAMING)
            return true;
    return false;
}

void rt_server_sampler_events(struct rt_server *srv, struct rt_sevt *list)
{
    srv->due_known = false;
    accept_resume(srv);
    if (list)
        rt_api_jobs_changed();
    for (struct rt_sevt *e = list; e;) {
        struct rt_sevt *next = e->next;
        if (e->type == RT_SEVT_REQ_DONE) {
            uint64_t id = e->req->conn_id;
            rt_job_methods_request_done(srv, e->req);
            struct rt_conn *c = rt_server_find_conn(srv, id);
            if (c)
                rt_conn_flush(srv, c);
        } else {
            for (struct rt_conn *c = srv->conns; c; c = c->next) {
                if (c->phase == RT_CONN_STREAMING && c->stream->ops->event) {
                    c->stream->ops->event(srv, c, e);
                    c->notified = true;
                }
            }
        }
        rt_sevt_free(e);
        e = next;
    }
    /* Once per connection, not once per event (a tick of 300 jobs brings 301). */
    for (struct rt_conn *c = srv->conns, *cn; c; c = cn) {
        cn = c->next;
        if (c->notified) {
            c->notified = false;
            rt_conn_flush(srv, c);
        }
    }
}
