/* Cloud discovery: which cloud (if any) the host runs on, from the vendors'
 * instance metadata services. Runs once, on its own thread, never on the
 * sampling path: start it early, poll it, and wait (bounded) only right
 * before the Sentinel POST /runs. Vendors, endpoints and fields:
 * docs/host-and-cloud.md.
 *
 * libcurl must be initialised first: main() calls rt_http_global_init()
 * (http_global.h) before starting any thread. */
#ifndef RT_CLOUD_H
#define RT_CLOUD_H

#include <json-c/json.h>
#include <stdbool.h>

#define RT_CLOUD_DEFAULT_IMDS_BASE "http://169.254.169.254"
#define RT_CLOUD_DEFAULT_ALICLOUD_BASE "http://100.100.100.200"

struct rt_cloud_options {
    bool disabled;              /* no probes at all: every field stays null */
    const char *imds_base;      /* NULL = RT_CLOUD_DEFAULT_IMDS_BASE */
    const char *alicloud_base;  /* NULL = RT_CLOUD_DEFAULT_ALICLOUD_BASE */
    int connect_timeout_ms;     /* per request; 0 = 1000 */
    int response_timeout_ms;    /* per request, after connecting; 0 = 1000 */
    int total_timeout_ms;       /* whole discovery; 0 = 3000 */
};

#define RT_CLOUD_STR 128

/* Empty string = unknown (JSON null). */
struct rt_cloud_info {
    char vendor_id[RT_CLOUD_STR];   /* aws gcp azure hcloud upcloud vultr alicloud ovh */
    char account_id[RT_CLOUD_STR];
    char region_id[RT_CLOUD_STR];
    char zone_id[RT_CLOUD_STR];
    char instance_type[RT_CLOUD_STR];
};

struct rt_cloud_discovery;

/* Returns at once; the probes run on a thread of their own (all signals
 * blocked there). opts may be NULL (defaults) and is copied. Never NULL: when
 * discovery is disabled or no thread can be started, the handle is already
 * done with every field unknown. */
struct rt_cloud_discovery *rt_cloud_discovery_start(const struct rt_cloud_options *opts);
/* Wait up to timeout_ms (0 = just poll, negative = until done, which the
 * total timeout bounds). true when discovery is done and *out holds the
 * result; false with *out all unknown otherwise. A NULL handle is done. */
bool rt_cloud_discovery_wait(struct rt_cloud_discovery *d, int timeout_ms, struct rt_cloud_info *out);
/* Cancels outstanding probes and joins the thread (promptly: transfers are
 * aborted, not waited for). NULL is fine. */
void rt_cloud_discovery_free(struct rt_cloud_discovery *d);

/* The five cloud_* keys of the POST /runs body, always present, null when
 * unknown. The caller owns the object. */
struct json_object *rt_cloud_info_to_json(const struct rt_cloud_info *c);

/* GetHostInfo's CloudFacts (the IDL): vendor, region, zone and instance
 * type, without the account id; NULL when no vendor was found. */
struct json_object *rt_cloud_info_facts_json(const struct rt_cloud_info *c);

#endif
