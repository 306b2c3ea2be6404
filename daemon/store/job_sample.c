#include "store/job_sample.h"

#include "rt/json.h"
#include "rt/sample.h"
#include "rt/sample_csv.h"
#include "rt/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define AI "{\"actual_interval_ms\":"
#define HOST_TS_NULL "\"host_timestamp_ms\":null,"
#define JOB_NULL "\"job_id\":null,\"job_name\":null,"
#define TAIL_NULL ",\"tracked_pid\":null}"

static const char *find(const struct rt_host_text *h, size_t from, const char *what)
{
    if (from > h->len)
        return NULL;
    return memmem(h->p + from, h->len - from, what, strlen(what));
}

bool rt_host_text_parse(const char *p, size_t len, struct rt_host_text *h)
{
    memset(h, 0, sizeof(*h));
    h->p = p;
    h->len = len;
    if (len > strlen(AI) && memcmp(p, AI, strlen(AI)) == 0) {
        h->ai_val = strlen(AI);
        const char *comma = memchr(p + h->ai_val, ',', len - h->ai_val);
        if (!comma)
            return false;
        h->ai_end = (size_t)(comma - p);
    }
    /* The cpu object comes first and holds numbers only: the first match of
     * a key there is that key. Its keys are sorted: the job's, all named
     * process_*, stand around "process_count" and before "stime_secs". */
    const char *a = find(h, 0, "\"process_"), *b = a ? find(h, (size_t)(a - p), "\"process_count\":") : NULL;
    const char *c = b ? find(h, (size_t)(b - p), ",\"") : NULL;
    if (c)
        c++;
    const char *d = c ? find(h, (size_t)(c - p), "\"stime_secs\":") : NULL;
    /* Inside a string a '"' is always escaped, so `,"job_id"` is structure. */
    const char *e = d ? find(h, (size_t)(d - p), ",\"job_id\":") : NULL;
    if (!e || (size_t)(e - p) + 1 + strlen(JOB_NULL) > len || memcmp(e + 1, JOB_NULL, strlen(JOB_NULL)) != 0)
        return false;
    h->proc1 = (size_t)(a - p);
    h->proc1_end = (size_t)(b - p);
    h->proc2 = (size_t)(c - p);
    h->proc2_end = (size_t)(d - p);
    h->job = (size_t)(e - p) + 1;
    h->job_end = h->job + strlen(JOB_NULL);
    /* Host samples from before host_timestamp_ms have no such key. */
    size_t hl = strlen(HOST_TS_NULL);
    if (h->job >= h->proc2_end + hl && memcmp(p + h->job - hl, HOST_TS_NULL, hl) == 0)
        h->job -= hl;
    /* The end: ["timestamp_ms":DIGITS,]"timestamp_secs":DIGITS,"tracked_pid":null} */
    if (len < strlen(TAIL_NULL) || memcmp(p + len - strlen(TAIL_NULL), TAIL_NULL, strlen(TAIL_NULL)) != 0)
        return false;
    size_t t = len - strlen(TAIL_NULL);
    static const char *const keys[] = {",\"timestamp_secs\":", ",\"timestamp_ms\":"};
    for (int k = 0; k < 2; k++) {
        while (t > h->job_end && p[t - 1] >= '0' && p[t - 1] <= '9')
            t--;
        size_t kl = strlen(keys[k]);
        if (t < h->job_end + kl || memcmp(p + t - kl, keys[k], kl) != 0) {
            if (k == 0)
                return false;
            break; /* no timestamp_ms: a sample from before it */
        }
        uint64_t v = 0;
        for (size_t i = t; p[i] >= '0' && p[i] <= '9' && v < UINT64_MAX / 100; i++)
            v = v * 10 + (uint64_t)(p[i] - '0');
        t -= kl;
        h->has_ms = k == 1;
        h->timestamp_ms = h->has_ms ? v : v * 1000;
    }
    h->tail = t + 1;
    return true;
}

static void put_str(struct rt_buf *b, const char *s)
{
    rt_buf_put(b, s, strlen(s));
}

