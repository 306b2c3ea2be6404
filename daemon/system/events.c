/* Journal records with fixed MESSAGE_IDs (events.h). A record is built as
 * an iovec array of "FIELD=value" strings in one stack buffer, then sent
 * with sd_journal_sendv, or its MESSAGE printed to stderr. */
#include "system/events.h"

#include "config/config.h"
#include "system/log.h"
#include "rt/json.h"
#include "rt/text.h"
#include "rt/util.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-journal.h>

#define REC_FIELDS 40
#define REC_BYTES 8192
/* At most four fields carry user text (name, command, error, reason), so
 * with this cap the fixed fields always fit. */
#define MAX_FIELD 1024
#define MAX_NAME_IN_MESSAGE 128

struct rec {
    int priority;
    int n;
    size_t used;
    struct iovec iov[REC_FIELDS];
    char buf[REC_BYTES];
    char message[1024];
};

static rt_event_sink sink;
static void *sink_data;

void rt_events_set_sink(rt_event_sink fn, void *userdata)
{
    sink = fn;
    sink_data = userdata;
}

/* Add one "FIELD=value", cut at MAX_FIELD bytes. */
static void field(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void field(struct rec *r, const char *fmt, ...)
{
    size_t room = sizeof(r->buf) - r->used;
    if (room > MAX_FIELD + 1)
        room = MAX_FIELD + 1;
    if (r->n >= REC_FIELDS || room < 2)
        return;
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(r->buf + r->used, room, fmt, ap);
    va_end(ap);
    if (len < 0)
        return;
    size_t n = (size_t)len < room ? (size_t)len : room - 1;
    r->iov[r->n].iov_base = r->buf + r->used;
    r->iov[r->n].iov_len = n;
    r->n++;
    r->used += n + 1;
}

static void message(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void message(struct rec *r, const char *fmt, ...)
{
    size_t len = strlen(r->message);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message + len, sizeof(r->message) - len, fmt, ap);
    va_end(ap);
}

/* A user-supplied string made safe for a one-line message or a field:
 * control characters escaped as systemd shows them (rt_escape_into), long names cut. */
static const char *clean(const char *s, char *buf, size_t size)
{
    rt_escape_into(buf, size, s);
    return buf;
}

static void human_bytes(uint64_t b, char *buf, size_t size)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (b < 1024) {
        snprintf(buf, size, "%" PRIu64 " B", b);
        return;
    }
    double v = (double)b / 1024;
    size_t u = 0;
    while (v >= 1024 && u + 1 < RT_ARRAY_SIZE(units)) {
        v /= 1024;
        u++;
    }
    snprintf(buf, size, "%.1f %s", v, units[u]);
}

static void human_usec(uint64_t usec, char *buf, size_t size)
{
    uint64_t s = usec / 1000000;
    if (s < 60)
        snprintf(buf, size, "%.1fs", (double)usec / 1e6);
    else if (s < 3600)
        snprintf(buf, size, "%" PRIu64 "min %" PRIu64 "s", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, size, "%" PRIu64 "h %" PRIu64 "min", s / 3600, s % 3600 / 60);
    else
        snprintf(buf, size, "%" PRIu64 "d %" PRIu64 "h", s / 86400, s % 86400 / 3600);
}

static void emit(struct rec *r, const char *msgid)
{
    if (r->priority > rt_log_level())
        return;
    field(r, "MESSAGE=%s", r->message);
    field(r, "MESSAGE_ID=%s", msgid);
    field(r, "PRIORITY=%d", r->priority);
    field(r, "SYSLOG_IDENTIFIER=resource-trackerd");
    if (sink)
        sink(r->iov, r->n, sink_data);
    else if (rt_log_to_journal())
        sd_journal_sendv(r->iov, r->n);
    else
        rt_log(r->priority, "%s", r->message);
}

