/* One libcurl easy handle per worker, reused so connections stay alive; every
 * request is bounded by the configured timeouts and by an abort deadline. */
#ifndef RT_UPLOAD_HTTP_H
#define RT_UPLOAD_HTTP_H

#include <curl/curl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct rt_http {
    CURL *curl;
    long connect_timeout_ms, timeout_ms;
    const _Atomic uint64_t *abort_at_ms; /* monotonic ms; 0 = none (worker shutdown) */
};

struct rt_http_resp {
    long status;                 /* 0 = transport error */
    char *body;                  /* NUL-terminated, may be NULL; may hold credentials */
    size_t len, cap;
    char error[256];             /* transport error or "HTTP 503" */
    char region[64];             /* x-amz-bucket-region header, if any */
};

int rt_http_init(struct rt_http *h, long connect_timeout_ms, long timeout_ms,
                 const _Atomic uint64_t *abort_at_ms);
void rt_http_cleanup(struct rt_http *h);
/* Resets the handle (keeping its connections) and applies timeouts, the
 * abort callback and response capture. */
void rt_http_prepare(struct rt_http *h, const char *url, struct rt_http_resp *resp);
/* Performs the prepared request; fills resp->status/error. 0 on a 2xx. */
int rt_http_perform(struct rt_http *h, struct rt_http_resp *resp);
/* Zeroes the body (replies carry credentials) and frees it. */
void rt_http_resp_free(struct rt_http_resp *resp);
/* Zeroes every string of a header list we built (tokens) and frees it. */
void rt_http_free_headers(struct curl_slist *hdr);

/* Parses "x-amz-bucket-region: eu-west-1" (any case) into out; false otherwise. */
int rt_http_parse_region_header(const char *line, size_t len, char *out, size_t size);

#endif
