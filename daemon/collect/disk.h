/* Host disks: whole-disk devices with cached identity, I/O rates and totals
 * from /proc/diskstats (512-byte sectors, always), and per-filesystem space
 * of their mounts (docs/collectors.md). */
#ifndef RT_DISK_H
#define RT_DISK_H

#include "collect/collect_hooks.h"
#include "collect/roots.h"
#include "rt/sample.h"

struct rt_disk_collector;

/* Takes the baseline read, so the first collect reports real rates. hooks
 * may be NULL: real monotonic clock and statvfs(2). */
struct rt_disk_collector *rt_disk_collector_new_hooks(const struct rt_roots *r,
                                                      const struct rt_collect_hooks *hooks);
/* Fill s->disks / s->n_disks, sorted by device name, in s->arena. */
void rt_disk_collect(struct rt_disk_collector *c, struct rt_sample *s);
void rt_disk_collector_free(struct rt_disk_collector *c);

#endif
