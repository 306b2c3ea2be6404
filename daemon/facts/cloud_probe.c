#include "facts/cloud_probe.h"

#include "system/log.h"
#include "rt/util.h"

#include <stdlib.h>
#include <string.h>

/* Metadata documents are a few KiB; anything larger is not one. */
#define MAX_BODY (256 * 1024)

struct rt_cloud_run {
    const struct rt_cloud_config *cfg;
    CURLM *multi;
    uint64_t deadline_ns;
    struct rt_cloud_probe probes[RT_CLOUD_VENDORS];
};

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    struct rt_cloud_probe *p = arg;
    size_t len = size * n;
    if (p->len + len > MAX_BODY) {
        p->too_big = true;
        return 0; /* aborts the transfer */
    }
    p->body = rt_xrealloc(p->body, p->len + len + 1);
    memcpy(p->body + p->len, data, len);
    p->len += len;
    p->body[p->len] = '\0';
    return len;
}

void rt_cloud_probe_end(struct rt_cloud_probe *p)
{
    p->state = p->confirmed ? RT_PROBE_FOUND : RT_PROBE_FAILED;
}

static void start(struct rt_cloud_run *run, struct rt_cloud_probe *p, int next_step, bool put,
                  bool alicloud, const char *path, const char *header)
{
    const struct rt_cloud_config *cfg = run->cfg;
    uint64_t now = rt_mono_ns();
    long left_ms = now < run->deadline_ns ? (long)((run->deadline_ns - now) / 1000000) : 0;
    CURL *e = left_ms > 0 ? curl_easy_init() : NULL;
    if (!e) {
        rt_cloud_probe_end(p);
        return;
    }
    char *url = rt_xasprintf("%s%s", alicloud ? cfg->alicloud_base : cfg->imds_base, path);
    /* Not clipped to the run's deadline: the run ends there itself, keeping
     * what a confirmed vendor had; a request curl ended a tick early would
     * let the next one start in the last milliseconds. */
    long connect_ms = cfg->connect_ms, total_ms = cfg->connect_ms + cfg->response_ms;
    if (header)
        p->headers = curl_slist_append(p->headers, header);
    if (put) {
        /* An empty PUT body; no form Content-Type. */
        p->headers = curl_slist_append(p->headers, "Content-Type:");
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "PUT");
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
    }
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, p);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, p->headers);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROXY, ""); /* never a proxy from the environment */
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, total_ms);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "resource-tracker/" RT_VERSION);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, p);
    free(url);
    p->easy = e;
    p->step = next_step;
    p->started_ns = now;
    if (curl_multi_add_handle(run->multi, e) != CURLM_OK) {
        curl_easy_cleanup(e);
        curl_slist_free_all(p->headers);
        p->easy = NULL;
        p->headers = NULL;
        rt_cloud_probe_end(p);
    }
}

void rt_cloud_get(struct rt_cloud_run *run, struct rt_cloud_probe *p, int next_step,
                  bool alicloud, const char *path, const char *header)
{
    start(run, p, next_step, false, alicloud, path, header);
}

void rt_cloud_put(struct rt_cloud_run *run, struct rt_cloud_probe *p, int next_step,
                  bool alicloud, const char *path, const char *header)
{
    start(run, p, next_step, true, alicloud, path, header);
}

/* Detach the finished request from the probe, let the vendor look at it
 * (it may start the next one), then release it. */
static void finish(struct rt_cloud_run *run, struct rt_cloud_probe *p, CURLcode rc)
{
    CURL *e = p->easy;
    struct curl_slist *headers = p->headers;
    char *body = p->body;
    bool too_big = p->too_big;
    p->easy = NULL;
    p->headers = NULL;
    p->body = NULL;
    p->len = 0;
    p->too_big = false;
    curl_multi_remove_handle(run->multi, e);

    struct rt_cloud_response r = {.easy = e, .body = ""};
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r.status);
    char *trimmed = body ? rt_trim(body) : NULL;
    r.ok = rc == CURLE_OK && r.status / 100 == 2 && !too_big && trimmed && *trimmed;
    if (r.ok)
        r.body = trimmed;
    else if (rc != CURLE_OK)
        rt_debug("cloud: %s step %d: %s", rt_cloud_vendor_ids[p->vendor], p->step,
                 too_big ? "body too large" : curl_easy_strerror(rc));
    else
        rt_debug("cloud: %s step %d: HTTP %ld%s", rt_cloud_vendor_ids[p->vendor], p->step,
                 r.status, r.status / 100 == 2 ? ", empty body" : "");
    rt_cloud_vendor_step(run, p, &r);

    curl_easy_cleanup(e);
    curl_slist_free_all(headers);
    free(body);
}