static void job_fields(struct rec *r, const struct rt_event_job *job)
{
    field(r, "JOB_ID=%s", job->id ? job->id : "");
    if (job->name && *job->name)
        field(r, "JOB_NAME=%s", job->name);
    if (job->owner_uid != RT_EVENT_UID_UNKNOWN)
        field(r, "JOB_OWNER_UID=%u", (unsigned)job->owner_uid);
    if (job->owner && *job->owner)
        field(r, "JOB_OWNER=%s", job->owner);
    if (job->root_pid > 0)
        field(r, "JOB_ROOT_PID=%d", (int)job->root_pid);
}

/* "Job 42 (train)" or "job 42". */
/* "alice (uid 1001)", or "uid 1001" for a uid without a user. */
static void job_owner(struct rec *r, const char *word, const struct rt_event_job *job)
{
    char owner[MAX_NAME_IN_MESSAGE];
    if (job->owner_uid == RT_EVENT_UID_UNKNOWN)
        return;
    if (job->owner && *job->owner)
        message(r, " %s %s (uid %u)", word, clean(job->owner, owner, sizeof(owner)), (unsigned)job->owner_uid);
    else
        message(r, " %s uid %u", word, (unsigned)job->owner_uid);
}

static void job_title(struct rec *r, const char *word, const struct rt_event_job *job)
{
    char id[MAX_NAME_IN_MESSAGE], name[MAX_NAME_IN_MESSAGE];
    message(r, "%s %s", word, clean(job->id, id, sizeof(id)));
    if (job->name && *job->name)
        message(r, " (%s)", clean(job->name, name, sizeof(name)));
}

void rt_event_daemon_started(const struct rt_event_daemon *d)
{
    struct rec r = {.priority = LOG_INFO};
    char iv[32];
    human_usec((uint64_t)(d->interval_secs * 1e6 + 0.5), iv, sizeof(iv));
    message(&r, "resource-trackerd %s started: sampling every %s, socket %s%s, %u GPU%s, %u running job%s restored",
            d->version, iv, d->socket_path, d->socket_activated ? " (socket-activated)" : "", d->gpus,
            d->gpus == 1 ? "" : "s", d->jobs_restored, d->jobs_restored == 1 ? "" : "s");
    field(&r, "RT_VERSION=%s", d->version);
    field(&r, "SAMPLING_INTERVAL_USEC=%" PRIu64, (uint64_t)(d->interval_secs * 1e6 + 0.5));
    field(&r, "SAMPLING_INTERVAL=%s", iv);
    field(&r, "SOCKET_PATH=%s", d->socket_path);
    field(&r, "SOCKET_ACTIVATED=%d", d->socket_activated ? 1 : 0);
    field(&r, "STATE_DIR=%s", d->state_dir);
    field(&r, "JOBS_RESTORED=%u", d->jobs_restored);
    field(&r, "GPU_COUNT=%u", d->gpus);
    emit(&r, RT_MSGID_DAEMON_STARTED);
}

void rt_event_daemon_stopped(const char *reason, uint64_t uptime_usec)
{
    struct rec r = {.priority = LOG_INFO};
    char up[32];
    human_usec(uptime_usec, up, sizeof(up));
    message(&r, "resource-trackerd stopped (%s) after %s", reason, up);
    field(&r, "STOP_REASON=%s", reason);
    field(&r, "UPTIME_USEC=%" PRIu64, uptime_usec);
    emit(&r, RT_MSGID_DAEMON_STOPPED);
}

/* "a b c" for the keys of bits. */
static void key_list(uint64_t bits, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (uint64_t bit = 1; bit && len < size; bit <<= 1)
        if (bits & bit)
            len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? " " : "", rt_config_key_name(bit));
}

void rt_event_config_reloaded(const char *path, uint64_t changed, uint64_t waiting)
{
    struct rec r = {.priority = LOG_INFO};
    char keys[512], later[512];
    key_list(changed, keys, sizeof(keys));
    key_list(waiting, later, sizeof(later));
    message(&r, "Configuration %s reloaded: %s", path, changed ? keys : "nothing changed");
    if (waiting)
        message(&r, " (%s: at the next restart)", later);
    field(&r, "CONFIG_FILE=%s", path);
    field(&r, "CONFIG_CHANGED=%s", changed ? keys : "nothing");
    field(&r, "CONFIG_RESTART_NEEDED=%s", waiting ? later : "nothing");
    emit(&r, RT_MSGID_CONFIG_RELOADED);
}

