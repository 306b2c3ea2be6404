/* A reply serialised once and queued on many connections without a copy
 * each (StreamJobs: every administrator's subscriber gets the same bytes
 * each tick). Reference counted; a connection sends it in chunks after
 * what its writer holds (api/transport.c). Main thread only. */
#ifndef RT_API_SHARED_REPLY_H
#define RT_API_SHARED_REPLY_H

#include <stddef.h>

struct rt_shared_reply {
    unsigned refs;
    size_t len;       /* with the terminating NUL */
    char data[];
};

/* A copy of json (len bytes, without NUL) with one reference. */
struct rt_shared_reply *rt_shared_reply_new(const char *json, size_t len);
struct rt_shared_reply *rt_shared_reply_ref(struct rt_shared_reply *r);
void rt_shared_reply_unref(struct rt_shared_reply *r);

/* What a connection has left to send of one, and where it is. */
struct rt_shared_out {
    struct rt_shared_reply *reply;  /* NULL when none */
    size_t off;
};

static inline size_t rt_shared_out_pending(const struct rt_shared_out *o)
{
    return o->reply ? o->reply->len - o->off : 0;
}

/* Send at most max bytes of it: 0 when all is sent (the reference is
 * dropped), 1 when bytes remain, -errno on a broken connection. */
int rt_shared_out_send(struct rt_shared_out *o, int fd, size_t max);
void rt_shared_out_drop(struct rt_shared_out *o);

#endif
