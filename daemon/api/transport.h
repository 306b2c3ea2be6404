/* Connections on the control socket: framing, ordered replies, back-pressure,
 * limits, descriptors passed with calls. A connection serves one call at a
 * time; its phase says what it is doing. Calls are served in turns, so that
 * a client that pipelines many cannot hold up the others; what a user's
 * connections hold is counted (api/budget.h); connections that stall are
 * timed out (rt_server_tick). Main thread only. */
#ifndef RT_API_TRANSPORT_H
#define RT_API_TRANSPORT_H

#include "api/shared_reply.h"
#include "rt/varlink.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct rt_budget_user;
struct rt_daemon;
struct rt_server;
struct rt_stream;

enum rt_conn_phase {
    RT_CONN_READING,   /* between calls: reads and serves the next one */
    RT_CONN_WAITING,   /* a call waits for the sampler's answer */
    RT_CONN_STREAMING, /* a call's replies continue (conn->stream) */
    RT_CONN_CLOSING,   /* sends what is queued, then closes */
    RT_CONN_DEAD,      /* closed; freed by rt_server_reap() */
};

/* Who is calling, from SO_PEERCRED and SO_PEERGROUPS at connect(). */
struct rt_peer {
    uid_t uid;
    gid_t gid;
    pid_t pid;
    bool admin;
};

/* Whether the peer of a connection is in a group: its primary gid, or a
 * supplementary group as of connect() (SO_PEERGROUPS). */
bool rt_peer_in_group(int fd, gid_t primary, gid_t group);

/* Descriptors received and not yet handed to a call. */
#define RT_CONN_MAX_FDS 8

struct rt_conn {
    uint64_t id;
    int fd;
    struct rt_peer peer;
    enum rt_conn_phase phase;
    bool input_ended;          /* the client shut down its sending side */
    bool gone;                 /* the client closed: replies are dropped, calls still run */
    bool in_dispatch;          /* serving calls: rt_conn_done() does not re-enter */
    bool notified;             /* given sampler events, to flush after the batch */
    bool queued;               /* calls read and not served wait for a turn (srv's queue) */
    bool blocked;              /* calls wait for the client to read its replies */
    bool more, oneway;         /* flags of the call being served */
    struct rt_budget_user *user;
    size_t held;               /* buffer bytes counted for its user */
    uint64_t active_ns;        /* last byte received or sent */
    uint64_t sent_ns;          /* output last drained or sent part of */
    uint64_t input_ns;         /* the partial message in rd began */
    struct rt_stream *stream;  /* while STREAMING */
    struct rt_vl_reader rd;
    struct rt_vl_writer wr;
    struct rt_shared_out shared; /* sent after wr */
    struct {
        int fd;
        uint64_t at;           /* stream offset of the message it came with */
    } fds[RT_CONN_MAX_FDS];
    size_t nfds;
    uint32_t epoll_events;     /* interest currently registered */
    struct rt_conn *prev, *next;
    struct rt_conn *queue_next;
};

struct rt_daemon *rt_server_daemon(struct rt_server *srv);
struct rt_conn *rt_server_find_conn(struct rt_server *srv, uint64_t id);

/* Replies of the call being served (nothing is queued for a oneway call).
 * params is taken. */
void rt_conn_reply(struct rt_server *srv, struct rt_conn *conn, struct json_object *params,
                   bool continues);
void rt_conn_error(struct rt_server *srv, struct rt_conn *conn, const char *error,
                   struct json_object *params);
/* A reply already serialised as {"parameters":…}. */
void rt_conn_send_raw(struct rt_server *srv, struct rt_conn *conn, const char *json, size_t len);
/* The same, shared with other connections: a reference is taken. It goes
 * out in chunks, one per flush, so that many connections sending a large
 * one take turns with the other clients' calls. */
void rt_conn_send_shared(struct rt_server *srv, struct rt_conn *conn, struct rt_shared_reply *reply);
/* Bytes queued and not sent yet. */
size_t rt_conn_pending(const struct rt_conn *conn);

/* The call goes on after its handler returns: it waits for the sampler, or
 * streams (the stream is taken and freed when the call is done). */
void rt_conn_wait(struct rt_conn *conn);
void rt_conn_stream(struct rt_conn *conn, struct rt_stream *stream);
/* The call is complete: serve the next pipelined one. The caller flushes
 * afterwards (that may close the connection). */
void rt_conn_done(struct rt_server *srv, struct rt_conn *conn);
/* Send what is queued; false when that closed the connection. */
bool rt_conn_flush(struct rt_server *srv, struct rt_conn *conn);

#endif