void rt_event_config_rejected(const char *path, const char *error)
{
    struct rec r = {.priority = LOG_ERR};
    message(&r, "Configuration refused, keeping the running one: %s", error);
    field(&r, "CONFIG_FILE=%s", path);
    field(&r, "CONFIG_ERROR=%s", error);
    emit(&r, RT_MSGID_CONFIG_REJECTED);
}

void rt_event_job_started(const struct rt_event_job *job)
{
    struct rec r = {.priority = LOG_INFO};
    job_title(&r, "Job", job);
    message(&r, " started");
    job_owner(&r, "for", job);
    if (job->root_pid > 0)
        message(&r, ", root pid %d", (int)job->root_pid);
    job_fields(&r, job);
    char cmd[MAX_FIELD];
    if (job->command && *job->command)
        field(&r, "JOB_COMMAND=%s", clean(job->command, cmd, sizeof(cmd)));
    emit(&r, RT_MSGID_JOB_STARTED);
}

static void job_result(const struct rt_event_job_end *e, const char *state, char *buf, size_t size)
{
    if (strcmp(state, "stopped") == 0)
        snprintf(buf, size, "tracking stopped");
    else if (e->exit_status < 0)
        snprintf(buf, size, "exit status unknown");
    else
        snprintf(buf, size, "exit status %d", e->exit_status);
}

/* A total of the job: false when it is null. */
static bool total(const struct rt_event_job_end *e, const char *key, double *v)
{
    int row = rt_fig_total_find(key);
    return row >= 0 && rt_fig_total_value(e->totals, (size_t)row, (double)e->duration_usec / 1e6, v);
}

static void gpu_usage(const struct rt_event_job_end *e, unsigned gpus, char *buf, size_t size)
{
    if (gpus == 0) {
        snprintf(buf, size, "none");
        return;
    }
    char mem[32];
    double v;
    size_t len = (size_t)snprintf(buf, size, "%u GPU%s", gpus, gpus == 1 ? "" : "s");
    if (total(e, "gpu_energy_joules", &v) && len < size)
        len += (size_t)snprintf(buf + len, size - len, ", %.1f J", v);
    if (total(e, "gpu_peak_vram_bytes", &v) && len < size) {
        human_bytes((uint64_t)v, mem, sizeof(mem));
        len += (size_t)snprintf(buf + len, size - len, ", GPU memory peak %s", mem);
    }
    if (total(e, "gpu_avg_usage", &v) && len < size)
        snprintf(buf + len, size - len, ", GPU utilization %.1f%%", v * 100);
}

/* A total for people, in its unit. */
static void human_total(const struct rt_fig_total *t, double v, char *buf, size_t size)
{
    if (t->unit == RT_UNIT_SECS)
        human_usec((uint64_t)llround(v * 1e6), buf, size);
    else if (t->unit == RT_UNIT_BYTES)
        human_bytes((uint64_t)v, buf, size);
    else
        snprintf(buf, size, "%.2f", v);
}

/* The journal fields of the GPU totals or the others; the ones for people
 * are also said in the message. */
static void total_fields(struct rec *r, const struct rt_event_job_end *e, bool gpu, const char **sep)
{
    for (size_t i = 0; i < rt_fig_ntotals; i++) {
        const struct rt_fig_total *t = &rt_fig_totals[i];
        if (!t->journal || (t->src >= 0 && (rt_fig_samples[t->src].gate & RT_GATE_GPU)) != gpu)
            continue;
        double v;
        bool known = rt_fig_total_value(e->totals, i, (double)e->duration_usec / 1e6, &v);
        char text[32] = "unknown";
        if (known) {
            double x = v * (t->journal_scale ? t->journal_scale : 1);
            if (t->journal_decimals < 0)
                field(r, "%s=%" PRIu64, t->journal, x > 0 ? (uint64_t)llround(x) : 0);
            else
                field(r, "%s=%.*f", t->journal, t->journal_decimals, x);
            human_total(t, v, text, sizeof(text));
        }
        if (!t->journal_text)
            continue;
        field(r, "%s=%s", t->journal_text, text);
        if (known) {
            message(r, "%s%s %s", *sep, t->label, text);
            *sep = ", ";
        }
    }
}

