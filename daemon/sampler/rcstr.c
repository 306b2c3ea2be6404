#include "sampler/rcstr.h"

#include "rt/util.h"

#include <stdlib.h>
#include <string.h>

struct rt_rcstr *rt_rcstr_new(const char *s, size_t len)
{
    struct rt_rcstr *r = rt_xmalloc(sizeof(*r) + len + 1);
    atomic_init(&r->refs, 1);
    r->len = len;
    memcpy(r->data, s, len);
    r->data[len] = '\0';
    return r;
}

struct rt_rcstr *rt_rcstr_ref(struct rt_rcstr *s)
{
    if (s)
        atomic_fetch_add(&s->refs, 1);
    return s;
}

void rt_rcstr_unref(struct rt_rcstr *s)
{
    if (s && atomic_fetch_sub(&s->refs, 1) == 1)
        free(s);
}
