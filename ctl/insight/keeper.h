/* Cloud server prices from the Spare Cores Keeper API, as the Python
 * tracker asks for them (reference/python.md §3.3): the cheapest server
 * that fits a recommendation, and the on-demand price of the current
 * instance. Short timeouts; nothing here is needed for a report. */
#ifndef RT_INSIGHT_KEEPER_H
#define RT_INSIGHT_KEEPER_H

#include "insight/recommend.h"

#include <stdbool.h>
#include <stddef.h>

#define INSIGHT_KEEPER_URL "https://keeper.sparecores.net"
/* The whole lookup, all requests together. */
#define INSIGHT_KEEPER_TIMEOUT_MS 3000

struct insight_server {
    char vendor_id[64];
    char server_id[128];
    char api_reference[128];
    char display_name[128];
    double vcpus, memory_mib, gpus, gpu_memory_mib; /* as listed (0 = not given) */
    double price_per_hour;                          /* min_price_ondemand */
    char currency[8];                               /* "USD" when not given */
};

struct insight_prices {
    bool asked;                    /* a lookup was made (not turned off) */
    char error[256];               /* why it failed; "" when it answered */
    bool have_server;              /* a server fits */
    struct insight_server server;
    bool have_current;             /* the price of the instance the job ran on */
    double current_per_hour;
    char current_currency[8];
};

/* GET /servers for the recommendation, and /server/{vendor}/{type}/prices
 * when vendor and type are not NULL; base_url without a trailing path. */
void insight_keeper_lookup(const char *base_url, const struct insight_rec *rec, const char *vendor,
                           const char *region, const char *instance_type, struct insight_prices *out);

/* The first server of a /servers answer: 1, 0 when the list is empty, -1
 * with a reason when the body is not such a list. */
int insight_keeper_parse_servers(const char *body, struct insight_server *out, char *err, size_t errlen);
/* The Linux on-demand price of an instance from a /prices answer: in the
 * region when listed there, else the first such price (the Python rule).
 * 1 found, 0 none, -1 not such a list. */
int insight_keeper_parse_price(const char *body, const char *region, double *price, char *currency,
                               size_t currency_len);

/* s percent-encoded for a URL path segment (RFC 3986: all but unreserved
 * characters), as curl_easy_escape does; to free. */
char *insight_url_escape(const char *s);

#endif
