/* Descriptors and owned pointers released when they go out of scope, as
 * systemd's _cleanup_ (fd-util.h, alloc-util.h): an early return cannot
 * leak them. Hand a descriptor on with
 * rt_take_fd. */
#ifndef RT_CLEANUP_H
#define RT_CLEANUP_H

#include <json-c/json.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void rt_closep(int *fd)
{
    if (*fd >= 0)
        close(*fd);
}

static inline void rt_freep(void *p)
{
    free(*(void **)p);
}

static inline void rt_json_putp(struct json_object **o)
{
    json_object_put(*o);
}

#define _cleanup_close_ _cleanup_(rt_closep)
#define _cleanup_free_ _cleanup_(rt_freep)
#define _cleanup_json_ _cleanup_(rt_json_putp)

static inline int rt_take_fd(int *fd)
{
    int r = *fd;
    *fd = -1;
    return r;
}

#endif
