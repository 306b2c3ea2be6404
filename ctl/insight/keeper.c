#include "insight/keeper.h"

#include "insight/http.h"
#include "module.h"

#include "rt/json.h"
#include "rt/util.h"
#include "rt/varlink.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define MAX_BODY (8 * 1024 * 1024)

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* libcurl's calls, from the module (ctl-http.so). */
struct http {
    insight_http_get_fn *get;
    insight_http_close_fn *close;
    struct insight_http *h;
};

static bool http_open(struct http *w, char *err, size_t errlen)
{
    insight_http_open_fn *open = ctl_module_sym(CTL_MODULE_HTTP, "insight_http_open", err, errlen);
    w->get = ctl_module_sym(CTL_MODULE_HTTP, "insight_http_get", err, errlen);
    w->close = ctl_module_sym(CTL_MODULE_HTTP, "insight_http_close", err, errlen);
    w->h = open && w->get && w->close ? open(err, errlen) : NULL;
    return w->h != NULL;
}

/* GET url within the time left; the body on a 2xx, else NULL and why. */
static char *get(struct http *w, const char *url, long deadline, char *err, size_t errlen)
{
    static const char *const headers[] = {"X-Application-ID: resource-tracker", "Accept: application/json",
                                          NULL};
    long left = deadline - now_ms();
    if (left <= 0) {
        snprintf(err, errlen, "no answer within %d ms", INSIGHT_KEEPER_TIMEOUT_MS);
        return NULL;
    }
    return w->get(w->h, url, headers, left, MAX_BODY, err, errlen);
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

char *insight_url_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    char *out = rt_xmalloc(3 * strlen(s) + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr("-._~", *p)) {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
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
    struct http w;
    if (!http_open(&w, out->error, sizeof(out->error))) {
        free(b);
        return;
    }
    char *url = servers_url(b, rec);
    char *body = get(&w, url, deadline, out->error, sizeof(out->error));
    free(url);
    if (body) {
        int r = insight_keeper_parse_servers(body, &out->server, out->error, sizeof(out->error));
        out->have_server = r > 0;
        free(body);
        if (r >= 0 && vendor && instance_type) {
            char *v = insight_url_escape(vendor), *t = insight_url_escape(instance_type);
            url = rt_xasprintf("%s/server/%s/%s/prices", b, v, t);
            free(v);
            free(t);
            char err[256];
            body = get(&w, url, deadline, err, sizeof(err));
            free(url);
            /* An instance Keeper does not know is no failure of the lookup. */
            if (body)
                out->have_current = insight_keeper_parse_price(body, region, &out->current_per_hour,
                                                               out->current_currency,
                                                               sizeof(out->current_currency)) > 0;
            free(body);
        }
    }
    w.close(w.h);
    free(b);
}
