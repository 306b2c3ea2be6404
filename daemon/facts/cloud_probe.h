/* Internal to cloud discovery: the probe engine (cloud_probe.c) drives one
 * small state machine per vendor (cloud_vendors.c) over a single curl multi
 * handle, so all vendors are probed in parallel from one thread. */
#ifndef RT_CLOUD_PROBE_H
#define RT_CLOUD_PROBE_H

#include "facts/cloud.h"

#include <curl/curl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* In precedence order: when several answer, the first one wins. */
enum rt_cloud_vendor {
    RT_CLOUD_AWS,
    RT_CLOUD_GCP,
    RT_CLOUD_AZURE,
    RT_CLOUD_HETZNER,
    RT_CLOUD_UPCLOUD,
    RT_CLOUD_VULTR,
    RT_CLOUD_ALICLOUD,
    RT_CLOUD_OVH,
    RT_CLOUD_VENDORS
};

struct rt_cloud_config {
    char imds_base[256];
    char alicloud_base[256];
    long connect_ms, response_ms, total_ms;
};

enum rt_cloud_probe_state { RT_PROBE_RUNNING, RT_PROBE_FAILED, RT_PROBE_FOUND };

struct rt_cloud_probe {
    enum rt_cloud_vendor vendor;
    enum rt_cloud_probe_state state;
    int step;                 /* vendor-specific position in its sequence */
    bool confirmed;           /* vendor identified; later steps only add fields */
    char token[256];          /* IMDSv2 session token, "" = IMDSv1 */
    struct rt_cloud_info info;
    /* the request in flight */
    CURL *easy;
    struct curl_slist *headers;
    char *body;
    size_t len;
    bool too_big;
    uint64_t started_ns;
};

/* A finished request as a vendor step sees it. */
struct rt_cloud_response {
    bool ok;                  /* transfer done, 2xx, non-empty trimmed body */
    long status;
    const char *body;         /* trimmed; "" unless ok */
    CURL *easy;               /* for response headers */
};

struct rt_cloud_run;

/* Start the probe's next request (path relative to the IMDS or the AliCloud
 * base, one optional "Name: value" header). When it cannot be started (the
 * discovery deadline passed), the probe ends as by rt_cloud_probe_end(). */
void rt_cloud_get(struct rt_cloud_run *run, struct rt_cloud_probe *p, int next_step,
                  bool alicloud, const char *path, const char *header);
/* The same as a PUT with an empty body (IMDSv2 token requests). */
void rt_cloud_put(struct rt_cloud_run *run, struct rt_cloud_probe *p, int next_step,
                  bool alicloud, const char *path, const char *header);
/* No more requests: found when confirmed, failed otherwise. */
void rt_cloud_probe_end(struct rt_cloud_probe *p);

/* Vendor side: advance p after response r (NULL for the first call). */
void rt_cloud_vendor_step(struct rt_cloud_run *run, struct rt_cloud_probe *p,
                          const struct rt_cloud_response *r);
extern const char *const rt_cloud_vendor_ids[RT_CLOUD_VENDORS];

/* Probe all vendors over multi until the winner is known, the total timeout
 * passes or *cancel is set (and curl_multi_wakeup() called). */
void rt_cloud_run_probes(const struct rt_cloud_config *cfg, CURLM *multi,
                         const atomic_bool *cancel, struct rt_cloud_info *out);

#endif
