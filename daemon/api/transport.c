#include "api/transport.h"

#include "api/api.h"
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

/* A client that lets this much output pile up is too slow: drop it. */
#define MAX_PENDING_OUTPUT (16u * 1024 * 1024)

struct uid_count {
    uid_t uid;
    unsigned n;
};

struct rt_server {
    struct rt_daemon *d;
    int listen_fd, epfd;
    struct rt_conn *conns;
    struct rt_conn *closed;  /* closed this batch, freed by rt_server_reap() */
    size_t nconns;
    struct uid_count *uids;
    size_t nuids;
    uint64_t next_id;
    int listen_tag;
    bool accept_paused;     /* out of descriptors: listen fd not watched */
    bool accept_warned;     /* this shortage has been logged */
};

struct rt_daemon *rt_server_daemon(struct rt_server *srv) { return srv->d; }
size_t rt_server_connections(struct rt_server *srv) { return srv->nconns; }

static unsigned *uid_slot(struct rt_server *srv, uid_t uid, bool create)
{
    for (size_t i = 0; i < srv->nuids; i++)
        if (srv->uids[i].uid == uid)
            return &srv->uids[i].n;
    if (!create)
        return NULL;
    srv->uids = rt_xrealloc(srv->uids, (srv->nuids + 1) * sizeof(*srv->uids));
    srv->uids[srv->nuids] = (struct uid_count){uid, 0};
    return &srv->uids[srv->nuids++].n;
}

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
    free(c->stream);
    c->stream = NULL;
}