/* What the job asked for, its efficiency and its notes (docs/efficiency.md). */
static void request_fields(struct rec *r, const struct rt_event_job_end *e)
{
    static const struct {
        const char *key, *field;
    } req[] = {{"cpus", "JOB_REQUEST_CPUS"}, {"memory_bytes", "JOB_REQUEST_MEMORY_BYTES"}, {"gpus", "JOB_REQUEST_GPUS"}},
      eff[] = {{"cpu_pct", "JOB_CPU_EFFICIENCY_PERCENT"},
               {"memory_pct", "JOB_MEMORY_EFFICIENCY_PERCENT"},
               {"gpu_pct", "JOB_GPU_EFFICIENCY_PERCENT"}};
    double v;
    for (size_t i = 0; e->request && i < sizeof(req) / sizeof(req[0]); i++)
        if (rt_json_get_double(e->request, req[i].key, &v))
            field(r, "%s=%.15g", req[i].field, v);
    const char *sep = "; efficiency ";
    for (size_t i = 0; e->efficiency && i < sizeof(eff) / sizeof(eff[0]); i++)
        if (rt_json_get_double(e->efficiency, eff[i].key, &v)) {
            field(r, "%s=%.1f", eff[i].field, v);
            message(r, "%s%.*s %.0f%%", sep, (int)strcspn(eff[i].key, "_"), eff[i].key, v);
            sep = ", ";
        }
    size_t n = e->notes ? json_object_array_length(e->notes) : 0;
    char ids[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        struct json_object *note = json_object_array_get_idx(e->notes, i);
        const char *id = rt_json_get_string(note, "id"), *text = rt_json_get_string(note, "text");
        if (id && len < sizeof(ids))
            len += (size_t)snprintf(ids + len, sizeof(ids) - len, "%s%s", len ? " " : "", id);
        if (text)
            field(r, "JOB_NOTE=%s", text);
    }
    if (n) {
        field(r, "JOB_NOTES=%s", ids);
        message(r, "; %zu note%s: %s", n, n == 1 ? "" : "s", ids);
    }
}

void rt_event_job_finished(const struct rt_event_job *job, const struct rt_event_job_end *e)
{
    struct rec r = {.priority = LOG_INFO};
    char dur[32], res[48], gpu[160];
    const char *state = e->state && *e->state ? e->state : "finished";
    const struct rt_job_summary *s = e->totals;
    unsigned gpus = s->gpus ? (unsigned)json_object_array_length(s->gpus) : 0;
    human_usec(e->duration_usec, dur, sizeof(dur));
    job_result(e, state, res, sizeof(res));
    gpu_usage(e, gpus, gpu, sizeof(gpu));

    job_title(&r, "Job", job);
    job_owner(&r, "of", job);
    message(&r, " %s after %s", strcmp(state, "lost") == 0 ? "was lost" : state, dur);
    if (e->exit_status >= 0)
        message(&r, ", exit status %d", e->exit_status);
    else if (strcmp(state, "stopped") != 0)
        message(&r, ", exit status unknown");

    job_fields(&r, job);
    field(&r, "JOB_STATE=%s", state);
    field(&r, "JOB_RESULT=%s", res);
    if (e->exit_status >= 0)
        field(&r, "EXIT_STATUS=%d", e->exit_status);
    field(&r, "JOB_DURATION_USEC=%" PRIu64, e->duration_usec);
    field(&r, "JOB_DURATION=%s", dur);
    field(&r, "JOB_SAMPLES=%" PRIu64, s->samples);
    field(&r, "JOB_PROCESSES_MAX=%u", e->processes_max);
    const char *sep = ": ";
    total_fields(&r, e, false, &sep);
    field(&r, "GPU_USAGE=%s", gpu);
    if (gpus > 0) {
        message(&r, ", %s", gpu);
        field(&r, "GPU_COUNT=%u", gpus);
        total_fields(&r, e, true, &sep);
    }
    request_fields(&r, e);
    emit(&r, RT_MSGID_JOB_FINISHED);
}

