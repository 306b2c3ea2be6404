/* The host a job ran on: the daemon's facts (GetHostInfo), with the cloud
 * vendor, region and instance type when discovery found them. */
#ifndef RT_INSIGHT_HOST_H
#define RT_INSIGHT_HOST_H

#include "rt/varlink.h"

#include <json-c/json.h>

struct insight_host {
    struct json_object *host;  /* HostFacts of the IDL (never NULL once loaded) */
    struct json_object *cloud; /* CloudFacts, NULL when not on a known cloud */
};

/* Ask the daemon; waits (a few seconds at most) while its cloud discovery
 * runs. A daemon without GetHostInfo gives what Info and the latest host
 * sample tell. Returns 0 or an RT_EXIT_* code after printing why. */
int insight_host_load(struct rt_vl_client *c, struct insight_host *h);
void insight_host_free(struct insight_host *h);

#endif
