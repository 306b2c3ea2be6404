/* TEMPORARY STUB until the collectors branch lands. */
#ifndef RT_HOST_SAMPLER_H
#define RT_HOST_SAMPLER_H

#include "roots.h"
#include "rt/sample.h"

struct rt_host_sampler;
struct rt_cpu_collector;

struct rt_host_sampler *rt_host_sampler_new(const struct rt_roots *r, double nominal_interval_secs);
void rt_host_sampler_collect(struct rt_host_sampler *h, struct rt_sample *s);
void rt_host_sampler_free(struct rt_host_sampler *h);

#endif