void rt_event_upload_failed(const struct rt_event_job *job, const struct rt_upload_failure *f)
{
    struct rec r = {.priority = LOG_WARNING};
    char err[256], retry[32];
    if (job)
        job_title(&r, "Upload of job", job);
    else
        message(&r, "Upload");
    message(&r, " failed at %s", f->stage);
    if (f->http_status > 0)
        message(&r, " with HTTP %ld", f->http_status);
    if (f->error && *f->error)
        message(&r, ": %s", clean(f->error, err, sizeof(err)));
    if (f->attempt) {
        human_usec(f->retry_in_usec, retry, sizeof(retry));
        message(&r, " (attempt %u, next in %s, %u batch%s queued)", f->attempt, retry, f->queued_batches,
                f->queued_batches == 1 ? "" : "es");
    } else {
        message(&r, "; retrying with backoff");
    }
    if (job)
        job_fields(&r, job);
    field(&r, "UPLOAD_STAGE=%s", f->stage);
    if (f->run_id && *f->run_id)
        field(&r, "UPLOAD_RUN_ID=%s", f->run_id);
    if (f->http_status > 0) {
        field(&r, "UPLOAD_HTTP_STATUS=%ld", f->http_status);
        field(&r, "UPLOAD_HTTP=HTTP %ld", f->http_status);
    } else {
        field(&r, "UPLOAD_HTTP=no HTTP answer");
    }
    char ferr[MAX_FIELD];
    field(&r, "UPLOAD_ERROR=%s", f->error && *f->error ? clean(f->error, ferr, sizeof(ferr)) : "unknown error");
    if (f->attempt) {
        field(&r, "UPLOAD_ATTEMPT=%u", f->attempt);
        field(&r, "UPLOAD_RETRY_USEC=%" PRIu64, f->retry_in_usec);
    }
    field(&r, "UPLOAD_QUEUE=%u", f->queued_batches);
    emit(&r, RT_MSGID_UPLOAD_FAILED);
}

void rt_event_upload_recovered(const struct rt_event_job *job, const char *run_id, unsigned failed_attempts,
                               uint64_t outage_usec)
{
    struct rec r = {.priority = LOG_NOTICE};
    char outage[32] = "";
    if (job)
        job_title(&r, "Upload of job", job);
    else
        message(&r, "Upload");
    message(&r, " recovered after %u failed attempt%s", failed_attempts, failed_attempts == 1 ? "" : "s");
    if (outage_usec) {
        human_usec(outage_usec, outage, sizeof(outage));
        message(&r, " over %s", outage);
    }
    if (job)
        job_fields(&r, job);
    if (run_id && *run_id)
        field(&r, "UPLOAD_RUN_ID=%s", run_id);
    field(&r, "UPLOAD_FAILED_ATTEMPTS=%u", failed_attempts);
    if (outage_usec)
        field(&r, "UPLOAD_OUTAGE_USEC=%" PRIu64, outage_usec);
    field(&r, "UPLOAD_OUTAGE=%s", outage_usec ? outage : "an unknown time");
    emit(&r, RT_MSGID_UPLOAD_RECOVERED);
}

static void gpu_event(struct rec *r, const struct rt_event_gpu *g, const char *what)
{
    char name[MAX_NAME_IN_MESSAGE], uuid[MAX_NAME_IN_MESSAGE];
    /* a device that hung before its first answer has no name yet */
    message(r, "GPU %u %s: %s %s", g->index, what, g->vendor ? g->vendor : "?",
            g->name && *g->name ? clean(g->name, name, sizeof(name)) : "(name not read yet)");
    if (g->uuid && *g->uuid)
        message(r, " (%s)", clean(g->uuid, uuid, sizeof(uuid)));
    field(r, "GPU_INDEX=%u", g->index);
    field(r, "GPU_VENDOR=%s", g->vendor ? g->vendor : "");
    field(r, "GPU_NAME=%s", g->name ? g->name : "");
    field(r, "GPU_UUID=%s", g->uuid && *g->uuid ? g->uuid : "unknown");
    if (g->memory_total_bytes)
        field(r, "GPU_MEMORY_TOTAL_BYTES=%" PRIu64, g->memory_total_bytes);
}

