/* One host sample: timestamps plus the cpu, memory, disk and network
 * collectors. The sampler thread (daemon) and rt_hostsample drive it. */
#ifndef RT_HOST_SAMPLER_H
#define RT_HOST_SAMPLER_H

#include "collect/collect_hooks.h"
#include "collect/cpu.h"
#include "collect/roots.h"
#include "rt/sample.h"

struct rt_host_sampler;

/* r must outlive the sampler. Every collector takes its baseline here. */
struct rt_host_sampler *rt_host_sampler_new(const struct rt_roots *r, double nominal_interval_secs);
/* hooks may be NULL; they are passed on to every collector. */
struct rt_host_sampler *rt_host_sampler_new_hooks(const struct rt_roots *r, double nominal_interval_secs,
                                                  const struct rt_collect_hooks *hooks);
/* Fill the host part of a freshly reset sample: timestamp_secs (floored wall
 * clock, taken before collecting), actual_interval_ms (monotonic, since the
 * previous collect; absent on the first), nominal_interval_secs, cpu,
 * memory, disks, nets. GPUs are left empty. */
void rt_host_sampler_collect(struct rt_host_sampler *h, struct rt_sample *s);
/* The CPU collector, for the job accounting (ncores, busy seconds). */
struct rt_cpu_collector *rt_host_sampler_cpu(struct rt_host_sampler *h);
void rt_host_sampler_free(struct rt_host_sampler *h);

#endif
