#include "insight/http.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct insight_http {
    CURL *c;
};

struct body {
    char *buf;
    size_t len, max;
    bool oom;
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct body *b = ud;
    size_t add = size * n;
    if (b->len + add > b->max)
        return 0; /* aborts the transfer */
    char *nb = realloc(b->buf, b->len + add + 1);
    if (!nb) {
        b->oom = true;
        return 0;
    }
    b->buf = nb;
    memcpy(b->buf + b->len, p, add);
    b->len += add;
    b->buf[b->len] = '\0';
    return add;
}

struct insight_http *insight_http_open(char *err, size_t errlen)
{
    struct insight_http *h = calloc(1, sizeof(*h));
    if (h && curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK) {
        if ((h->c = curl_easy_init()))
            return h;
        curl_global_cleanup();
    }
    free(h);
    snprintf(err, errlen, "libcurl could not start");
    return NULL;
}

char *insight_http_get(struct insight_http *h, const char *url, const char *const *headers, long timeout_ms,
                       size_t max_body, char *err, size_t errlen)
{
    struct body b = {.max = max_body};
    char cerr[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdr = NULL;
    for (const char *const *l = headers; l && *l; l++)
        hdr = curl_slist_append(hdr, *l);
    CURL *c = h->c;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "resource-trackerctl/" RT_VERSION);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
    curl_slist_free_all(hdr);
    if (rc != CURLE_OK || status < 200 || status > 299) {
        if (b.oom)
            snprintf(err, errlen, "out of memory");
        else if (rc != CURLE_OK)
            snprintf(err, errlen, "%s", cerr[0] ? cerr : curl_easy_strerror(rc));
        else
            snprintf(err, errlen, "HTTP %ld", status);
        free(b.buf);
        return NULL;
    }
    if (!b.buf && !(b.buf = calloc(1, 1)))
        snprintf(err, errlen, "out of memory");
    return b.buf;
}

void insight_http_close(struct insight_http *h)
{
    if (!h)
        return;
    curl_easy_cleanup(h->c);
    curl_global_cleanup();
    free(h);
}
