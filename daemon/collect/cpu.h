/* Host CPU: utilisation from /proc/stat deltas, process count, and the root
 * cgroup's CPU usage (docs/collectors.md). */
#ifndef RT_CPU_H
#define RT_CPU_H

#include "collect/collect_hooks.h"
#include "collect/roots.h"
#include "rt/sample.h"

#include <stdbool.h>

struct rt_cpu_collector;

/* Takes the baseline read, so the first collect reports real deltas. */
struct rt_cpu_collector *rt_cpu_collector_new(const struct rt_roots *r);
/* hooks may be NULL (real clock); used by fixture tests. */
struct rt_cpu_collector *rt_cpu_collector_new_hooks(const struct rt_roots *r,
                                                    const struct rt_collect_hooks *hooks);
/* Fill s->cpu (per_core_pct lives in s->arena). */
void rt_cpu_collect(struct rt_cpu_collector *c, struct rt_sample *s);
void rt_cpu_collector_free(struct rt_cpu_collector *c);

/* For the job accounting, about the last collect: */
/* Online cores (cpuN lines) in the last /proc/stat read. */
unsigned rt_cpu_collector_ncores(const struct rt_cpu_collector *c);
/* Host busy CPU seconds in the interval, (Δtotal − Δidle)/CLK_TCK over all
 * cores. False when no clock tick was seen (Δtotal = 0, unreadable stat):
 * then there is nothing to cap process CPU with. */
bool rt_cpu_collector_busy_secs(const struct rt_cpu_collector *c, double *busy_secs);
/* Monotonic seconds between the last two collects (reads done), ≥ 0.001. */
double rt_cpu_collector_elapsed_secs(const struct rt_cpu_collector *c);
/* Cores the root cgroup may use: min(ncores, CFS quota); ncores without quota. */
double rt_cpu_collector_effective_cores(const struct rt_cpu_collector *c);

#endif