/* curl bounds connect and the whole request; the response phase alone is
 * bounded here, measured from when the connection was established. */
static void expire_slow_responses(struct rt_cloud_run *run, uint64_t now)
{
    uint64_t response_ns = (uint64_t)run->cfg->response_ms * 1000000;
    for (int v = 0; v < RT_CLOUD_VENDORS; v++) {
        struct rt_cloud_probe *p = &run->probes[v];
        curl_off_t connect_us = 0;
        if (!p->easy || curl_easy_getinfo(p->easy, CURLINFO_CONNECT_TIME_T, &connect_us) != CURLE_OK ||
            connect_us <= 0)
            continue;
        if (now > p->started_ns + (uint64_t)connect_us * 1000 + response_ns)
            finish(run, p, CURLE_OPERATION_TIMEDOUT);
    }
}

/* The winner in precedence order, RT_CLOUD_VENDORS for none, or -1 while a
 * higher-precedence vendor is still undecided. At the end (final), probes
 * still running count when their vendor was already confirmed. */
static int winner(const struct rt_cloud_run *run, bool final)
{
    for (int v = 0; v < RT_CLOUD_VENDORS; v++) {
        const struct rt_cloud_probe *p = &run->probes[v];
        if (p->state == RT_PROBE_FOUND || (final && p->state == RT_PROBE_RUNNING && p->confirmed))
            return v;
        if (p->state == RT_PROBE_RUNNING && !final)
            return -1;
    }
    return RT_CLOUD_VENDORS;
}

void rt_cloud_run_probes(const struct rt_cloud_config *cfg, CURLM *multi,
                         const atomic_bool *cancel, struct rt_cloud_info *out)
{
    struct rt_cloud_run run = {.cfg = cfg, .multi = multi};
    run.deadline_ns = rt_mono_ns() + (uint64_t)cfg->total_ms * 1000000;
    for (int v = 0; v < RT_CLOUD_VENDORS; v++) {
        run.probes[v].vendor = (enum rt_cloud_vendor)v;
        rt_cloud_vendor_step(&run, &run.probes[v], NULL);
    }
    int w = -1;
    while (!atomic_load(cancel) && (w = winner(&run, false)) < 0) {
        uint64_t now = rt_mono_ns();
        if (now >= run.deadline_ns)
            break;
        int running, queued;
        curl_multi_perform(multi, &running);
        CURLMsg *m;
        while ((m = curl_multi_info_read(multi, &queued))) {
            if (m->msg != CURLMSG_DONE)
                continue;
            CURLcode rc = m->data.result;
            char *priv = NULL;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
            finish(&run, (struct rt_cloud_probe *)(void *)priv, rc);
        }
        expire_slow_responses(&run, rt_mono_ns());
        if ((w = winner(&run, false)) >= 0)
            break;
        /* Short waits so slow responses are noticed; the loop lasts ≤ total_ms. */
        uint64_t left_ms = (run.deadline_ns - now) / 1000000 + 1;
        curl_multi_poll(multi, NULL, 0, left_ms < 50 ? (int)left_ms : 50, NULL);
    }
    if (w < 0)
        w = winner(&run, true);

    for (int v = 0; v < RT_CLOUD_VENDORS; v++) {
        struct rt_cloud_probe *p = &run.probes[v];
        if (p->easy) {
            curl_multi_remove_handle(multi, p->easy);
            curl_easy_cleanup(p->easy);
        }
        curl_slist_free_all(p->headers);
        free(p->body);
    }
    memset(out, 0, sizeof(*out));
    if (w < RT_CLOUD_VENDORS) {
        *out = run.probes[w].info;
        rt_strlcpy(out->vendor_id, rt_cloud_vendor_ids[w], sizeof(out->vendor_id));
    }
}
