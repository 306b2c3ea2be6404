/* The link of `run` to the daemon: the job's registration, its sample
 * stream, reconnection when the daemon restarts (the stream resumes at the
 * next sample not yet printed), the final FinishJob, and upload warnings.
 *
 * Two connections: ctrl for calls (idle while the command runs: its end of
 * file tells that the daemon went away, or closed it for being idle, which
 * a new connection at once tells apart), stream for GetJobSamples. */
#include "run/run.h"

#include "rt/json.h"
#include "rt/sample_csv.h"
#include "rt/text.h"
#include "rt/util.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define M(name) RT_VL_INTERFACE "." name
#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 2000
/* After the command ended: how long the status waits for the daemon. */
#define FINISH_WAIT_MS 10000
#define DRAIN_WAIT_MS 5000
#define WATCH_FIRST_MS 2000
#define WATCH_EVERY_MS 3000
#define PENDING_WARN 3 /* batches waiting: uploads fall behind */

static uint64_t ms_from_now(unsigned ms)
{
    return rt_mono_ns() + (uint64_t)ms * 1000000;
}

void run_link_init(struct run_link *l, struct ctl *ctl, struct rt_vl_client *ctrl)
{
    *l = (struct run_link){.ctl = ctl, .ctrl = *ctrl, .stream = {.fd = -1}, .up = true};
}

static void set_job(struct run_link *l, struct json_object *job)
{
    if (!job)
        return;
    json_object_put(l->job);
    l->job = json_object_get(job);
}

/* ---- samples ---- */

/* Print one stream reply; false when the stream is over (or broke). */
static bool print_reply(struct run_link *l, struct json_object *reply)
{
    if (rt_vl_reply_error(reply)) {
        const char *err = rt_vl_reply_error(reply);
        if (strstr(err, ".NoSuchJob")) {
            l->gone = true;
            CTL_ERR("warn: the daemon no longer knows job %llu: the command goes on untracked",
                    (unsigned long long)l->job_id);
        } else {
            ctl_report_error(reply);
        }
        l->stream_ended = true;
        return false;
    }
    struct json_object *p = rt_vl_reply_params(reply);
    const char *csv = rt_json_get_string(p, "csv");
    if (csv) {
        /* A stream that restarts at sample 0 sends the header again. */
        size_t hl = strlen(RT_CSV_HEADER);
        if (l->header_out && strncmp(csv, RT_CSV_HEADER, hl) == 0 && csv[hl] == '\n')
            csv += hl + 1;
        else if (strncmp(csv, RT_CSV_HEADER, hl) == 0)
            l->header_out = true;
        l->emit(l->emit_ctx, csv, strlen(csv));
    } else {
        struct json_object *arr = rt_json_get_array(p, "samples");
        for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
            const char *s = rt_json_plain(json_object_array_get_idx(arr, i));
            l->emit(l->emit_ctx, s, strlen(s));
            l->emit(l->emit_ctx, "\n", 1);
        }
    }
    uint64_t next;
    if (rt_json_get_u64(p, "next_offset", &next))
        l->next_offset = next;
    bool ended = false;
    rt_json_get_bool(p, "ended", &ended);
    if (ended)
        l->stream_ended = true;
    return rt_vl_reply_continues(reply);
}

static void open_stream(struct run_link *l)
{
    if (!l->want_samples || l->stream_ended || l->gone)
        return;
    if (ctl_connect_used(l->ctl, &l->stream) < 0) {
        rt_vl_client_close(&l->stream);
        return; /* ctrl tells whether the daemon is there */
    }
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "id", rt_json_u64(l->job_id));
    json_object_object_add(p, "offset", rt_json_u64(l->next_offset));
    json_object_object_add(p, "format", json_object_new_string(l->csv ? "csv" : "json"));
    json_object_object_add(p, "follow", json_object_new_boolean(1));
    l->streaming = rt_vl_client_send(&l->stream, M("GetJobSamples"), p, RT_VL_MORE) == 0;
}

/* ---- losing and finding the daemon ---- */

static void lost(struct run_link *l, const char *why)
{
    if (!l->up)
        return;
    rt_vl_client_close(&l->ctrl);
    rt_vl_client_close(&l->stream);
    l->streaming = l->watch_pending = false;
    l->up = false;
    l->down_since_ns = rt_mono_ns();
    l->backoff_ms = BACKOFF_FIRST_MS;
    l->retry_at_ns = ms_from_now(l->backoff_ms);
    CTL_ERR("lost the daemon (%s); reconnecting", why);
}

