/* TEMPORARY STUB until the collectors branch lands. */
#include "host_sampler.h"

#include "rt/util.h"

#include <stdlib.h>

struct rt_host_sampler {
    double nominal;
    uint64_t last;
};

struct rt_host_sampler *rt_host_sampler_new(const struct rt_roots *r, double nominal_interval_secs)
{
    (void)r;
    struct rt_host_sampler *h = rt_xcalloc(1, sizeof(*h));
    h->nominal = nominal_interval_secs;
    return h;
}

void rt_host_sampler_collect(struct rt_host_sampler *h, struct rt_sample *s)
{
    uint64_t now = rt_mono_ns();
    s->timestamp_secs = rt_real_ns() / RT_NSEC_PER_SEC;
    s->nominal_interval_secs = h->nominal;
    if (h->last) {
        s->has_interval = true;
        s->actual_interval_ms = (now - h->last) / 1000000;
    }
    h->last = now;
}

void rt_host_sampler_free(struct rt_host_sampler *h)
{
    free(h);
}
