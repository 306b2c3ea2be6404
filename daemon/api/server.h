/* The varlink server: connections on the control socket, framing, dispatch
 * to method handlers, ordered replies, streaming with back-pressure, limits.
 * Runs on the main thread's epoll loop. */
#ifndef RT_SERVER_H
#define RT_SERVER_H

#include "daemon.h"
#include "sampler/rcstr.h"
#include "rt/varlink.h"
#include "sampler/sampler.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum rt_stream_kind { RT_STREAM_NONE, RT_STREAM_HOST, RT_STREAM_JOB };

struct rt_conn {
    uint64_t id;
    int fd;
    uid_t uid;
    gid_t gid;
    pid_t pid;
    bool admin;
    struct rt_vl_reader rd;
    struct rt_vl_writer wr;
    struct rt_conn *prev, *next;
    uint32_t epoll_events;  /* interest currently registered */
    /* state of the call being served */
    bool busy;            /* waiting for the sampler or streaming: hold further calls */
    bool more;            /* the call asked for "more" */
    bool oneway;          /* the call asked for no reply */
    bool closing;         /* close once the output is flushed */
    bool eof;             /* the client has shut down its sending side */
    bool dispatching;     /* inside process_input(): calls are not re-entered */
    bool dead;            /* closed; freed by rt_server_reap() */
    enum rt_stream_kind stream;
    uint64_t stream_job;
    uint64_t stream_next; /* next sample index to send */
    bool stream_csv, stream_follow, stream_header;
    bool stream_waiting;  /* caught up, waiting for live samples */
};

/* One call in flight, handed to a method handler. */
struct rt_call {
    struct rt_server *srv;
    struct rt_conn *conn;
    const char *method;   /* the member name, without the interface */
    struct json_object *params;
    bool more, oneway;
};

struct rt_server;

struct rt_server *rt_server_new(struct rt_daemon *d, int listen_fd, int epfd);
void rt_server_free(struct rt_server *srv);
/* epoll tags: the listening socket, and connections. */
bool rt_server_owns(struct rt_server *srv, void *tag);
void rt_server_event(struct rt_server *srv, void *tag, uint32_t events);
/* Free the connections closed since the last call. Call it after each
 * epoll_wait() batch: later events of the same batch may still name them. */
void rt_server_reap(struct rt_server *srv);
/* Deliver the sampler's outbox. */
void rt_server_sampler_events(struct rt_server *srv, struct rt_sevt *list);
size_t rt_server_connections(struct rt_server *srv);

/* For handlers. */
void rt_call_reply(struct rt_call *c, struct json_object *params);           /* takes params */
void rt_call_reply_more(struct rt_call *c, struct json_object *params, bool continues);
void rt_call_error(struct rt_call *c, const char *error, struct json_object *params);
void rt_call_invalid_param(struct rt_call *c, const char *name);
/* Reply to a connection later (async calls). */
void rt_conn_reply(struct rt_server *srv, struct rt_conn *conn, struct json_object *params,
                   bool continues);
void rt_conn_error(struct rt_server *srv, struct rt_conn *conn, const char *error,
                   struct json_object *params);
/* The call of conn is complete: serve the next pipelined call. The caller
 * flushes the output afterwards (it may close the connection). */
void rt_conn_done(struct rt_server *srv, struct rt_conn *conn);
struct rt_conn *rt_server_find_conn(struct rt_server *srv, uint64_t id);
/* Queue raw JSON text as a reply body {"parameters":…} is built by the caller. */
void rt_conn_send_raw(struct rt_server *srv, struct rt_conn *conn, const char *json, size_t len);
size_t rt_conn_pending(struct rt_server *srv, struct rt_conn *conn);
struct rt_daemon *rt_server_daemon(struct rt_server *srv);

/* methods.c */
void rt_methods_dispatch(struct rt_call *c, const char *interface);
void rt_methods_request_done(struct rt_server *srv, struct rt_sreq *req);
/* Streams: push pending samples for a job stream (from files or live). */
void rt_stream_pump(struct rt_server *srv, struct rt_conn *conn);
void rt_stream_live(struct rt_server *srv, struct rt_conn *conn, const struct rt_sevt *e);

extern const char rt_idl_resource_tracker[];
extern const char rt_idl_varlink_service[];

#endif
