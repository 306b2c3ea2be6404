/* Reference-counted immutable strings: one serialised sample is shared by
 * every subscriber that streams it, across threads. */
#ifndef RT_RCSTR_H
#define RT_RCSTR_H

#include <stdatomic.h>
#include <stddef.h>

struct rt_rcstr {
    atomic_int refs;
    size_t len;
    char data[];
};

struct rt_rcstr *rt_rcstr_new(const char *s, size_t len);
struct rt_rcstr *rt_rcstr_ref(struct rt_rcstr *s);
void rt_rcstr_unref(struct rt_rcstr *s);

#endif
