#include "api/server.h"

#include "system/log.h"
#include "rt/json.h"
#include "rt/util.h"

#include <errno.h>
#include <grp.h>
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
    epoll_ctl(epfd, EPOLL_CTL_ADD, listen_fd, &ev);
    return srv;
}

/* accept() failing for lack of descriptors would keep the level-triggered
 * listening socket readable and spin the loop: stop watching it until a
 * connection closes or the next sampler event (each tick). */
static void accept_pause(struct rt_server *srv, int err)
{
    if (!srv->accept_warned)
        rt_warn("cannot accept clients: %s; retrying when a descriptor is free", strerror(err));
    srv->accept_warned = true;
    if (srv->accept_paused)
        return;
    struct epoll_event ev = {.events = 0, .data.ptr = &srv->listen_tag};
    epoll_ctl(srv->epfd, EPOLL_CTL_MOD, srv->listen_fd, &ev);
    srv->accept_paused = true;
}

static void accept_resume(struct rt_server *srv)
{
    if (!srv->accept_paused)
        return;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &srv->listen_tag};
    epoll_ctl(srv->epfd, EPOLL_CTL_MOD, srv->listen_fd, &ev);
    srv->accept_paused = false;
}

static void conn_close(struct rt_server *srv, struct rt_conn *c)
{
    epoll_ctl(srv->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    unsigned *n = uid_slot(srv, c->uid, false);
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
    /* Not freed yet: the current epoll batch may hold more events for it. */
    c->dead = true;
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

bool rt_server_owns(struct rt_server *srv, void *tag)
{
    if (tag == &srv->listen_tag)
        return true;
    for (struct rt_conn *c = srv->conns; c; c = c->next)
        if (tag == c)
            return true;
    return false;
}

struct rt_conn *rt_server_find_conn(struct rt_server *srv, uint64_t id)
{
    for (struct rt_conn *c = srv->conns; c; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

static void update_interest(struct rt_server *srv, struct rt_conn *c)
{
    /* While a call is in progress, stop reading further calls (they would
     * only pile up). A client that goes away entirely still shows up as
     * EPOLLHUP; one that only shut down its sending side (SHUT_WR) waits for
     * its replies and is noticed at EOF, once reading resumes. */
    uint32_t ev = 0;
    if (!c->busy && !c->closing && !c->eof)
        ev |= EPOLLIN;
    /* A job stream still paging through stored samples is pumped on
     * EPOLLOUT, also when a flush drained everything it had queued. */
    if (rt_vl_writer_pending(&c->wr) || (c->stream == RT_STREAM_JOB && !c->stream_waiting))
        ev |= EPOLLOUT;
    if (ev == c->epoll_events)
        return;
    struct epoll_event e = {.events = ev, .data.ptr = c};
    epoll_ctl(srv->epfd, EPOLL_CTL_MOD, c->fd, &e);
    c->epoll_events = ev;
}

/* Flush output; false when the connection was closed. */
static bool conn_flush(struct rt_server *srv, struct rt_conn *c)
{
    int r = rt_vl_writer_flush(&c->wr, c->fd);
    if (r < 0 || (r == 0 && (c->closing || c->eof) && !c->busy)) {
        conn_close(srv, c);
        return false;
    }
    if (rt_vl_writer_pending(&c->wr) > MAX_PENDING_OUTPUT) {
        rt_notice("dropping client (uid %u, pid %d): it does not read its replies (%zu bytes unread)",
                  (unsigned)c->uid, (int)c->pid, rt_vl_writer_pending(&c->wr));
        conn_close(srv, c);
        return false;
    }
    update_interest(srv, c);
    return true;
}

size_t rt_conn_pending(struct rt_server *srv, struct rt_conn *c)
{
    (void)srv;
    return rt_vl_writer_pending(&c->wr);
}

void rt_conn_send_raw(struct rt_server *srv, struct rt_conn *c, const char *json, size_t len)
{
    (void)srv;
    rt_vl_writer_put_raw(&c->wr, json, len);
}

void rt_conn_reply(struct rt_server *srv, struct rt_conn *c, struct json_object *params, bool continues)
{
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
    (void)srv;
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

void rt_call_reply(struct rt_call *c, struct json_object *params)
{
    rt_conn_reply(c->srv, c->conn, params, false);
}

void rt_call_reply_more(struct rt_call *c, struct json_object *params, bool continues)
{
    rt_conn_reply(c->srv, c->conn, params, continues);
}

void rt_call_error(struct rt_call *c, const char *error, struct json_object *params)
{
    rt_conn_error(c->srv, c->conn, error, params);
}

void rt_call_invalid_param(struct rt_call *c, const char *name)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "parameter", json_object_new_string(name));
    rt_call_error(c, "org.varlink.service.InvalidParameter", p);
}

/* Protocol violation: answer once and hang up (the stream may be out of sync). */
static void protocol_error(struct rt_server *srv, struct rt_conn *c, const char *reason)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "reason", json_object_new_string(reason));
    c->oneway = false;
    rt_conn_error(srv, c, RT_VL_INTERFACE ".InvalidRequest", p);
    c->closing = true;
    c->busy = false;
}

static void dispatch(struct rt_server *srv, struct rt_conn *c, const char *msg, size_t len)
{
    char err[160];
    struct json_object *o = rt_vl_parse_strict(msg, len, err, sizeof(err));
    if (!o) {
        protocol_error(srv, c, err);
        return;
    }
    struct json_object *m = NULL, *params = NULL, *v;
    bool more = false, oneway = false, upgrade = false, bad = false;
    json_object_object_get_ex(o, "method", &m);
    if (json_object_object_get_ex(o, "parameters", &params) && params &&
        !json_object_is_type(params, json_type_object))
        bad = true;
    if (json_object_object_get_ex(o, "more", &v) && v) {
        bad |= !json_object_is_type(v, json_type_boolean);
        more = json_object_get_boolean(v);
    }
    if (json_object_object_get_ex(o, "oneway", &v) && v) {
        bad |= !json_object_is_type(v, json_type_boolean);
        oneway = json_object_get_boolean(v);
    }
    if (json_object_object_get_ex(o, "upgrade", &v) && v) {
        bad |= !json_object_is_type(v, json_type_boolean);
        upgrade = json_object_get_boolean(v);
    }
    if (!m || !json_object_is_type(m, json_type_string) || bad) {
        json_object_put(o);
        protocol_error(srv, c, "a call needs a string \"method\", an object \"parameters\" and boolean flags");
        return;
    }
    const char *method = json_object_get_string(m);
    const char *dot = strrchr(method, '.');
    c->more = more;
    c->oneway = oneway && !more;
    if (!dot || dot == method || !dot[1] || strlen(method) != (size_t)json_object_get_string_len(m)) {
        json_object_put(o);
        protocol_error(srv, c, "method must be interface.Method");
        return;
    }
    char iface[256];
    size_t ilen = (size_t)(dot - method);
    if (ilen >= sizeof(iface)) {
        json_object_put(o);
        protocol_error(srv, c, "interface name too long");
        return;
    }
    memcpy(iface, method, ilen);
    iface[ilen] = '\0';
    struct json_object *empty = NULL;
    if (!params)
        params = empty = json_object_new_object();
    struct rt_call call = {.srv = srv, .conn = c, .method = dot + 1, .params = params,
                           .more = more, .oneway = c->oneway};
    if (upgrade)
        rt_call_invalid_param(&call, "upgrade");
    else
        rt_methods_dispatch(&call, iface);
    json_object_put(empty);
    json_object_put(o);
}

static void process_input(struct rt_server *srv, struct rt_conn *c)
{
    /* A handler that completes its call at once (a stream that ends inside
     * GetJobSamples) comes back here through rt_conn_done(): let this loop
     * carry on instead of recursing once per pipelined call. */
    if (c->dispatching)
        return;
    c->dispatching = true;
    /* Pipelined calls whose replies are not read stop here, so the backlog
     * exceeds the limit by one reply at most before conn_flush() drops the
     * client. */
    while (!c->busy && !c->closing && rt_vl_writer_pending(&c->wr) <= MAX_PENDING_OUTPUT) {
        char *msg;
        size_t len;
        int r = rt_vl_reader_next(&c->rd, &msg, &len);
        if (r == 0)
            break;
        if (r < 0) {
            char reason[96];
            snprintf(reason, sizeof(reason), "message longer than %zu bytes", c->rd.max);
            protocol_error(srv, c, reason);
            break;
        }
        dispatch(srv, c, msg, len);
    }
    c->dispatching = false;
}

void rt_conn_done(struct rt_server *srv, struct rt_conn *c)
{
    c->busy = false;
    c->stream = RT_STREAM_NONE;
    c->stream_waiting = false;
    c->more = c->oneway = false;
    /* No flush here: it may close (and free) c, which callers still use. */
    process_input(srv, c);
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
        (*per_uid)++;
        struct rt_conn *c = rt_xcalloc(1, sizeof(*c));
        c->id = ++srv->next_id;
        c->fd = fd;
        c->uid = cred.uid;
        c->gid = cred.gid;
        c->pid = cred.pid;
        c->admin = peer_is_admin(srv, fd, cred.uid, cred.gid);
        rt_vl_reader_init(&c->rd, cfg->max_message_bytes);
        rt_vl_writer_init(&c->wr);
        c->next = srv->conns;
        if (srv->conns)
            srv->conns->prev = c;
        srv->conns = c;
        srv->nconns++;
        c->epoll_events = EPOLLIN;
        struct epoll_event ev = {.events = c->epoll_events, .data.ptr = c};
        epoll_ctl(srv->epfd, EPOLL_CTL_ADD, fd, &ev);
    }
}

