/* Host memory from /proc/meminfo (docs/collectors.md). */
#ifndef RT_MEMORY_H
#define RT_MEMORY_H

#include "collect/procfile.h"
#include "collect/roots.h"
#include "rt/sample.h"

/* Fill *m (zeroed first). 0, or -errno when meminfo is unreadable or has no
 * MemTotal; fields that are missing or garbage stay 0 (warned once). */
int rt_memory_collect(const struct rt_roots *r, struct rt_memory *m);
/* The same through a file kept open across calls (the host sampler's). */
int rt_memory_collect_kept(const struct rt_roots *r, struct rt_keptfile *meminfo, struct rt_memory *m);

#endif
