#include "proc/pss.h"

bool rt_pss_due(const struct rt_pss *p, uint64_t now_ns, uint32_t kids, uint64_t rss)
{
    if (!p->valid || now_ns < p->at_ns)
        return true;
    uint64_t age = now_ns - p->at_ns;
    if (age >= RT_PSS_MAX_AGE_NS)
        return true;
    bool forked = kids != p->kids;
    if (age < p->cost_ns * (forked ? RT_PSS_SPACING_FORKED : RT_PSS_SPACING))
        return false;
    return forked || rss != p->rss || age >= RT_PSS_IDLE_AGE_NS;
}

void rt_pss_update(struct rt_pss *p, bool ok, uint64_t pss, uint64_t rss, uint64_t now_ns,
                   uint64_t cost_ns, uint32_t kids)
{
    *p = (struct rt_pss){
        .valid = true, .ok = ok, .pss = ok ? pss : 0, .rss = rss,
        .at_ns = now_ns, .cost_ns = cost_ns, .kids = kids,
    };
}

uint64_t rt_pss_estimate(const struct rt_pss *p, uint64_t rss_now)
{
    if (!p->ok)
        return 0;
    /* PSS ≤ RSS held at the read; moving both by the same delta keeps it. */
    uint64_t v = rss_now >= p->rss ? p->pss + (rss_now - p->rss)
                                   : (p->pss > p->rss - rss_now ? p->pss - (p->rss - rss_now) : 0);
    return v < rss_now ? v : rss_now;
}