static void conn_close(struct rt_server *srv, struct rt_conn *c)
{
    epoll_ctl(srv->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    unsigned *n = uid_slot(srv, c->peer.uid, false);
    if (n && *n)
        (*n)--;
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    srv->nconns--;
    rt_vl_reader_free(&c->rd);
    rt_vl_writer_free(&c->wr);
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

void rt_server_reap(struct rt_server *srv)
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
    rt_server_reap(srv);
    epoll_ctl(srv->epfd, EPOLL_CTL_DEL, srv->listen_fd, NULL);
    free(srv->uids);
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
    if (c->phase == RT_CONN_READING && !c->input_ended)
        ev |= EPOLLIN;
    /* A stream paging through stored data is pumped on EPOLLOUT, also when
     * a flush drained everything it had queued. */
    if (rt_vl_writer_pending(&c->wr) || stream_wants_output(c))
        ev |= EPOLLOUT;
    if (ev == c->epoll_events)
        return;
    struct epoll_event e = {.events = ev, .data.ptr = c};
    if (epoll_ctl(srv->epfd, EPOLL_CTL_MOD, c->fd, &e) < 0)
        rt_warn("cannot watch a client: %s", strerror(errno));
    c->epoll_events = ev;
}

bool rt_conn_flush(struct rt_server *srv, struct rt_conn *c)
{
    int r = rt_vl_writer_flush(&c->wr, c->fd);
    bool finished = c->phase == RT_CONN_CLOSING || (c->phase == RT_CONN_READING && c->input_ended);
    if (r < 0 || (r == 0 && finished)) {
        conn_close(srv, c);
        return false;
    }
    if (rt_vl_writer_pending(&c->wr) > MAX_PENDING_OUTPUT) {
        rt_notice("dropping client (uid %u, pid %d): it does not read its replies (%zu bytes unread)",
                  (unsigned)c->peer.uid, (int)c->peer.pid, rt_vl_writer_pending(&c->wr));
        conn_close(srv, c);
        return false;
    }
    update_interest(srv, c);
    return true;
}

size_t rt_conn_pending(const struct rt_conn *c)
{
    return rt_vl_writer_pending(&c->wr);
}

void rt_conn_send_raw(struct rt_server *srv, struct rt_conn *c, const char *json, size_t len)
{
    (void)srv;
    if (!c->oneway)
        rt_vl_writer_put_raw(&c->wr, json, len);
}

void rt_conn_reply(struct rt_server *srv, struct rt_conn *c, struct json_object *params, bool continues)
{
    (void)srv;
    if (c->oneway) {
        json_object_put(params);
        return;
    }
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
    if (c->oneway) {
        json_object_put(params);
        return;
    }
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

static void serve_input(struct rt_server *srv, struct rt_conn *c)
{
    /* A handler that completes its call at once (a stream that ends inside
     * GetJobSamples) comes back here through rt_conn_done(): let this loop
     * carry on instead of recursing once per pipelined call. */
    if (c->in_dispatch)
        return;
    c->in_dispatch = true;
    /* Pipelined calls whose replies are not read stop here, so the backlog
     * exceeds the limit by one reply at most before rt_conn_flush() drops
     * the client. */
    while (c->phase == RT_CONN_READING && rt_vl_writer_pending(&c->wr) <= MAX_PENDING_OUTPUT) {
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
    /* No flush here: it may close (and free) c, which callers still use. */
    serve_input(srv, c);
}

static bool peer_is_admin(struct rt_server *srv, int fd, uid_t uid, gid_t gid)
{
    if (uid == 0)
        return true;
    if (!srv->d->has_admin_gid)
        return false;
    if (gid == srv->d->admin_gid)
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
        found = groups[i] == srv->d->admin_gid;
    if (groups != small)
        free(groups);
    return found;
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
        if (srv->nconns >= cfg->max_connections) {
            rt_log(LOG_NOTICE, "refusing a client: %u connections open", cfg->max_connections);
            refuse(fd, "connections", cfg->max_connections);
            continue;
        }
        unsigned *per_uid = uid_slot(srv, cred.uid, true);
        if (cred.uid != 0 && *per_uid >= cfg->max_connections_per_uid) {
            rt_log(LOG_NOTICE, "refusing a client of uid %u: %u connections open", (unsigned)cred.uid,
                   cfg->max_connections_per_uid);
            refuse(fd, "connections_per_user", cfg->max_connections_per_uid);
            continue;
        }
        struct rt_conn *c = rt_xcalloc(1, sizeof(*c));
        c->id = ++srv->next_id;
        c->fd = fd;
        c->peer = (struct rt_peer){.uid = cred.uid, .gid = cred.gid, .pid = cred.pid,
                                   .admin = peer_is_admin(srv, fd, cred.uid, cred.gid)};
        c->phase = RT_CONN_READING;
        c->epoll_events = EPOLLIN;
        struct epoll_event ev = {.events = c->epoll_events, .data.ptr = c};
        if (epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
            rt_warn("cannot watch a new client: %s", strerror(errno));
            close(fd);
            free(c);
            continue;
        }
        (*per_uid)++;
        rt_vl_reader_init(&c->rd, cfg->max_message_bytes);
        rt_vl_writer_init(&c->wr);
        c->next = srv->conns;
        if (srv->conns)
            srv->conns->prev = c;
        srv->conns = c;
        srv->nconns++;
    }
}

/* One recvmsg: bytes, 0 at EOF, or -errno. Descriptors beyond what a
 * connection may hold are closed. */
static ssize_t conn_recv(struct rt_conn *c)
{
    int fds[RT_CONN_MAX_FDS];
    size_t nfds;
    uint64_t at;
    ssize_t n = rt_vl_reader_recv(&c->rd, c->fd, fds, RT_CONN_MAX_FDS, &nfds, &at);
    for (size_t i = 0; i < nfds; i++) {
        if (c->nfds < RT_CONN_MAX_FDS) {
            c->fds[c->nfds].fd = fds[i];
            c->fds[c->nfds++].at = at;
        } else {
            close(fds[i]);
        }
    }
    return n;
}

static void conn_readable(struct rt_server *srv, struct rt_conn *c)
{
    for (int rounds = 0; rounds < 16 && c->phase == RT_CONN_READING &&
                         rt_vl_writer_pending(&c->wr) <= MAX_PENDING_OUTPUT;
         rounds++) {
        ssize_t n = conn_recv(c);
        if (n == -EAGAIN || n == -EINTR)
            break;
        if (n < 0) {
            conn_close(srv, c);
            return;
        }
        if (n == 0) {
            /* The client finished sending: answer what it sent, then hang up. */
            c->input_ended = true;
            serve_input(srv, c);
            break;
        }
        serve_input(srv, c);
    }
    rt_conn_flush(srv, c);
}

void rt_server_event(struct rt_server *srv, void *tag, uint32_t events)
{
    if (tag == &srv->listen_tag) {
        accept_all(srv);
        return;
    }
    struct rt_conn *c = tag;
    if (c->phase == RT_CONN_DEAD)
        return; /* closed earlier in this batch */
    if (events & EPOLLERR) {
        conn_close(srv, c);
        return;
    }
    if (events & EPOLLOUT) {
        if (!rt_conn_flush(srv, c))
            return;
        if (stream_wants_output(c) && rt_vl_writer_pending(&c->wr) == 0) {
            c->stream->ops->pump(srv, c);
            if (!rt_conn_flush(srv, c))
                return;
        }
    }
    if (events & EPOLLIN) {
        /* Calls sent before a close are still served (oneway ones matter). */
        conn_readable(srv, c);
        return;
    }
    if (events & EPOLLHUP) {
        /* Gone for good while we were not reading: nobody gets the replies. */
        conn_close(srv, c);
    }
}

void rt_server_sampler_events(struct rt_server *srv, struct rt_sevt *list)
{
    accept_resume(srv);
    for (struct rt_sevt *e = list; e;) {
        struct rt_sevt *next = e->next;
        if (e->type == RT_SEVT_REQ_DONE) {
            uint64_t id = e->req->conn_id;
            rt_job_methods_request_done(srv, e->req);
            struct rt_conn *c = rt_server_find_conn(srv, id);
            if (c)
                rt_conn_flush(srv, c);
        } else {
            for (struct rt_conn *c = srv->conns, *cn; c; c = cn) {
                cn = c->next;
                if (c->phase == RT_CONN_STREAMING && c->stream->ops->event) {
                    c->stream->ops->event(srv, c, e);
                    rt_conn_flush(srv, c);
                }
            }
        }
        rt_sevt_free(e);
        e = next;
    }
}