static void conn_readable(struct rt_server *srv, struct rt_conn *c)
{
    for (int rounds = 0; rounds < 16 && !c->busy && !c->closing &&
                         rt_vl_writer_pending(&c->wr) <= MAX_PENDING_OUTPUT;
         rounds++) {
        ssize_t n = rt_vl_reader_fill(&c->rd, c->fd);
        if (n == -EAGAIN || n == -EINTR)
            break;
        if (n < 0) {
            conn_close(srv, c);
            return;
        }
        if (n == 0) {
            /* The client finished sending: answer what it sent, then hang up. */
            c->eof = true;
            process_input(srv, c);
            break;
        }
        process_input(srv, c);
    }
    conn_flush(srv, c);
}

void rt_server_event(struct rt_server *srv, void *tag, uint32_t events)
{
    if (tag == &srv->listen_tag) {
        accept_all(srv);
        return;
    }
    struct rt_conn *c = tag;
    if (c->dead)
        return; /* closed earlier in this batch */
    if (events & EPOLLERR) {
        conn_close(srv, c);
        return;
    }
    if (events & EPOLLOUT) {
        if (!conn_flush(srv, c))
            return;
        if (c->stream == RT_STREAM_JOB && !c->stream_waiting && rt_vl_writer_pending(&c->wr) == 0) {
            rt_stream_pump(srv, c);
            if (!conn_flush(srv, c))
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
            rt_methods_request_done(srv, e->req);
            struct rt_conn *c = rt_server_find_conn(srv, id);
            if (c)
                conn_flush(srv, c);
        } else {
            for (struct rt_conn *c = srv->conns, *cn; c; c = cn) {
                cn = c->next;
                if (e->type == RT_SEVT_HOST && c->stream == RT_STREAM_HOST) {
                    static const char pre[] = "{\"parameters\":{\"sample\":";
                    static const char post[] = "},\"continues\":true}";
                    size_t len = sizeof(pre) - 1 + e->json->len + sizeof(post) - 1;
                    char *buf = rt_xmalloc(len + 1);
                    memcpy(buf, pre, sizeof(pre) - 1);
                    memcpy(buf + sizeof(pre) - 1, e->json->data, e->json->len);
                    memcpy(buf + sizeof(pre) - 1 + e->json->len, post, sizeof(post));
                    rt_vl_writer_put_raw(&c->wr, buf, len);
                    free(buf);
                    conn_flush(srv, c);
                } else if (c->stream == RT_STREAM_JOB && c->stream_job == e->job_id) {
                    rt_stream_live(srv, c, e);
                    conn_flush(srv, c);
                }
            }
        }
        rt_sevt_free(e);
        e = next;
    }
}
