#include "notice/message.h"

#include "rt/json.h"
#include "rt/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct text {
    char *buf;
    size_t len, cap;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (t->len + (size_t)n + 1 > t->cap) {
        t->cap = (t->len + (size_t)n + 1) * 2;
        t->buf = rt_xrealloc(t->buf, t->cap);
    }
    va_start(ap, fmt);
    vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

static void bytes(char *buf, size_t size, double b)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", b, units[u]);
}

static void duration(char *buf, size_t size, double secs)
{
    long s = lround(secs);
    if (s < 60)
        snprintf(buf, size, "%.1f s", secs);
    else if (s < 3600)
        snprintf(buf, size, "%ld min %02ld s", s / 60, s % 60);
    else
        snprintf(buf, size, "%ld h %02ld min", s / 3600, s % 3600 / 60);
}

/* "Job 42 (train)", "Slurm job 7 (train) as job 42" */
static void who(struct json_object *job, char *buf, size_t size)
{
    int64_t id = 0, sid = 0;
    rt_json_get_i64(job, "id", &id);
    const char *name = rt_json_get_string(job, "name");
    struct json_object *sched = rt_json_get_object(job, "scheduler");
    if (sched && rt_json_get_i64(sched, "job_id", &sid))
        snprintf(buf, size, "Slurm job %lld%s%s%s (tracked as job %lld)", (long long)sid, name ? " (" : "",
                 name ? name : "", name ? ")" : "", (long long)id);
    else
        snprintf(buf, size, "Job %lld%s%s%s", (long long)id, name ? " (" : "", name ? name : "", name ? ")" : "");
}

/* "finished", "failed (exit code 3)", "failed (killed by signal 9)" */
static void outcome(struct json_object *job, char *buf, size_t size)
{
    const char *state = rt_json_get_string(job, "state");
    int64_t code = 0, sig = 0;
    if (rt_json_get_i64(job, "signal", &sig) && sig > 0)
        snprintf(buf, size, "%s (killed by signal %lld)", state ? state : "ended", (long long)sig);
    else if (rt_json_get_i64(job, "exit_code", &code) && code != 0)
        snprintf(buf, size, "%s (exit code %lld)", state ? state : "ended", (long long)code);
    else
        snprintf(buf, size, "%s", state ? state : "ended");
}

/* "; efficiency 24% of 8 CPUs" where the job has that efficiency */
static void efficiency(struct text *t, struct json_object *job, const char *key, const char *of)
{
    double pct;
    if (rt_json_get_double(rt_json_get_object(job, "efficiency"), key, &pct))
        put(t, "; efficiency %.0f%% of %s", pct, of);
}

void rt_notice_compose(struct json_object *job, const char *host, const char *user, struct rt_notice_msg *out)
{
    char id[160], end[96], dur[48], a[32], b[32];
    who(job, id, sizeof(id));
    outcome(job, end, sizeof(end));
    struct json_object *s = rt_json_get_object(job, "summary"), *req = rt_json_get_object(job, "request");
    struct json_object *notes = rt_json_get_array(job, "notes");
    size_t nnotes = notes ? json_object_array_length(notes) : 0;
    double secs = 0, cpu = 0, avg = 0, peak = 0, rss = 0, gpu = 0, v;
    rt_json_get_double(s, "duration_secs", &secs);
    duration(dur, sizeof(dur), secs);

    char subject[320];
    int n = snprintf(subject, sizeof(subject), "%s %s on %s", id, end, host);
    if (nnotes && n > 0 && (size_t)n < sizeof(subject))
        snprintf(subject + n, sizeof(subject) - (size_t)n, ": %zu note%s", nnotes, nnotes == 1 ? "" : "s");
    out->subject = rt_xstrdup(subject);

    struct text t = {0};
    int64_t uid = -1;
    rt_json_get_i64(job, "owner_uid", &uid);
    if (user)
        put(&t, "%s of %s %s on %s after %s.\n", id, user, end, host, dur);
    else
        put(&t, "%s of uid %lld %s on %s after %s.\n", id, (long long)uid, end, host, dur);
    rt_json_get_double(s, "cpu_secs", &cpu);
    rt_json_get_double(s, "avg_cores", &avg);
    rt_json_get_double(s, "peak_cores", &peak);
    put(&t, "CPU: %.1f s, %.2f cores on average, %.2f at the peak", cpu, avg, peak);
    char cpus[32] = "";
    if (rt_json_get_double(req, "cpus", &v))
        snprintf(cpus, sizeof(cpus), "%g CPU%s", v, v == 1 ? "" : "s");
    efficiency(&t, job, "cpu_pct", cpus);
    put(&t, "\n");
    if (rt_json_get_double(s, "memory_peak_bytes", &rss) || rt_json_get_double(s, "peak_rss_bytes", &rss)) {
        bytes(a, sizeof(a), rss);
        put(&t, "Memory: %s at the peak", a);
        if (rt_json_get_double(req, "memory_bytes", &v)) {
            bytes(b, sizeof(b), v);
            efficiency(&t, job, "memory_pct", b);
        }
        put(&t, "\n");
    }
    if (rt_json_get_double(s, "gpu_avg_usage", &gpu)) {
        put(&t, "GPU: %.2f GPUs in use on average", gpu);
        char gpus[32] = "";
        if (rt_json_get_double(req, "gpus", &v))
            snprintf(gpus, sizeof(gpus), "%g GPU%s", v, v == 1 ? "" : "s");
        efficiency(&t, job, "gpu_pct", gpus);
        put(&t, "\n");
    }
    if (nnotes)
        put(&t, "Notes:\n");
    for (size_t i = 0; i < nnotes; i++) {
        const char *text = rt_json_get_string(json_object_array_get_idx(notes, i), "text");
        put(&t, "- %s\n", text ? text : "?");
    }
    out->text = t.buf ? t.buf : rt_xstrdup("");

    struct json_object *body = json_object_new_object();
    json_object_object_add(body, "text", json_object_new_string(out->text));
    json_object_object_add(body, "host", json_object_new_string(host));
    json_object_object_add(body, "job", json_object_get(job));
    out->json = rt_xstrdup(rt_json_plain(body));
    json_object_put(body);
}

void rt_notice_msg_free(struct rt_notice_msg *m)
{
    free(m->subject);
    free(m->text);
    free(m->json);
    memset(m, 0, sizeof(*m));
}
