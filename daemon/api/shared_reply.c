#include "api/shared_reply.h"

#include "rt/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct rt_shared_reply *rt_shared_reply_new(const char *json, size_t len)
{
    struct rt_shared_reply *r = rt_xmalloc(sizeof(*r) + len + 1);
    r->refs = 1;
    r->len = len + 1;
    memcpy(r->data, json, len);
    r->data[len] = '\0';
    return r;
}

struct rt_shared_reply *rt_shared_reply_ref(struct rt_shared_reply *r)
{
    r->refs++;
    return r;
}

void rt_shared_reply_unref(struct rt_shared_reply *r)
{
    if (r && --r->refs == 0)
        free(r);
}

void rt_shared_out_drop(struct rt_shared_out *o)
{
    rt_shared_reply_unref(o->reply);
    *o = (struct rt_shared_out){0};
}

int rt_shared_out_send(struct rt_shared_out *o, int fd, size_t max)
{
    size_t sent = 0;
    while (o->reply && sent < max) {
        size_t n = o->reply->len - o->off;
        ssize_t w = send(fd, o->reply->data + o->off, n < max - sent ? n : max - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 1;
            return -errno;
        }
        o->off += (size_t)w;
        sent += (size_t)w;
        if (o->off == o->reply->len)
            rt_shared_out_drop(o);
    }
    return o->reply ? 1 : 0;
}