static void put_u64(struct rt_buf *b, uint64_t v)
{
    char tmp[20];
    rt_buf_put(b, tmp, rt_fmt_u64(tmp, v));
}

static void put_i64(struct rt_buf *b, int64_t v)
{
    if (v < 0)
        rt_buf_byte(b, '-');
    put_u64(b, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

static void put_slice(struct rt_buf *b, const struct rt_host_text *h, size_t from, size_t to)
{
    rt_buf_put(b, h->p + from, to - from);
}

/* The job's keys on one side of "process_count", each with its comma. */
static void put_figures(struct rt_buf *out, const struct rt_job_figures *f, bool before_count)
{
    for (size_t i = 0; i < rt_fig_nsamples; i++) {
        const struct rt_fig_sample *r = &rt_fig_samples[i];
        if (!r->json || (strcmp(r->json, "process_count") < 0) != before_count)
            continue;
        rt_buf_byte(out, '"');
        put_str(out, r->json);
        put_str(out, "\":");
        char tmp[64];
        double v;
        size_t n = rt_fig_sample_value(f, i, &v) ? rt_fig_sample_text(r, v, tmp) : 0;
        if (n)
            rt_buf_put(out, tmp, n);
        else
            put_str(out, "null");
        rt_buf_byte(out, ',');
    }
}

void rt_job_sample_json(const struct rt_host_text *h, const struct rt_job_sample *s, struct rt_buf *out)
{
    const struct rt_job_figures *f = s->f;
    rt_buf_reserve(out, h->len + 512);
    if (h->ai_end) {
        put_slice(out, h, 0, h->ai_val);
        put_u64(out, f->interval_ms);
        put_slice(out, h, h->ai_end, h->proc1);
    } else {
        put_slice(out, h, 0, h->proc1);
    }
    put_figures(out, f, true);
    put_slice(out, h, h->proc1_end, h->proc2);
    put_figures(out, f, false);
    put_slice(out, h, h->proc2_end, h->job);
    put_str(out, "\"host_timestamp_ms\":");
    put_u64(out, h->timestamp_ms);
    put_str(out, ",\"job_id\":");
    if (s->job_id)
        put_u64(out, s->job_id);
    else
        put_str(out, "null");
    put_str(out, ",\"job_name\":");
    put_str(out, s->name_json);
    rt_buf_byte(out, ',');
    put_slice(out, h, h->job_end, h->tail);
    if (h->has_ms) {
        put_str(out, "\"timestamp_ms\":");
        put_u64(out, s->timestamp_ms);
        rt_buf_byte(out, ',');
    }
    put_str(out, "\"timestamp_secs\":");
    put_u64(out, s->timestamp_ms / 1000);
    put_str(out, ",\"tracked_pid\":");
    put_i64(out, s->pid);
    if (!h->ai_end) { /* json-c adds a key it did not have at the end */
        put_str(out, ",\"actual_interval_ms\":");
        put_u64(out, f->interval_ms);
    }
    rt_buf_byte(out, '}');
}

bool rt_job_sample_csv(const double *host, size_t n, const struct rt_job_sample *s, struct rt_buf *out)
{
    const struct rt_job_figures *f = s->f;
    struct rt_csv_job job = {.has_job = true, .pid = s->pid, .f = f, .host_repeated = s->host_repeated};
    rt_buf_reserve(out, 512);
    size_t len = rt_csv_row(host, n, s->timestamp_ms, (double)f->interval_ms / 1000.0, &job,
                            (char *)out->p + out->len, out->cap - out->len);
    if (len >= out->cap - out->len) {
        rt_buf_reserve(out, len + 1);
        len = rt_csv_row(host, n, s->timestamp_ms, (double)f->interval_ms / 1000.0, &job, (char *)out->p + out->len,
                         out->cap - out->len);
    }
    if (!len)
        return false;
    out->len += len;
    return true;
}

char *rt_job_name_json(const char *name)
{
    if (!name)
        return rt_xstrdup("null");
    struct json_object *o = json_object_new_string(name);
    char *s = rt_xstrdup(rt_json_plain(o));
    json_object_put(o);
    return s;
}