/* One attempt; on success the job is looked up again and its samples resume. */
static bool reconnect(struct run_link *l)
{
    if (ctl_reconnect(l->ctl, &l->ctrl) != 0) {
        l->backoff_ms = l->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : l->backoff_ms * 2;
        l->retry_at_ns = ms_from_now(l->backoff_ms);
        return false;
    }
    l->up = true;
    double away = (double)(rt_mono_ns() - l->down_since_ns) / 1e9;
    struct json_object *p = json_object_new_object(), *reply = NULL;
    json_object_object_add(p, "id", rt_json_u64(l->job_id));
    int e = rt_vl_client_call(&l->ctrl, M("GetJob"), p, &reply, 30000);
    if (e < 0) {
        json_object_put(reply);
        lost(l, strerror(-e));
        return false;
    }
    if (rt_vl_reply_error(reply)) {
        l->gone = true;
        CTL_ERR("warn: reconnected after %.1f s, but the daemon no longer knows job %llu: the command "
                "goes on untracked", away, (unsigned long long)l->job_id);
    } else {
        set_job(l, rt_json_get_object(rt_vl_reply_params(reply), "job"));
        CTL_ERR("reconnected after %.1f s; job %llu goes on", away, (unsigned long long)l->job_id);
        open_stream(l);
    }
    json_object_put(reply);
    return true;
}

/* ---- warnings: the job's idle GPUs, uploads ---- */

/* A GPU of the job idle but held, or given to it and unused: once each. */
static void watch_gpus(struct run_link *l)
{
    struct json_object *idle = l->job ? rt_json_get_array(l->job, "gpu_idle") : NULL;
    for (size_t i = 0; idle && i < json_object_array_length(idle); i++) {
        struct json_object *e = json_object_array_get_idx(idle, i);
        const char *kind = rt_json_get_string(e, "kind"), *uuid = rt_json_get_string(e, "uuid");
        char key[104], when[32];
        snprintf(key, sizeof(key), "%s:%s", kind ? kind : "", uuid ? uuid : "");
        bool said = false;
        for (size_t k = 0; k < l->n_warned_idle && !said; k++)
            said = strcmp(l->warned_idle[k], key) == 0;
        if (said || l->n_warned_idle == RT_ARRAY_SIZE(l->warned_idle))
            continue;
        memcpy(l->warned_idle[l->n_warned_idle++], key, sizeof(key));
        double since = 0;
        int64_t index = 0;
        rt_json_get_double(e, "since", &since);
        rt_json_get_i64(e, "index", &index);
        ctl_fmt_time(when, sizeof(when), since);
        if (kind && strcmp(kind, "unused") == 0)
            CTL_ERR("warn: GPU %lld (%s) was given to this job and none of its processes has used it since %s",
                    (long long)index, uuid ? uuid : "?", when + 11);
        else
            CTL_ERR("warn: GPU %lld (%s) is idle but held by this job since %s: its processes keep memory on it "
                    "and do no work there", (long long)index, uuid ? uuid : "?", when + 11);
    }
}

static void watch_upload(struct run_link *l)
{
    struct json_object *up = l->job ? rt_json_get_object(l->job, "upload") : NULL;
    if (!up)
        return;
    const char *state = rt_json_get_string(up, "state"), *last = rt_json_get_string(up, "last_error");
    char safe[1024], *err = last ? (rt_escape_into(safe, sizeof(safe), last), safe) : NULL;
    int64_t pending = 0;
    rt_json_get_i64(up, "batches_pending", &pending);
    if (state && strcmp(state, "starting") == 0 && err && !l->warned_register) {
        l->warned_register = true;
        CTL_ERR("warn: the run cannot be registered with Sentinel yet (%s); samples are kept and sent "
                "once it is", err);
    }
    if (pending >= PENDING_WARN && pending >= 2 * l->warned_pending) {
        l->warned_pending = pending;
        CTL_ERR("warn: uploads fall behind: %lld batches wait%s%s", (long long)pending,
                err ? "; last error: " : "", err ? err : "");
    }
}

