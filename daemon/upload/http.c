#include "upload/http.h"

#include "rt/util.h"

#include <errno.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int rt_http_init(struct rt_http *h, long connect_timeout_ms, long timeout_ms,
                 const _Atomic uint64_t *abort_at_ms)
{
    h->curl = curl_easy_init();
    h->connect_timeout_ms = connect_timeout_ms;
    h->timeout_ms = timeout_ms;
    h->abort_at_ms = abort_at_ms;
    return h->curl ? 0 : -1;
}

void rt_http_cleanup(struct rt_http *h)
{
    if (h->curl)
        curl_easy_cleanup(h->curl);
    h->curl = NULL;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    struct rt_http_resp *r = arg;
    size_t len = size * n;
    if (r->len + len > 16u * 1024 * 1024) /* a Sentinel or S3 reply is small */
        return 0;
    if (r->len + len + 1 > r->cap) {
        /* Not realloc: the old buffer may hold credentials, zero it first. */
        size_t cap = r->cap ? r->cap : 1024;
        while (cap < r->len + len + 1)
            cap *= 2;
        char *b = rt_xmalloc(cap);
        if (r->body) {
            memcpy(b, r->body, r->len);
            explicit_bzero(r->body, r->cap);
            free(r->body);
        }
        r->body = b;
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, len);
    r->len += len;
    r->body[r->len] = '\0';
    return len;
}

int rt_http_parse_region_header(const char *line, size_t len, char *out, size_t size)
{
    static const char name[] = "x-amz-bucket-region:";
    if (len < sizeof(name) - 1 || strncasecmp(line, name, sizeof(name) - 1) != 0)
        return 0;
    const char *v = line + sizeof(name) - 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && isspace((unsigned char)end[-1]))
        end--;
    size_t n = (size_t)(end - v);
    if (n == 0 || n >= size)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)v[i]) && v[i] != '-')
            return 0;
    memcpy(out, v, n);
    out[n] = '\0';
    return 1;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
    struct rt_http_resp *r = arg;
    rt_http_parse_region_header(data, size * n, r->region, sizeof(r->region));
    return size * n;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    const _Atomic uint64_t *abort_at = arg;
    uint64_t at = abort_at ? atomic_load(abort_at) : 0;
    return at && rt_mono_ns() / 1000000 >= at;
}

void rt_http_prepare(struct rt_http *h, const char *url, struct rt_http_resp *resp)
{
    memset(resp, 0, sizeof(*resp));
    CURL *c = h->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->connect_timeout_ms);
    long t = h->timeout_ms;
    uint64_t at = h->abort_at_ms ? atomic_load(h->abort_at_ms) : 0;
    if (at) {
        uint64_t now = rt_mono_ns() / 1000000;
        long left = at > now ? (long)(at - now) : 1;
        if (left < t)
            t = left;
        if (left < h->connect_timeout_ms)
            curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, left);
    }
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, t);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, resp);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)h->abort_at_ms);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "resource-trackerd/" RT_VERSION);
}

int rt_http_perform(struct rt_http *h, struct rt_http_resp *resp)
{
    char err[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, err);
    CURLcode rc = curl_easy_perform(h->curl);
    curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, NULL);
    if (rc != CURLE_OK) {
        resp->status = 0;
        snprintf(resp->error, sizeof(resp->error), "%s", err[0] ? err : curl_easy_strerror(rc));
        return -EIO;
    }
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &resp->status);
    if (resp->status >= 200 && resp->status < 300)
        return 0;
    snprintf(resp->error, sizeof(resp->error), "HTTP %ld", resp->status);
    return -EIO;
}

void rt_http_resp_free(struct rt_http_resp *resp)
{
    if (resp->body) {
        explicit_bzero(resp->body, resp->cap);
        free(resp->body);
    }
    resp->body = NULL;
    resp->len = resp->cap = 0;
}

void rt_http_free_headers(struct curl_slist *hdr)
{
    for (struct curl_slist *l = hdr; l; l = l->next)
        if (l->data)
            explicit_bzero(l->data, strlen(l->data));
    curl_slist_free_all(hdr);
}
