/* A call whose replies continue ("more"): what it sends when the client has
 * read what was queued, and on the sampler's events. Each kind of stream
 * embeds struct rt_stream first. Main thread only. */
#ifndef RT_API_STREAM_H
#define RT_API_STREAM_H

#include "sampler/sampler.h"

#include <stdbool.h>

struct rt_server;
struct rt_conn;
struct rt_stream;

struct rt_stream_ops {
    /* The client's output drained: send more (paging through stored data).
     * May end the call with rt_conn_done(), after which the stream is gone. */
    void (*pump)(struct rt_server *srv, struct rt_conn *conn);
    /* A sampler event; the same rule for rt_conn_done(). */
    void (*event)(struct rt_server *srv, struct rt_conn *conn, const struct rt_sevt *e);
    /* pump() has something to send as soon as the client reads. */
    bool (*wants_output)(const struct rt_stream *s);
    /* Frees what the stream holds besides itself (may be NULL). */
    void (*release)(struct rt_stream *s);
};

struct rt_stream {
    const struct rt_stream_ops *ops;
};

#endif