static void watch_send(struct run_link *l)
{
    struct json_object *p = json_object_new_object();
    json_object_object_add(p, "id", rt_json_u64(l->job_id));
    l->watch_pending = rt_vl_client_send(&l->ctrl, M("GetJob"), p, 0) == 0;
    l->watch_at_ns = ms_from_now(WATCH_EVERY_MS);
}

/* The daemon closes a connection idle for limits.idle_timeout, as ctrl is
 * while the command runs: a new one at once, when the daemon answers. */
static bool reopen_ctrl(struct run_link *l)
{
    struct rt_vl_client c;
    if (ctl_connect_used(l->ctl, &c) < 0) {
        rt_vl_client_close(&c);
        return false;
    }
    rt_vl_client_close(&l->ctrl);
    l->ctrl = c;
    return true;
}

/* ctrl is readable: the answer to a watch, the end of an idle connection,
 * or the daemon went away. */
static void ctrl_input(struct run_link *l)
{
    struct json_object *reply = NULL;
    int e = rt_vl_client_recv(&l->ctrl, &reply, 0);
    if (e == -ETIMEDOUT || e == -EINTR)
        return;
    if (e == -ECONNRESET && !l->watch_pending && reopen_ctrl(l))
        return;
    if (e < 0 || !l->watch_pending) {
        json_object_put(reply);
        lost(l, e < 0 ? (e == -ECONNRESET ? "connection closed" : strerror(-e)) : "unexpected reply");
        return;
    }
    l->watch_pending = false;
    if (!rt_vl_reply_error(reply))
        set_job(l, rt_json_get_object(rt_vl_reply_params(reply), "job"));
    json_object_put(reply);
    watch_upload(l);
    watch_gpus(l);
}

static void stream_input(struct run_link *l, int timeout_ms)
{
    for (;;) {
        struct json_object *reply = NULL;
        int e = rt_vl_client_recv(&l->stream, &reply, timeout_ms);
        if (e == -ETIMEDOUT || e == -EINTR)
            return;
        if (e < 0) {
            l->streaming = false;
            rt_vl_client_close(&l->stream);
            lost(l, e == -ECONNRESET ? "connection closed" : strerror(-e));
            return;
        }
        bool more = print_reply(l, reply);
        json_object_put(reply);
        if (!more) {
            l->streaming = false;
            rt_vl_client_close(&l->stream);
            return;
        }
        timeout_ms = 0; /* take whatever else is buffered, without waiting */
    }
}

/* ---- the interface ---- */

int run_link_start(struct run_link *l, struct json_object *params)
{
    struct json_object *reply, *rp;
    int rc = ctl_call(&l->ctrl, M("StartJob"), params, &reply, &rp);
    if (rc)
        return rc;
    struct json_object *job = rt_json_get_object(rp, "job");
    int64_t id = 0;
    rt_json_get_i64(job, "id", &id);
    l->job_id = (uint64_t)id;
    set_job(l, job);
    struct json_object *given = rt_json_get_array(rp, "given_gpus");
    l->given_gpus = given ? json_object_get(given) : NULL;
    json_object_put(reply);
    /* Watched for upload trouble, and on a host with GPUs for idle ones. */
    l->watch = rt_json_get_object(l->job, "upload") != NULL || rt_json_get_array(l->job, "gpu_idle") != NULL;
    l->watch_at_ns = ms_from_now(WATCH_FIRST_MS);
    return 0;
}

void run_link_follow(struct run_link *l)
{
    open_stream(l);
}

void run_link_poll_fds(const struct run_link *l, struct pollfd pfd[2])
{
    pfd[0] = (struct pollfd){.fd = l->up && !l->gone ? l->ctrl.fd : -1, .events = POLLIN};
    pfd[1] = (struct pollfd){.fd = l->up && l->streaming ? l->stream.fd : -1, .events = POLLIN};
}

int run_link_timeout_ms(const struct run_link *l)
{
    uint64_t at;
    if (l->gone)
        return -1;
    if (!l->up)
        at = l->retry_at_ns;
    else if (l->watch && !l->watch_pending)
        at = l->watch_at_ns;
    else
        return -1;
    uint64_t now = rt_mono_ns();
    return at > now ? (int)((at - now) / 1000000) + 1 : 0;
}

