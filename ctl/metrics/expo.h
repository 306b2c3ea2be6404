/* Prometheus text exposition (format 0.0.4) of the host and of jobs, named
 * in node_exporter's conventions. docs/metrics.md lists every family: the set
 * is an interface, keep the two in step. */
#ifndef CTL_METRICS_EXPO_H
#define CTL_METRICS_EXPO_H

#include "rt/sample.h"

#include <json-c/json.h>
#include <stdio.h>

struct ctl_expo {
    const struct rt_sample *host; /* the latest host sample */
    struct json_object *cpu_times; /* GetHostCpuTimes' reply, or NULL */
    struct json_object *jobs;     /* []Job to publish (may be empty or NULL) */
    struct json_object *gpus;     /* GetGpus' "gpus" (who holds each GPU), or NULL */
    double gpus_at;               /* its taken_at */
    const char *version;          /* the daemon's */
};

void ctl_expo_write(FILE *f, const struct ctl_expo *in);

#endif
