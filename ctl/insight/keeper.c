#include "insight/keeper.h"

#include "rt/json.h"
#include "rt/util.h"
#include "rt/varlink.h"

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MAX_BODY (8 * 1024 * 1024)

struct body {
    char *buf;
    size_t len;
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct body *b = ud;
    size_t add = size * n;
    if (b->len + add > MAX_BODY)
        return 0; /* aborts the transfer */
    b->buf = rt_xrealloc(b->buf, b->len + add + 1);
    memcpy(b->buf + b->len, p, add);
    b->len += add;
    b->buf[b->len] = '\0';
    return add;
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* GET url within the time left; the body on a 2xx, else NULL and why. */
static char *get(CURL *c, const char *url, long deadline, char *err, size_t errlen)
{
    long left = deadline - now_ms();
    if (left <= 0) {
        snprintf(err, errlen, "no answer within %d ms", INSIGHT_KEEPER_TIMEOUT_MS);
        return NULL;
    }
    struct body b = {0};
    char cerr[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdr = curl_slist_append(NULL, "X-Application-ID: resource-tracker");
    hdr = curl_slist_append(hdr, "Accept: application/json");
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, left);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, left);
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
        if (rc != CURLE_OK)
            snprintf(err, errlen, "%s", cerr[0] ? cerr : curl_easy_strerror(rc));
        else
            snprintf(err, errlen, "HTTP %ld", status);
        free(b.buf);
        return NULL;
    }
    return b.buf ? b.buf : rt_xstrdup("");
}

static struct json_object *parse_array(const char *body)
{
    char err[128];
    /* Wrapped so the varlink parser's depth and trailing-byte checks apply. */
    char *doc = rt_xasprintf("{\"a\":%s}", body);
    struct json_object *o = rt_vl_parse(doc, strlen(doc), err, sizeof(err));
    free(doc);
    struct json_object *a = rt_json_get_array(o, "a");
    if (a)
        json_object_get(a);
    json_object_put(o);
    return a;
}

static void copy_str(char *dst, size_t size, struct json_object *o, const char *k)
{
    const char *v = rt_json_get_string(o, k);
    rt_strlcpy(dst, v ? v : "", size);
}

int insight_keeper_parse_servers(const char *body, struct insight_server *out, char *err, size_t errlen)
{
    struct json_object *a = parse_array(body);
    if (!a) {
        snprintf(err, errlen, "the answer is not a list of servers");
        return -1;
    }
    int r = 0;
    struct json_object *s = json_object_array_length(a) ? json_object_array_get_idx(a, 0) : NULL;
    memset(out, 0, sizeof(*out));
    if (s) {
        copy_str(out->vendor_id, sizeof(out->vendor_id), s, "vendor_id");
        copy_str(out->server_id, sizeof(out->server_id), s, "server_id");
        copy_str(out->api_reference, sizeof(out->api_reference), s, "api_reference");
        copy_str(out->display_name, sizeof(out->display_name), s, "display_name");
        copy_str(out->currency, sizeof(out->currency), s, "currency");
        rt_json_get_double(s, "vcpus", &out->vcpus);
        rt_json_get_double(s, "memory_amount", &out->memory_mib);
        rt_json_get_double(s, "gpu_count", &out->gpus);
        rt_json_get_double(s, "gpu_memory_total", &out->gpu_memory_mib);
        if (!rt_json_get_double(s, "min_price_ondemand", &out->price_per_hour) || !out->server_id[0]) {
            snprintf(err, errlen, "the first server has no server_id or min_price_ondemand");
            r = -1;
        } else {
            r = 1;
        }
        if (!out->currency[0])
            rt_strlcpy(out->currency, "USD", sizeof(out->currency));
        if (!out->display_name[0])
            rt_strlcpy(out->display_name, out->server_id, sizeof(out->display_name));
    }
    json_object_put(a);
    return r;
}

static bool linux_ondemand(struct json_object *p)
{
    const char *alloc = rt_json_get_string(p, "allocation");
    const char *os = rt_json_get_string(p, "operating_system");
    double v;
    return alloc && os && strcmp(alloc, "ondemand") == 0 && strcmp(os, "Linux") == 0 &&
           rt_json_get_double(p, "price", &v);
}

int insight_keeper_parse_price(const char *body, const char *region, double *price, char *currency,
                               size_t currency_len)
{
    struct json_object *a = parse_array(body);
    if (!a)
        return -1;
    struct json_object *found = NULL;
    size_t n = json_object_array_length(a);
    for (int pass = 0; pass < 2 && !found; pass++)
        for (size_t i = 0; i < n && !found; i++) {
            struct json_object *p = json_object_array_get_idx(a, i);
            const char *r = rt_json_get_string(p, "region_id");
            if (linux_ondemand(p) && (pass == 1 || (region && r && strcmp(r, region) == 0)))
                found = p;
        }
    if (found) {
        rt_json_get_double(found, "price", price);
        const char *cur = rt_json_get_string(found, "currency");
        rt_strlcpy(currency, cur ? cur : "USD", currency_len);
    }
    json_object_put(a);
    return found != NULL;
}

/* Keeper takes memory in GiB ("GB" in its docs, 1024 MiB each); a
 * recommendation is a multiple of 128 MiB, so three decimals are exact. */
static char *servers_url(const char *base, const struct insight_rec *r)
{
    char gpu[96] = "";
    if (r->gpus)
        snprintf(gpu, sizeof(gpu), "&gpu_min=%u&gpu_memory_total=%.3f", r->gpus, (double)r->vram_mib / 1024.0);
    return rt_xasprintf("%s/servers?vcpus_min=%u&memory_min=%.3f%s&order_by=min_price_ondemand&order_dir=asc&limit=1",
                        base, r->cpus, (double)r->memory_mib / 1024.0, gpu);
}

void insight_keeper_lookup(const char *base, const struct insight_rec *rec, const char *vendor, const char *region,
                           const char *instance_type, struct insight_prices *out)
{
    memset(out, 0, sizeof(*out));
    out->asked = true;
    long deadline = now_ms() + INSIGHT_KEEPER_TIMEOUT_MS;
    size_t blen = strlen(base);
    while (blen && base[blen - 1] == '/')
        blen--;
    char *b = rt_xasprintf("%.*s", (int)blen, base);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(out->error, sizeof(out->error), "libcurl could not start");
        free(b);
        return;
    }
    CURL *c = curl_easy_init();
    char *url = servers_url(b, rec);
    char *body = c ? get(c, url, deadline, out->error, sizeof(out->error)) : NULL;
    free(url);
    if (body) {
        int r = insight_keeper_parse_servers(body, &out->server, out->error, sizeof(out->error));
        out->have_server = r > 0;
        free(body);
        if (r >= 0 && vendor && instance_type) {
            char *v = curl_easy_escape(c, vendor, 0), *t = curl_easy_escape(c, instance_type, 0);
            url = rt_xasprintf("%s/server/%s/%s/prices", b, v, t);
            curl_free(v);
            curl_free(t);
            char err[256];
            body = get(c, url, deadline, err, sizeof(err));
            free(url);
            /* An instance Keeper does not know is no failure of the lookup. */
            if (body)
                out->have_current = insight_keeper_parse_price(body, region, &out->current_per_hour,
                                                               out->current_currency,
                                                               sizeof(out->current_currency)) > 0;
            free(body);
        }
    } else if (!c) {
        snprintf(out->error, sizeof(out->error), "libcurl could not start");
    }
    curl_easy_cleanup(c);
    curl_global_cleanup();
    free(b);
}