void rt_event_gpu_appeared(const struct rt_event_gpu *g)
{
    struct rec r = {.priority = LOG_INFO};
    gpu_event(&r, g, "appeared");
    emit(&r, RT_MSGID_GPU_APPEARED);
}

void rt_event_gpu_lost(const struct rt_event_gpu *g, const char *reason)
{
    struct rec r = {.priority = LOG_WARNING};
    char why[256];
    gpu_event(&r, g, "lost");
    if (reason && *reason)
        message(&r, ": %s", clean(reason, why, sizeof(why)));
    field(&r, "GPU_LOST_REASON=%s", reason && *reason ? reason : "no reason given");
    emit(&r, RT_MSGID_GPU_LOST);
}

void rt_event_gpu_idle(const struct rt_event_gpu_idle *e)
{
    struct rec r = {.priority = LOG_NOTICE};
    char held[32], dur[32], uuid[MAX_NAME_IN_MESSAGE];
    gpu_event(&r, e->gpu, e->unused ? "given to a job and unused" : "idle but held");
    if (e->instance_uuid) {
        message(&r, ", MIG instance %s", clean(e->instance_uuid, uuid, sizeof(uuid)));
        field(&r, "GPU_MIG_UUID=%s", e->instance_uuid);
    }
    human_usec((uint64_t)(e->secs * 1e6), dur, sizeof(dur));
    if (e->unused) {
        message(&r, ": no process of the job on it for %s", dur);
    } else {
        human_bytes(e->vram_held_bytes, held, sizeof(held));
        message(&r, ": %s held, use at most %u%% for %s", held, e->util_max, dur);
        field(&r, "GPU_VRAM_HELD_BYTES=%" PRIu64, e->vram_held_bytes);
        field(&r, "GPU_IDLE_UTIL_MAX_PERCENT=%u", e->util_max);
    }
    field(&r, "GPU_IDLE_KIND=%s", e->unused ? "unused" : "held");
    field(&r, "GPU_IDLE=%s", e->unused ? "given to a job and unused by it" : "idle but held");
    field(&r, "GPU_IDLE_SINCE_USEC=%" PRIu64, (uint64_t)(e->since * 1e6));
    field(&r, "GPU_IDLE_FOR=%s", dur);
    for (size_t i = 0; i < e->n_uids; i++) {
        message(&r, "%s uid %u", i ? "," : "; held by", (unsigned)e->uids[i]);
        field(&r, "GPU_HOLDER_UID=%u", (unsigned)e->uids[i]);
    }
    for (size_t i = 0; i < e->n_jobs; i++) {
        job_title(&r, i ? "," : e->n_jobs > 1 ? "; jobs:" : "; job", &e->jobs[i]);
        field(&r, "JOB_ID=%s", e->jobs[i].id);
        if (e->jobs[i].name && *e->jobs[i].name)
            field(&r, "JOB_NAME=%s", e->jobs[i].name);
    }
    emit(&r, RT_MSGID_GPU_IDLE);
}

void rt_event_gpu_xid(const struct rt_event_gpu_xid *e)
{
    struct rec r = {.priority = LOG_WARNING};
    gpu_event(&r, e->gpu, "XID error");
    message(&r, ": XID %u", e->xid);
    field(&r, "GPU_XID=%u", e->xid);
    if (e->job) {
        char id[MAX_NAME_IN_MESSAGE], name[MAX_NAME_IN_MESSAGE];
        job_title(&r, " during job", e->job);
        job_fields(&r, e->job);
        if (e->job->name && *e->job->name)
            field(&r, "GPU_XID_JOB=job %s (%s)", clean(e->job->id, id, sizeof(id)),
                  clean(e->job->name, name, sizeof(name)));
        else
            field(&r, "GPU_XID_JOB=job %s", clean(e->job->id, id, sizeof(id)));
    } else {
        field(&r, "GPU_XID_JOB=no job");
    }
    emit(&r, RT_MSGID_GPU_XID);
}