void run_link_service(struct run_link *l, const struct pollfd pfd[2])
{
    if (l->gone)
        return;
    if (pfd[1].fd >= 0 && pfd[1].revents)
        stream_input(l, 0);
    if (l->up && pfd[0].fd >= 0 && pfd[0].revents)
        ctrl_input(l);
    uint64_t now = rt_mono_ns();
    if (!l->up && now >= l->retry_at_ns)
        reconnect(l);
    else if (l->up && l->watch && !l->watch_pending && now >= l->watch_at_ns)
        watch_send(l);
}

/* SIGINT or SIGTERM arrived: stop waiting for the daemon. */
static bool interrupted(int sfd)
{
    struct signalfd_siginfo fi;
    bool stop = false;
    while (read(sfd, &fi, sizeof(fi)) == sizeof(fi))
        stop |= fi.ssi_signo == SIGINT || fi.ssi_signo == SIGTERM;
    return stop;
}

int run_link_finish(struct run_link *l, const siginfo_t *si, int sfd, uint64_t max_rss_bytes, bool not_started)
{
    uint64_t deadline = ms_from_now(FINISH_WAIT_MS);
    if (!l->up && !l->gone)
        CTL_ERR("the command has ended; waiting up to %d s for the daemon to take its exit status",
                FINISH_WAIT_MS / 1000);
    while (!l->gone) {
        if (!l->up) {
            uint64_t now = rt_mono_ns();
            if (now >= deadline)
                break;
            if (now < l->retry_at_ns) {
                struct pollfd pfd = {.fd = sfd, .events = POLLIN};
                if (poll(&pfd, 1, (int)((l->retry_at_ns - now) / 1000000) + 1) > 0 && interrupted(sfd))
                    break;
                continue;
            }
            reconnect(l);
            continue;
        }
        if (l->watch_pending) { /* its answer first: replies come in order */
            struct json_object *r = NULL;
            int e = rt_vl_client_recv(&l->ctrl, &r, 30000);
            json_object_put(r);
            l->watch_pending = false;
            if (e < 0) {
                lost(l, strerror(-e));
                continue;
            }
        }
        struct json_object *p = json_object_new_object(), *reply = NULL;
        json_object_object_add(p, "id", rt_json_u64(l->job_id));
        if (si->si_code == CLD_EXITED)
            json_object_object_add(p, "exit_code", json_object_new_int64(si->si_status));
        else
            json_object_object_add(p, "signal", json_object_new_int64(si->si_status));
        if (max_rss_bytes)
            json_object_object_add(p, "max_rss_bytes", rt_json_u64(max_rss_bytes));
        if (not_started)
            json_object_object_add(p, "not_started", json_object_new_boolean(1));
        int e = rt_vl_client_call(&l->ctrl, M("FinishJob"), p, &reply, 30000);
        if (e < 0) {
            json_object_put(reply);
            lost(l, e == -ECONNRESET ? "connection closed" : strerror(-e));
            continue;
        }
        int rc = rt_vl_reply_error(reply) ? ctl_report_error(reply) : 0;
        if (!rc)
            set_job(l, rt_json_get_object(rt_vl_reply_params(reply), "job"));
        json_object_put(reply);
        return rc;
    }
    if (!l->gone)
        CTL_ERR("warn: the daemon did not come back: job %llu keeps no exit status (it will show as lost)",
                (unsigned long long)l->job_id);
    return RT_EXIT_UNREACHABLE;
}

void run_link_drain(struct run_link *l)
{
    uint64_t deadline = ms_from_now(DRAIN_WAIT_MS);
    while (l->want_samples && !l->stream_ended && !l->gone) {
        uint64_t now = rt_mono_ns();
        if (now >= deadline) {
            CTL_ERR("the daemon did not end the sample stream");
            return;
        }
        if (!l->up) {
            if (now < l->retry_at_ns)
                poll(NULL, 0, (int)((l->retry_at_ns - now) / 1000000) + 1);
            else
                reconnect(l);
            continue;
        }
        if (!l->streaming)
            open_stream(l);
        if (!l->streaming)
            return;
        stream_input(l, (int)((deadline - now) / 1000000) + 1);
    }
}

void run_link_close(struct run_link *l)
{
    rt_vl_client_close(&l->ctrl);
    rt_vl_client_close(&l->stream);
    json_object_put(l->job);
    l->job = NULL;
    json_object_put(l->given_gpus);
    l->given_gpus = NULL;
}
