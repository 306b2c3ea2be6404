/* Host network interfaces: every interface in /proc/net/dev but lo, with
 * rates, totals and sysfs attributes (docs/collectors.md). */
#ifndef RT_NET_H
#define RT_NET_H

#include "collect/collect_hooks.h"
#include "collect/roots.h"
#include "rt/sample.h"

struct rt_net_collector;

/* Takes the baseline read, so the first collect reports real rates. hooks
 * may be NULL (real monotonic clock). */
struct rt_net_collector *rt_net_collector_new_hooks(const struct rt_roots *r,
                                                    const struct rt_collect_hooks *hooks);
/* Fill s->nets / s->n_nets, sorted by interface name, in s->arena. */
void rt_net_collect(struct rt_net_collector *c, struct rt_sample *s);
void rt_net_collector_free(struct rt_net_collector *c);

#endif
